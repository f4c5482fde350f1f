#!/usr/bin/env python3
"""tprof_overhead.py - tprofiling's cost on syscall-heavy workloads (bench/tprof_bench.c), in scope and
outside it, modes interleaved round by round on a shared machine.

Modes: off (no probe); out (every sub-probe on, the workload outside the scope: --pid of an idle
process); in (the workload in scope, default min_exec_dur 1 us: these sub-microsecond calls are timed
and dropped in the kernel as short); in0 (in scope, min_exec_dur 0: every call is an event through the
ring buffer and the aggregation). Workloads: read of 1 byte from /dev/zero (a watched syscall), futex
wake with no waiter (watched), getppid (not watched by any sub-probe). Reported per workload and mode:
the median over ROUNDS of the workload's CPU ns per call (with min..max), and the probe's own CPU time
per call of the workload (user + system, from /proc).

usage: bench/tprof_overhead.py [ROUNDS] [BUILD] [N]   (root; defaults 7, build, 1000000)"""
import os
import statistics
import subprocess
import sys
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
BUILD = sys.argv[2] if len(sys.argv) > 2 else "build"
N = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROBE = os.path.join(ROOT, BUILD, "probes", "tprofiling")
WORK = os.path.join(ROOT, BUILD, "bench", "tprof_bench")
LOG = "/tmp/tprof_overhead.%d.log" % os.getpid()
OUTDIR = "/tmp/tprof_overhead.%d.out" % os.getpid()
SUBPROBES = "oncpu,syscall_file,syscall_net,syscall_lock,syscall_sched,pthread_sync"
MODES = ("off", "out", "in", "in0")
KINDS = ("read", "futex", "getppid")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_probe(pid, min_exec):
    log = open(LOG, "w")
    p = subprocess.Popen([PROBE, "-t", "600", "--pid", str(pid), "-P", SUBPROBES, "--channel", "local",
                          "--output-dir", OUTDIR, "--min-exec-dur", str(min_exec)],
                         stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(LOG) as f:
            if "started:" in f.read():
                time.sleep(0.5)  # uprobes follow at the first tick
                return p
        time.sleep(0.05)
    p.kill()
    raise SystemExit("tprofiling did not start: " + open(LOG).read()[-2000:])


def run(kind, mode):
    idle = subprocess.Popen(["sleep", "600"])
    w = subprocess.Popen([WORK, kind, str(N)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline().split("=")[1])
    probe = None
    try:
        if mode != "off":
            probe = start_probe(idle.pid if mode == "out" else pid, 0 if mode == "in0" else 1)
        p0 = cpu_s(probe.pid) if probe else 0.0
        w.stdin.write("go\n")
        w.stdin.flush()
        line = w.stdout.readline()
        vals = dict(kv.split("=") for kv in line.split())
        time.sleep(0.3)  # the probe drains what the run left in the ring buffer
        probe_ns = (cpu_s(probe.pid) - p0) * 1e9 / N if probe else 0.0
        return float(vals["cpu_ns_per_call"]), probe_ns
    finally:
        w.stdin.close()
        w.wait()
        idle.kill()
        idle.wait()
        if probe:
            probe.terminate()
            probe.wait()


def main():
    res = {(k, m): [] for k in KINDS for m in MODES}
    for r in range(ROUNDS):
        for k in KINDS:
            for m in (MODES if r % 2 == 0 else tuple(reversed(MODES))):
                res[(k, m)].append(run(k, m))
        print("round %d/%d done" % (r + 1, ROUNDS), file=sys.stderr, flush=True)
    print("| workload | mode | workload CPU ns/call: median (min..max) | vs off | probe CPU ns per call |")
    print("|---|---|---|---|---|")
    for k in KINDS:
        base = statistics.median(v[0] for v in res[(k, "off")])
        for m in MODES:
            w = [v[0] for v in res[(k, m)]]
            pr = statistics.median(v[1] for v in res[(k, m)])
            med = statistics.median(w)
            print("| %s | %s | %.1f (%.1f..%.1f) | %+.1f %% | %s |" % (
                k, m, med, min(w), max(w), (med / base - 1) * 100, "-" if m == "off" else "%.1f" % pr))
    subprocess.run(["rm", "-rf", OUTDIR, LOG])


if __name__ == "__main__":
    main()
