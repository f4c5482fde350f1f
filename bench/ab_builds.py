#!/usr/bin/env python3
"""ab_builds.py - the IPC, /metrics and REST figures of two builds side by side, A/B alternated (the
order flips every pair) so that the load of a shared machine falls on both alike.

usage: bench/ab_builds.py BUILD_A BUILD_B [PAIRS=6]
Per pair and build: bench/ipc_bench.sh 8 2000000 (transport alone), bench/supervisor_ipc.py 8 2000000
(through the supervisor, every record validated), BUILD/bench/metrics_render -s 100000 -r 20 (the
/metrics renderer) and bench/rest_bench.py 200 2 (PUT -> confirmed, GET/s). Prints the median and the
range of every figure for each build.
"""
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

FIGURES = [
    # (name, command(build), regex, unit)
    ("ipc transport, M records/s", lambda b: ["sh", os.path.join(HERE, "ipc_bench.sh"), "8", "2000000"],
     r"= (\d+) rec/s", 1e-6),
    ("ipc via supervisor, M records/s", lambda b: [sys.executable, os.path.join(HERE, "supervisor_ipc.py"), "8",
                                                   "2000000"], r"rate=(\d+) records/s", 1e-6),
    ("supervisor CPU for 16 M records, s", None, r"supervisor cpu=([\d.]+)s", 1),
    ("/metrics render 100k series, ms (median of 20)",
     lambda b: [os.path.join(b, "bench", "metrics_render"), "-s", "100000", "-r", "20"], r"median ([\d.]+) ms", 1),
    ("REST PUT->confirmed median, ms", lambda b: [sys.executable, os.path.join(HERE, "rest_bench.py"), "200", "2"],
     r"PUT -> confirmed.*median ([\d.]+) ms", 1),
    ("REST PUT->confirmed p99, ms", None, r"PUT -> confirmed.*p99 ([\d.]+) ms", 1),
    ("REST GET /baseinfo 1 conn, req/s", None, r"GET /baseinfo: 1 connection.* (\d+) req/s", 1),
    ("REST GET /baseinfo 4 conn, req/s", None, r"GET /baseinfo: 4 connection.* (\d+) req/s", 1),
    ("REST GET /probes 1 conn, req/s", None, r"GET /probes: 1 connection.* (\d+) req/s", 1),
]


def run(cmd, build):
    env = dict(os.environ, GG_BUILD=build, BUILD=build)
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return r.stdout + r.stderr


def one(build):
    got = {}
    out = ""
    for name, cmd, rx, scale in FIGURES:
        if cmd:
            out = run(cmd(build), build)
        m = re.search(rx, out)
        if m:
            got[name] = float(m.group(1)) * scale
    return got


def main():
    a, b = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    res = {a: [], b: []}
    for i in range(pairs):
        for build in ((a, b) if i % 2 == 0 else (b, a)):
            res[build].append(one(build))
            print("pair %d %s: %s" % (i + 1, build, res[build][-1]), flush=True)
    print("\n| figure | A median (min-max) | B median (min-max) | B/A |\n|---|---|---|---|")
    for name, _, _, _ in FIGURES:
        va = [r[name] for r in res[a] if name in r]
        vb = [r[name] for r in res[b] if name in r]
        if not va or not vb:
            continue
        ma, mb = statistics.median(va), statistics.median(vb)
        print("| %s | %.3g (%.3g-%.3g) | %.3g (%.3g-%.3g) | %.2f |" % (name, ma, min(va), max(va), mb, min(vb),
                                                                       max(vb), mb / ma if ma else 0))
    print("\nA = %s\nB = %s, %d pairs" % (a, b, pairs))


if __name__ == "__main__":
    main()
