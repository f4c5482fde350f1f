#!/usr/bin/env python3
"""flood_rss.py - the supervisor under a unique-key flood (issue 22 item 11): N flood probes (bad_probe -m
flood) send records with new keys as fast as they can into the imdb (metric output web_server) for D
seconds. Samples the supervisor's RSS every second and times REST GETs made meanwhile (control plane).

usage: [GG_IPC_QUEUE=batches] bench/flood_rss.py [NPROBES=4] [SECONDS=30] [KEYS=100000000]
"""
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import (flood_supervisor, free_port, proc_cpu_seconds, proc_status_kb, rest_port,  # noqa: E402
                     rest_section)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    secs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    keys = int(sys.argv[3]) if len(sys.argv) > 3 else 100000000
    web = free_port()
    s = flood_supervisor(n, 2000000000, keys, int(os.environ.get("GG_IPC_QUEUE", 0)), metric_out="web_server",
                         extra="web_server = { port = %d; };\n%s" % (
                             web, rest_section(os.path.join("/tmp", "gg-flood-%d" % os.getpid()))))
    lat, stop = [], threading.Event()
    try:
        s.start()
        rport = rest_port(s)

        def getter():
            while not stop.is_set():
                t = time.monotonic()
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/tcp" % rport, timeout=120) as r:
                        r.read()
                except Exception:  # noqa: BLE001 - a failed GET is a data point too
                    pass
                lat.append(time.monotonic() - t)
                time.sleep(0.05)
        th = threading.Thread(target=getter, daemon=True)
        cpu0 = proc_cpu_seconds(s.proc.pid)
        th.start()
        samples = []
        for _ in range(secs):
            time.sleep(1)
            samples.append(proc_status_kb(s.proc.pid))
        stop.set()
        th.join(130)
        st = s.status()
        recs = sum(p["records"] for p in st["probes"])
        lost = sum(p["ipc_lost_records"] for p in st["probes"])
        cpu = proc_cpu_seconds(s.proc.pid) - cpu0
        print("probes=%d seconds=%d records=%d (%.0f/s) ipc_lost_records=%d supervisor_cpu=%.1fs"
              % (n, secs, recs, recs / secs, lost, cpu))
        print("rss_mb first=%.1f max=%.1f last=%.1f  (every 5 s: %s)" % (
            samples[0] / 1024, max(samples) / 1024, samples[-1] / 1024,
            " ".join("%.0f" % (x / 1024) for x in samples[::5])))
        if lat:
            q = sorted(lat)
            print("rest_get n=%d median=%.3fs p99=%.3fs max=%.3fs" % (
                len(q), statistics.median(q), q[int(len(q) * 0.99) - 1 if len(q) > 1 else 0], q[-1]))
    finally:
        stop.set()
        s.cleanup()


if __name__ == "__main__":
    main()
