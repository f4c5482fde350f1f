#!/usr/bin/env python3
"""sli_overhead.py - sliprobe's cost on context switches: a pipe ping-pong between two processes pinned
to one CPU (bench/task_bench.c pingpong: every round trip is two context switches and two wakeups),
agent off vs on (default sub-probes), in PAIRS pairs run back to back in a random order, in a cgroup of
its own (a container: the per-cgroup path) and in the root cgroup (the node only). Prints the median
and spread of CPU ns per round trip and of the per-pair on/off ratio; then the BPF run time per event
(--bpf-stats) for sli_switch and sli_wakeup, in both places.

usage: bench/sli_overhead.py [PAIRS] [BUILD] [ITER]   (root; PAIRS 15, BUILD build, ITER 100000)
Wrap it in `flock /tmp/gg-bench.lock` on a shared machine."""
import os
import random
import re
import statistics
import subprocess
import sys
import time

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
BUILD = sys.argv[2] if len(sys.argv) > 2 else "build"
ITER = sys.argv[3] if len(sys.argv) > 3 else "100000"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import cgroup2_root, rmdir_retry, start_logged  # noqa: E402

PROBE = os.path.join(ROOT, BUILD, "probes", "sliprobe")
BENCH = os.path.join(ROOT, BUILD, "bench", "task_bench")




LOG = "/tmp/sli_overhead.%d.log" % os.getpid()


def start_probe(extra=()):
    return start_logged([PROBE, "-t", "1"] + list(extra), LOG, timeout=10)


def stop_probe(p):
    p.terminate()
    p.wait()
    with open(LOG) as f:
        text = f.read()
    os.unlink(LOG)
    return text


def pingpong(cg):
    def join():
        if cg:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
    out = subprocess.run([BENCH, "pingpong", ITER], capture_output=True, text=True, preexec_fn=join,
                         check=True).stdout.split()
    return float(out[2]), float(out[3])  # CPU ns, wall ns per round trip


def spread(v):
    return "median %.3f, min %.3f, max %.3f" % (statistics.median(v), min(v), max(v))


def pairs(cg, where):
    off, on, ratio, wratio = [], [], [], []
    for _ in range(PAIRS):
        res = {}
        for mode in random.sample(["off", "on"], 2):
            if mode == "on":
                p = start_probe()
                res[mode] = pingpong(cg)
                stop_probe(p)
            else:
                res[mode] = pingpong(cg)
        off.append(res["off"][0])
        on.append(res["on"][0])
        ratio.append(res["on"][0] / res["off"][0])
        wratio.append(res["on"][1] / res["off"][1])
    print("%s: CPU ns per round trip off: %s" % (where, spread(off)))
    print("%s: CPU ns per round trip on:  %s" % (where, spread(on)))
    print("%s: on/off CPU per pair: %s; quartiles %s" % (
        where, spread(ratio), ", ".join("%.3f" % q for q in statistics.quantiles(ratio, n=4))))
    print("%s: on/off wall per pair: %s" % (where, spread(wratio)))


def bpf_cost(cg, where):
    p = start_probe(["--bpf-stats"])
    time.sleep(1.5)
    for _ in range(3):
        pingpong(cg)
    time.sleep(1.2)
    text = stop_probe(p)
    best = {}
    for line in text.splitlines():
        if "bpf stats" not in line:
            continue
        for name, runs, ns in re.findall(r"(sli_\w+)=(\d+)/(\d+)ns", line):
            if int(runs) > best.get(name, (0, 0))[0]:
                best[name] = (int(runs), int(ns))
    print("%s: bpf_stats, busiest second: %s" % (where, ", ".join(
        "%s %d x %d ns" % (n, best[n][0], best[n][1]) for n in ("sli_switch", "sli_wakeup") if n in best)))


def main():
    cg = os.path.join(cgroup2_root() or sys.exit("no cgroup2 mount"), "gg-sli-bench-%d" % os.getpid(),
                      "docker-%064x.scope" % random.getrandbits(256))
    os.makedirs(cg)
    try:
        for c, where in ((cg, "container cgroup"), (None, "root cgroup")):
            pairs(c, where)
            bpf_cost(c, where)
    finally:
        for d in (cg, os.path.dirname(cg)):
            rmdir_retry(d)


if __name__ == "__main__":
    main()
