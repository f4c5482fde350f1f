#!/usr/bin/env python3
"""stack_overhead.py - on-CPU profiling overhead at 100 Hz on a CPU-bound workload: bench/stack_work (one
thread pinned to each CPU, fixed time, counts work units) with no profiler, with `stackprobe -P oncpu`
(every process, 10 ms period) and with `perf record -F 100 -g -a`.

Many short rounds in the order none, stackprobe, none, perf, none, stackprobe, ... so that every profiled
run has a "none" run on each side; each profiled run is compared with the mean of its two neighbours,
which cancels the slow drift of other load on a shared machine. Two rates per run:
  - work units per wall second: everything the profiler takes away (its process competes for the CPUs,
    its sampling interrupts run on them);
  - work units per CPU second of the workload: the part paid inside the workload's own time (the
    sampling interrupt and the BPF program run on the interrupted thread and are charged to it).
Printed: the median (and quartiles) of the ratios as slowdowns, and the profiler's direct cost: its
process's CPU time (all its threads, /proc/<pid>/task/*/schedstat) and, for stackprobe, the BPF program's run
time (kernel.bpf_stats_enabled, turned on for the run), both as a share of the machine (window x CPUs).

    bench/stack_overhead.py [PAIRS] [SECONDS]    (default 12 pairs of each profiler, 2 s windows;
                                                  GG_BUILD selects the build, default build)
Run it alone: flock /tmp/gg-bench.lock python3 bench/stack_overhead.py"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD, STACKPROBE, bpf_run, bpf_stats, start_logged

WORK = os.path.join(BUILD, "bench", "stack_work")
NCPU = os.cpu_count()
TICK = os.sysconf("SC_CLK_TCK")
SP_WARMUP_S = 3.0  # the first drains read every process's ELF files (cold symbol cache)
PERF_WARMUP_S = 1.0


def work(seconds):
    units, wall, cpu = subprocess.run([WORK, str(seconds)], capture_output=True, text=True,
                                      check=True).stdout.split()
    return {"units": int(units), "wall": float(wall), "cpu": float(cpu)}


def proc_cpu_s(pid):
    """CPU time of every thread of pid: /proc/<pid>/task/*/schedstat (nanoseconds; utime + stime in
    /proc/<pid>/stat count whole clock ticks, too coarse for a 2 s window), else /proc/<pid>/stat."""
    total, found = 0, False
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    total += int(f.read().split()[0])
                    found = True
            except OSError:
                pass
    except OSError:
        pass
    if found:
        return total / 1e9
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def bpf_prog(prefix, pid):
    """(run time ns, runs) summed over the BPF programs of process pid whose name starts with prefix
    (stackprobe's on-CPU programs are sp_oncpu0 and sp_oncpu1, one per shot parity; other stackprobes
    running on a shared machine are not counted)."""
    return bpf_run(pid, lambda name: name.startswith(prefix))


def run_stackprobe(tmp, seconds):
    p = start_logged([STACKPROBE, "-P", "oncpu", "--perf-sample-period", "10", "--svg-period", "600",
                      "--flame-dir", os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t", "600"],
                     os.path.join(tmp, "sp.err"))
    try:
        time.sleep(SP_WARMUP_S)
        c0, (b0, n0) = proc_cpu_s(p.pid), bpf_prog("sp_oncpu", p.pid)
        r = work(seconds)
        c1, (b1, n1) = proc_cpu_s(p.pid), bpf_prog("sp_oncpu", p.pid)
        cap = r["wall"] * NCPU
        r.update(own=(c1 - c0) / cap, bpf=(b1 - b0) / 1e9 / cap, runs=n1 - n0,
                 ns_per_run=(b1 - b0) / (n1 - n0) if n1 > n0 else 0)
        return r
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def run_perf(tmp, seconds):
    p = subprocess.Popen(["perf", "record", "-F", "100", "-g", "-a", "-o", os.path.join(tmp, "perf.data")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(PERF_WARMUP_S)
    try:
        c0 = proc_cpu_s(p.pid)
        r = work(seconds)
        r.update(own=(proc_cpu_s(p.pid) - c0) / (r["wall"] * NCPU))
        return r
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(120)


def quartiles(v):
    if len(v) < 4:
        return min(v), max(v)
    q = statistics.quantiles(v, n=4)
    return q[0], q[2]


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    if seconds > 60:  # the old interface passed an iteration count here
        seconds = 2.0
    seq = []  # (kind, result)
    load0 = os.getloadavg()
    with bpf_stats(), tempfile.TemporaryDirectory() as tmp:
        work(0.5)  # warm up
        seq.append(("none", work(seconds)))
        for i in range(2 * pairs):
            if i % 2 == 0:
                seq.append(("stackprobe", run_stackprobe(tmp, seconds)))
            else:
                seq.append(("perf", run_perf(tmp, seconds)))
            seq.append(("none", work(seconds)))
    load1 = os.getloadavg()

    print("%d pairs, %.1f s windows, %d CPUs, load average %.2f at the start, %.2f at the end" %
          (pairs, seconds, NCPU, load0[0], load1[0]))
    nones = [r for k, r in seq if k == "none"]
    print("none: %.0f units/wall-s (median), %.0f units/CPU-s, CPU share of the window %.1f %%" % (
        statistics.median(r["units"] / r["wall"] for r in nones),
        statistics.median(r["units"] / r["cpu"] for r in nones),
        100 * statistics.median(r["cpu"] / (r["wall"] * NCPU) for r in nones)))
    print("%-11s %-32s %-32s %s" % ("", "slowdown per wall second", "slowdown per CPU second", "direct cost"))
    for kind in ("stackprobe", "perf"):
        wall_sd, cpu_sd, own, bpf, nsr, runs = [], [], [], [], [], []
        for i, (k, r) in enumerate(seq):
            if k != kind:
                continue
            a, b = seq[i - 1][1], seq[i + 1][1]
            ref_w = (a["units"] / a["wall"] + b["units"] / b["wall"]) / 2
            ref_c = (a["units"] / a["cpu"] + b["units"] / b["cpu"]) / 2
            wall_sd.append(100 * (1 - (r["units"] / r["wall"]) / ref_w))
            cpu_sd.append(100 * (1 - (r["units"] / r["cpu"]) / ref_c))
            own.append(100 * r["own"])
            if "bpf" in r:
                bpf.append(100 * r["bpf"])
                runs.append(r["runs"] / r["wall"])
                if r["ns_per_run"]:
                    nsr.append(r["ns_per_run"])
        qw, qc = quartiles(wall_sd), quartiles(cpu_sd)
        cost = "process %.3f %%" % statistics.median(own)
        if bpf:
            cost += " + BPF %.3f %% (%.0f runs/s, %.1f us/run)" % (
                statistics.median(bpf), statistics.median(runs), statistics.median(nsr) / 1000)
        print("%-11s %+6.2f %% [%+.2f, %+.2f]%-10s %+6.2f %% [%+.2f, %+.2f]%-10s %s" % (
            kind, statistics.median(wall_sd), qw[0], qw[1], "", statistics.median(cpu_sd), qc[0], qc[1], "", cost))
        print("%-11s wall: %s" % ("", " ".join("%+.1f" % x for x in wall_sd)))
        print("%-11s cpu:  %s" % ("", " ".join("%+.1f" % x for x in cpu_sd)))


if __name__ == "__main__":
    main()
