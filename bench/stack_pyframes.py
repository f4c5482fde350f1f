#!/usr/bin/env python3
"""stack_pyframes.py - what the Python frame walk costs per on-CPU sample: the BPF run time per run of
stackprobe's sp_oncpu0/1 (bpf_stats) while it samples Debian's python3.11 running
tests/integration/scripts/py_hot.py (walk: thread state, up to 48 frames) against the same for
tests/helpers/cpu_split (a C process: one map lookup, no walk), alternated.
    bench/stack_pyframes.py [PAIRS] [SECONDS]   (default 5 pairs, 3 s; GG_BUILD selects the build)
Run it alone: flock /tmp/gg-bench.lock python3 bench/stack_pyframes.py"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD, bpf_stats, go, start_stackprobe, stop_run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CPU_SPLIT = os.path.join(BUILD, "tests", "cpu_split")
PY_HOT = os.path.join(ROOT, "tests", "integration", "scripts", "py_hot.py")


def one(kind, seconds, tmp):
    if kind == "python":
        w = subprocess.Popen(["/usr/bin/python3.11", PY_HOT, str(seconds)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        w.stdout.readline()
    else:
        w = subprocess.Popen([CPU_SPLIT, "-w", "-c", str(seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        w.stdout.readline()
    sp = None
    try:
        sp = start_stackprobe(tmp, w.pid, ["-P", "oncpu"])
        time.sleep(0.5)  # the scan that registers the interpreter
        # the on-CPU programs of this stackprobe only (other stackprobes may run at the same time)
        _, ns, n = go(w, sp, ("sp_oncpu0", "sp_oncpu1"))
    finally:
        stop_run(w, sp)
    return ns / n if n else 0, n


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3
    res = {"c": [], "python": []}
    with bpf_stats(), tempfile.TemporaryDirectory() as tmp:
        for _ in range(pairs):
            for kind in ("c", "python"):
                res[kind].append(one(kind, seconds, tmp))
    for kind, v in res.items():
        ns = [x[0] for x in v]
        print("%-6s BPF ns per on-CPU sample: median %.0f (runs %s; samples per run %s)" %
              (kind, statistics.median(ns), " ".join("%.0f" % x for x in ns), " ".join(str(x[1]) for x in v)))


if __name__ == "__main__":
    main()
