#!/usr/bin/env python3
"""sched_switch_cost.py - BPF ns per run (bpf_stats) of the sched_switch programs of taskprobe
(tp_sched_switch), stackprobe (sp_offcpu) and autotrace (at_switch) for two builds side by side, A/B
alternated (the order flips every pair) so that the load of a shared machine falls on both alike.

Workload: BUILD_A/bench/task_bench pingpong ITER (two processes on CPU 0, two context switches per round
trip). Scopes: taskprobe and stackprobe with every process in scope (no filter: the worst case) and with
none (--pid of a process that does not switch: the common case of a host); autotrace is host-wide
(-P dstate,runq). Prints, per program, scope and build, the median and range over the pairs.

usage: bench/sched_switch_cost.py BUILD_A BUILD_B [PAIRS=5] [ITER=100000]   (root)
Wrap it in `flock /tmp/gg-bench.lock` on a shared machine."""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import bpf_run, bpf_stats  # noqa: E402
from harness import start_logged  # noqa: E402


def cases(build):
    """(label, program, argv) of each probe run."""
    p = os.path.join(build, "probes")
    idle = str(os.getpid())  # this script: it sleeps in wait() while the workload runs
    return [("taskprobe all in scope", "tp_sched_switch", [os.path.join(p, "taskprobe"), "-t", "600", "-P",
                                                            "base_metrics"]),
            ("taskprobe none in scope", "tp_sched_switch", [os.path.join(p, "taskprobe"), "-t", "600", "-P",
                                                             "base_metrics", "--pid", idle]),
            ("stackprobe all in scope", "sp_offcpu", [os.path.join(p, "stackprobe"), "-t", "600", "-P", "offcpu",
                                                      "--svg-period", "600", "--flame-dir", "{tmp}"]),
            ("stackprobe none in scope", "sp_offcpu", [os.path.join(p, "stackprobe"), "-t", "600", "-P", "offcpu",
                                                       "--svg-period", "600", "--flame-dir", "{tmp}", "--pid",
                                                       idle]),
            ("autotrace host-wide", "at_switch", [os.path.join(p, "autotrace"), "-t", "600", "-P", "dstate,runq",
                                                  "--flame-dir", "{tmp}"])]


def one(build, bench, iters):
    """label -> ns per run of one run of every case with build."""
    got = {}
    for label, prog, argv in cases(build):
        with tempfile.TemporaryDirectory(prefix="gg-swcost-") as tmp:
            p = start_logged([a.replace("{tmp}", tmp) for a in argv], os.path.join(tmp, "log"))
            try:
                ns0, n0 = bpf_run(p.pid, prog.__eq__)
                subprocess.run([bench, "pingpong", str(iters)], check=True, capture_output=True)
                ns1, n1 = bpf_run(p.pid, prog.__eq__)
            finally:
                p.terminate()
                p.wait(30)
        got[label] = (ns1 - ns0) / (n1 - n0) if n1 > n0 else float("nan")
    return got


def main():
    a, b = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    iters = int(sys.argv[4]) if len(sys.argv) > 4 else 100000
    bench = os.path.join(a, "bench", "task_bench")
    res = {a: [], b: []}
    with bpf_stats():
        for i in range(pairs):
            for build in ((a, b) if i % 2 == 0 else (b, a)):
                res[build].append(one(build, bench, iters))
    print("ns per run (bpf_stats), %d pairs of %d ping-pong round trips: median [min..max]" % (pairs, iters))
    print("| program, scope | %s | %s |" % (sys.argv[1], sys.argv[2]))
    print("|---|---|---|")
    for label, prog, _ in cases(a):
        cells = []
        for build in (a, b):
            v = [r[label] for r in res[build]]
            cells.append("%.0f [%.0f..%.0f]" % (statistics.median(v), min(v), max(v)))
        print("| %s %s | %s | %s |" % (prog, label.split(" ", 1)[1], cells[0], cells[1]))


if __name__ == "__main__":
    main()
