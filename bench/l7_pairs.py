#!/usr/bin/env python3
"""l7_pairs.py - l7probe's kernel-side cost per send/receive pair, A/B between builds: build/bench/l7_pairs
(one process, a loopback TCP connection, N times writev(9-byte header + BODY bytes) then read; pinned to
CPU 1) with no probe, then with each build's l7probe following it (-p http), in turn, ROUNDS times; the
process's CPU time per pair (ns) as median (min, max) per build, and the added time against the mean of
the two no-probe runs around. No load generator or server in the way: the figure is the capture's cost
per send event + receive event (tracepoint dispatch, programs, copies, ring).

Usage: bench/l7_pairs.py ROUNDS N BODY BUILD... (e.g. 9 200000 627 /tmp/base/build build; run as root)"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l7_overhead import PIN_CLIENT, Probe, ROOT, spread  # noqa: E402


def one(n, body, build, tmp):
    """CPU ns per pair of one l7_pairs run, with build's l7probe on it (build None: no probe)."""
    p = subprocess.Popen(PIN_CLIENT + [os.path.join(ROOT, "build", "bench", "l7_pairs"), str(n), str(body)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    probe = None
    try:
        if build:
            probe = Probe(["-t", "5", "-p", "http", "--pid", str(pid)], os.path.join(tmp, "probe.log"),
                          os.path.join(build, "probes", "l7probe"))
            time.sleep(0.5)
        p.stdin.write("go\n")
        p.stdin.flush()
        ns = float(p.stdout.readline())
        p.wait()
    finally:
        if probe:
            probe.stop()
    return ns


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    rounds, n, body, builds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    tmp = tempfile.mkdtemp(prefix="gg-bench-l7pairs-")
    added = {b: [] for b in builds}
    raw = {b: [] for b in builds}
    offs = []
    off = one(n, body, None, tmp)
    offs.append(off)
    for r in range(rounds):
        for b in builds:
            on = one(n, body, b, tmp)
            off2 = one(n, body, None, tmp)
            offs.append(off2)
            raw[b].append(on)
            added[b].append(on - (off + off2) / 2)
            print("  round %d %s: off %.0f, on %.0f, off %.0f ns per pair" % (r + 1, b, off, on, off2), flush=True)
            off = off2
    print("no probe: ns per pair %s" % spread(offs))
    for b in builds:
        print("%s: ns per pair %s; added %s" % (b, spread(raw[b]), spread(added[b])))
    os.rmdir(tmp) if not os.listdir(tmp) else None


if __name__ == "__main__":
    main()
