#!/usr/bin/env python3
"""autotrace_idle.py - what autotrace costs while nothing fires: the probe's own CPU (all its threads: the
19 Hz pacers, the drain and symbolization of the ring's seconds, the /proc reads of the triggers) per
second, as a share of one CPU; the BPF programs' run time (the on-CPU shots, and with --sched the
sched_switch/sched_wakeup programs of the dstate and runq triggers); and the slowdown of a CPU-bound
workload (bench/stack_work on every CPU) with the probe running, against runs without it.

Thresholds are set out of reach, so the probe stays in its always-on state (ring sampling at 53 ms,
every cheap trigger evaluated each second). Rounds alternate none, autotrace, none, ... and each
autotrace run is compared with the mean of its two neighbours (slow drift of other load on a shared
machine cancels); the probe's CPU is also measured over long idle windows without the workload.

    bench/autotrace_idle.py [PAIRS] [SECONDS] [--sched] [--idle-only]   (default 10 pairs, 3 s windows;
                                                        --idle-only: no workload, nothing for other benches to feel)
    bench/autotrace_idle.py [PAIRS] [SECONDS] --ab-l7   the probe alone, alternating without and with the
        l7_p99 and l7_errors triggers (thresholds out of reach) reading an l7probe aggregates file of 20
        serving processes (written by this script, which stands for l7probe: its pid is the file's writer)
Run it alone: flock /tmp/gg-bench.lock python3 bench/autotrace_idle.py"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from stack_overhead import BUILD, NCPU, bpf_prog, proc_cpu_s, quartiles, work

AUTOTRACE = os.path.join(BUILD, "probes", "autotrace")
WARMUP_S = 3.0  # the first drains read the ELF files of every process on a CPU (cold symbol cache)
OUT_OF_REACH = ["--host-cpu-thr", "100", "--host-cpu-hold", "3600", "--proc-cpu-thr", "100000",
                "--tcp-retrans-thr", "100000000", "--rss-thr", "100000000", "--dstate-thr", "100000",
                "--runq-thr", "100000000"]


L7_OUT_OF_REACH = ["--l7-p99-thr", "3600000", "--l7-errors-thr", "100", "--l7-min-requests", "1000000"]


def write_l7_file(run_dir):
    """An l7_procs file as l7probe writes it (probes/lib/l7share.h): 20 live processes serving requests,
    ~60 latency buckets each, this script as its writer."""
    with open("/proc/self/stat") as f:
        start_ticks = f.read().rsplit(")", 1)[1].split()[19]
    pids = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())[:20]
    lines = ["gala-gopher-l7-procs 1 %d %s 0" % (os.getpid(), start_ticks)]
    for i, pid in enumerate(pids):
        lines.append("%d %d 2 100000 1000 5000000000 " % (pid, i + 1) +
                     " ".join("%d:%d" % (b, 1000 + b) for b in range(200, 260)))
    with open(os.path.join(run_dir, "l7_procs"), "w") as f:
        f.write("\n".join(lines) + "\n")


def start(tmp, sched, l7=False):
    subs = "host_cpu,proc_cpu,tcp_retrans,rss" + (",dstate,runq" if sched else "") + (",l7_p99,l7_errors" if l7 else "")
    err = open(os.path.join(tmp, "at.err"), "w")
    env = dict(os.environ, GALA_GOPHER_RUN_DIR=tmp)
    p = subprocess.Popen([AUTOTRACE, "-t", "600", "-P", subs, "--flame-dir", os.path.join(tmp, "f")] + OUT_OF_REACH +
                         (L7_OUT_OF_REACH if l7 else []), stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.time() + 20
    while "started:" not in open(err.name).read():
        if p.poll() is not None or time.time() > deadline:
            raise SystemExit("autotrace did not start: " + open(err.name).read())
        time.sleep(0.05)
    time.sleep(WARMUP_S)
    return p


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(30)


def bpf_all(pid):
    t, n = 0, 0
    for prefix in ("sp_oncpu", "at_"):
        a, b = bpf_prog(prefix, pid)
        t += a
        n += b
    return t, n


def ab_l7(pairs, seconds):
    """Alternating windows of the probe alone, without and with the l7 triggers."""
    tmp = tempfile.mkdtemp(prefix="gg-bench-at-")
    write_l7_file(tmp)
    got = {False: [], True: []}
    for i in range(pairs):
        for l7 in ((False, True) if i % 2 == 0 else (True, False)):
            p = start(tmp, False, l7)
            try:
                c0, t0 = proc_cpu_s(p.pid), time.time()
                time.sleep(seconds * 2)
                got[l7].append((proc_cpu_s(p.pid) - c0) / (time.time() - t0))
            finally:
                stop(p)
            if l7 and "reading l7probe's aggregates" not in open(os.path.join(tmp, "at.err")).read():
                raise SystemExit("the l7 triggers did not read the file: " + open(os.path.join(tmp, "at.err")).read())
    shutil.rmtree(tmp, ignore_errors=True)
    diff = [b - a for a, b in zip(got[False], got[True])]
    for name, v in (("default triggers", got[False]), ("default + l7_p99, l7_errors", got[True]),
                    ("difference (with - without, per pair)", diff)):
        lo, hi = quartiles(v)
        print("  %-40s %.3f %% of one CPU (quartiles %.3f .. %.3f, %d windows of %.0f s)"
              % (name, 100 * statistics.median(v), 100 * lo, 100 * hi, len(v), seconds * 2))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--ab-l7" in sys.argv:
        ab_l7(int(args[0]) if args else 10, float(args[1]) if len(args) > 1 else 5.0)
        return
    sched = "--sched" in sys.argv
    pairs = int(args[0]) if args else 10
    seconds = float(args[1]) if len(args) > 1 else 3.0
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    tmp = tempfile.mkdtemp(prefix="gg-bench-at-")
    idle, idle_bpf, slow, slow_cpu, own = [], [], [], [], []
    try:
        # the probe alone: its CPU per second of wall time, as a share of one CPU
        p = start(tmp, sched)
        try:
            for _ in range(pairs):
                c0, (b0, _n0), t0 = proc_cpu_s(p.pid), bpf_all(p.pid), time.time()
                time.sleep(seconds * 2)
                c1, (b1, _n1), t1 = proc_cpu_s(p.pid), bpf_all(p.pid), time.time()
                idle.append((c1 - c0) / (t1 - t0))
                idle_bpf.append((b1 - b0) / 1e9 / (t1 - t0))
        finally:
            stop(p)
        # side by side with a CPU-bound workload
        prev = work(seconds) if "--idle-only" not in sys.argv else None
        for _ in range(pairs if prev else 0):
            p = start(tmp, sched)
            try:
                c0 = proc_cpu_s(p.pid)
                r = work(seconds)
                own.append((proc_cpu_s(p.pid) - c0) / r["wall"])
            finally:
                stop(p)
            nxt = work(seconds)
            base_wall = (prev["units"] / prev["wall"] + nxt["units"] / nxt["wall"]) / 2
            base_cpu = (prev["units"] / prev["cpu"] + nxt["units"] / nxt["cpu"]) / 2
            slow.append(1 - (r["units"] / r["wall"]) / base_wall)
            slow_cpu.append(1 - (r["units"] / r["cpu"]) / base_cpu)
            prev = nxt
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_was)

    def pct(v):
        lo, hi = quartiles(v)
        return "%.3f %% (quartiles %.3f .. %.3f, %d runs)" % (100 * statistics.median(v), 100 * lo, 100 * hi, len(v))

    print("autotrace idle (%s), %d CPUs, windows of %.0f s:" % ("with dstate+runq" if sched else "default triggers",
                                                                NCPU, seconds * 2))
    print("  probe process CPU, share of one CPU:          " + pct(idle))
    print("  BPF programs' run time, share of one CPU:     " + pct(idle_bpf))
    if not own:
        return
    print("  probe CPU while the workload runs (one CPU):  " + pct(own))
    print("  workload slowdown, units per wall second:     " + pct(slow))
    print("  workload slowdown, units per CPU second:      " + pct(slow_cpu))


if __name__ == "__main__":
    main()
