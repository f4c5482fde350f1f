#!/usr/bin/env python3
"""haproxy_cost.py - what trace_haproxy costs per report, against the number of streams HAProxy holds.

Debian's HAProxy on loopback (a TCP frontend to a server of the bench's own that accepts and holds every
connection), N client connections held open (each one TCP stream), trace_haproxy -t 1 scoped to HAProxy.
Per round and N: over SECONDS after 3 warm-up reports, per report the probe's CPU time and HAProxy's
(both /proc/<pid>/task/*/schedstat: HAProxy's time is its answer to show sess all, it has nothing else
to do), the answer's size is ~0.8 KB a stream; "exact": every report of the window gave link_count N.
Rounds alternate the values of N. Prints each round and the median [min..max] per N.
Run as root from the checkout: python3 bench/haproxy_cost.py [--rounds 3] [--seconds 10] [--streams 100,2000]
"""
import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from harness import (PROBES, ROOT, StandaloneProbe, free_port, meta_fields, proc_oncpu_ns, stop_proc,  # noqa: E402
                     wait_for, wait_port)

FIELDS = meta_fields(os.path.join(ROOT, "schema", "trace_haproxy.meta"))


def holder(port, held):
    """A server that accepts every connection and keeps it until the other side closes (HAProxy passes a
    client's close on as a half-close: a stream ends when the server closes too)."""
    import selectors
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4096)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ)

    def run():
        while True:
            for key, _ in sel.select():
                if key.fileobj is ls:
                    try:
                        c, _ = ls.accept()
                    except OSError:
                        return
                    held.append(c)
                    sel.register(c, selectors.EVENT_READ)
                    continue
                c = key.fileobj
                try:
                    d = c.recv(4096)
                except OSError:
                    d = b""
                if not d:
                    sel.unregister(c)
                    c.close()
                    held.remove(c)
    threading.Thread(target=run, daemon=True).start()
    return ls


def reports(probe):
    """[(link_count of the one key or 0, stats row)] per report."""
    out, count = [], 0
    for r in probe.rows():
        if r["table"] == "haproxy_link":
            count += int(r["link_count"])
        else:
            out.append((count, r))
            count = 0
    return out


def one_round(binary, hap, fe, n, seconds):
    clients = []
    try:
        for _ in range(n):
            clients.append(socket.create_connection(("127.0.0.1", fe), timeout=10))
        probe = StandaloneProbe(binary, ["-t", "1", "--pid", str(hap.pid)], FIELDS)
        try:
            probe.wait_started()
            wait_for(lambda: len(reports(probe)) >= 3 and reports(probe)[-1][0] == n, 30, "3 reports with %d" % n)
            r0, c0, h0 = len(reports(probe)), proc_oncpu_ns(probe.proc.pid), proc_oncpu_ns(hap.pid)
            time.sleep(seconds)
            rs = reports(probe)
            r1, c1, h1 = len(rs), proc_oncpu_ns(probe.proc.pid), proc_oncpu_ns(hap.pid)
            exact = all(c == n for c, _ in rs[r0:r1])
        finally:
            probe.stop()
    finally:
        for c in clients:
            c.close()
    k = max(r1 - r0, 1)
    return {"reports": r1 - r0, "probe_us": (c1 - c0) / k / 1e3, "haproxy_us": (h1 - h0) / k / 1e3, "exact": exact}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--streams", default="100,2000")
    ap.add_argument("--binary", default=os.path.join(PROBES, "trace_haproxy"))
    a = ap.parse_args()
    ns = [int(x) for x in a.streams.split(",")]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = tempfile.mkdtemp(prefix="gg-hapb-")
    held, fe, be = [], free_port(), free_port()
    ls = holder(be, held)
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write("global\n    maxconn 8000\n    stats socket %s/admin.sock mode 600 level admin\n"
                "defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 10m\n    timeout server 10m\n"
                "frontend fe\n    bind 127.0.0.1:%d\n    maxconn 8000\n    default_backend be\n"
                "backend be\n    server s1 127.0.0.1:%d maxconn 8000\n" % (tmp, fe, be))
    hap = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        wait_port(fe, hap, "haproxy")
        res = {n: [] for n in ns}
        for i in range(a.rounds):
            for n in (ns if i % 2 == 0 else list(reversed(ns))):
                r = one_round(a.binary, hap, fe, n, a.seconds)
                res[n].append(r)
                print("round %d: %5d streams, %2d reports, probe %8.1f us/report, haproxy %8.1f us/report, "
                      "exact: %s" % (i + 1, n, r["reports"], r["probe_us"], r["haproxy_us"], r["exact"]), flush=True)
        for n, rs in res.items():
            for k in ("probe_us", "haproxy_us"):
                v = [r[k] for r in rs]
                print("%5d streams %-10s median %.1f us [%.1f .. %.1f]" % (n, k, statistics.median(v), min(v), max(v)))
            print("%5d streams: exact in %d of %d rounds" % (n, sum(r["exact"] for r in rs), len(rs)))
    finally:
        stop_proc(hap, group=True)
        ls.close()
        for c in held:
            c.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
