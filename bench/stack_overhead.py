#!/usr/bin/env python3
"""stack_overhead.py - on-CPU profiling overhead at 100 Hz on a CPU-bound workload (bench/stack_work on
every CPU): wall time with no profiler, with stackprobe -P oncpu (every process, 10 ms period), and with
`perf record -F 100 -g -a`, interleaved over ROUNDS rounds; prints min/median and slowdowns. On a busy
machine wall times are noisy, so it also prints what each profiler costs directly: the profiler
process's CPU time and, for stackprobe, the BPF program's own run time (kernel.bpf_stats_enabled),
as a share of the CPU time available (elapsed x CPUs).
    bench/stack_overhead.py [ROUNDS] [ITERATIONS]     (GG_BUILD selects the build, default build)"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.join(ROOT, os.environ.get("GG_BUILD", "build"))
WORK = os.path.join(BUILD, "bench", "stack_work")
STACKPROBE = os.path.join(BUILD, "probes", "stackprobe")


NCPU = os.cpu_count()
TICK = os.sysconf("SC_CLK_TCK")
COST = {"stackprobe": [], "stackprobe_bpf": [], "perf": []}


CPU = {"none": [], "stackprobe": [], "perf": []}
BPF_NS_PER_RUN = []


def run_work(iters, kind=None):
    wall, cpu = (float(x) for x in subprocess.run([WORK, str(iters)], capture_output=True, text=True,
                                                   check=True).stdout.split())
    if kind:
        CPU[kind].append(cpu)
    return wall


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def bpf_prog_ns(name, what="run_time_ns"):
    import json
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    for p in json.loads(out or "[]"):
        if p.get("name") == name:
            return p.get(what, 0)
    return 0


def with_stackprobe(tmp, iters):
    err = open(os.path.join(tmp, "sp.err"), "w")
    p = subprocess.Popen([STACKPROBE, "-P", "oncpu", "--perf-sample-period", "10", "--svg-period", "600",
                          "--flame-dir", os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t", "600"],
                         stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 20
    while "started:" not in open(err.name).read():
        if p.poll() is not None or time.time() > deadline:
            raise SystemExit("stackprobe did not start: " + open(err.name).read())
        time.sleep(0.05)
    try:
        time.sleep(3)  # steady state: the first drains read every process's ELF files (cold cache)
        c0, b0, n0, t0 = cpu_s(p.pid), bpf_prog_ns("sp_oncpu"), bpf_prog_ns("sp_oncpu", "run_cnt"), time.monotonic()
        w = run_work(iters, "stackprobe")
        el = time.monotonic() - t0
        b1, n1 = bpf_prog_ns("sp_oncpu"), bpf_prog_ns("sp_oncpu", "run_cnt")
        COST["stackprobe"].append((cpu_s(p.pid) - c0) / (el * NCPU))
        COST["stackprobe_bpf"].append((b1 - b0) / 1e9 / (el * NCPU))
        if n1 > n0:
            BPF_NS_PER_RUN.append((b1 - b0) / (n1 - n0))
        return w
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def with_perf(tmp, iters):
    p = subprocess.Popen(["perf", "record", "-F", "100", "-g", "-a", "-o", os.path.join(tmp, "perf.data")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        c0, t0 = cpu_s(p.pid), time.monotonic()
        w = run_work(iters, "perf")
        COST["perf"].append((cpu_s(p.pid) - c0) / ((time.monotonic() - t0) * NCPU))
        return w
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(60)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 400000000
    res = {"none": [], "stackprobe": [], "perf": []}
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    with tempfile.TemporaryDirectory() as tmp:
        run_work(iters // 10)  # warm up
        for _ in range(rounds):
            res["none"].append(run_work(iters, "none"))
            res["stackprobe"].append(with_stackprobe(tmp, iters))
            res["perf"].append(with_perf(tmp, iters))
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write(stats_was)
    base, base_min = statistics.median(res["none"]), min(res["none"])
    for k, v in res.items():
        m = statistics.median(v)
        print("%-10s min %.3f s (%+.2f %%)  median %.3f s (%+.2f %%)  runs: %s" % (
            k, min(v), 100 * (min(v) / base_min - 1), m, 100 * (m / base - 1), " ".join("%.3f" % x for x in v)))
    cbase = statistics.median(CPU["none"])
    for k, v in CPU.items():
        print("cpu time   %-10s median %.3f s (%+.2f %%)" % (k, statistics.median(v), 100 * (statistics.median(v) / cbase - 1)))
    if BPF_NS_PER_RUN:
        print("sp_oncpu BPF program: median %.0f ns per sample" % statistics.median(BPF_NS_PER_RUN))
    for k, v in COST.items():
        print("direct cost %-15s median %.3f %% of the CPUs" % (k, 100 * statistics.median(v)))


if __name__ == "__main__":
    main()
