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
Run it alone: flock /tmp/gg-bench.lock python3 bench/autotrace_idle.py"""
import os
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


def start(tmp, sched):
    subs = "host_cpu,proc_cpu,tcp_retrans,rss" + (",dstate,runq" if sched else "")
    err = open(os.path.join(tmp, "at.err"), "w")
    p = subprocess.Popen([AUTOTRACE, "-t", "600", "-P", subs, "--flame-dir", os.path.join(tmp, "f")] + OUT_OF_REACH,
                         stdout=subprocess.DEVNULL, stderr=err)
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


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
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
