#!/usr/bin/env python3
"""metrics_render.py - /metrics scrape time of the real supervisor holding SERIES probe series, side by
side with prometheus-node-exporter on the same machine in the same run.

    python3 bench/metrics_render.py [SERIES] [RUNS]      (defaults 100000, 20; GG_BUILD selects the build)

The supervisor gets one extend probe printing SERIES/10 rows of a tcp_link-like table (6 keys, 2 labels,
10 metrics). Reported: median wall time of an HTTP GET /metrics (connect + render + transfer), the
supervisor's own render time (gala_gopher_sup_scrape_duration_seconds), series and bytes per scrape."""
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import ROOT, Supervisor, extend_entry, free_port, wait_for  # noqa: E402

META = """version = "1.0.0";
measurements: ( { table_name: "tcp_link_bench", entity_name: "tcp_link", fields: (
  { description: "process id", type: "key", name: "tgid" }, { description: "role", type: "key", name: "role" },
  { description: "client ip", type: "key", name: "client_ip" }, { description: "server ip", type: "key", name: "server_ip" },
  { description: "server port", type: "key", name: "server_port" }, { description: "protocol", type: "key", name: "protocol" },
  { description: "command", type: "label", name: "comm" }, { description: "container", type: "label", name: "container_id" },
  { description: "bytes received", type: "counter", name: "rx_bytes" }, { description: "bytes sent", type: "counter", name: "tx_bytes" },
  { description: "segments in", type: "counter", name: "segs_in" }, { description: "segments out", type: "counter", name: "segs_out" },
  { description: "retransmits", type: "counter", name: "retran_packets" }, { description: "srtt (us)", type: "gauge", name: "srtt" },
  { description: "receive window", type: "gauge", name: "rcv_wnd" }, { description: "cwnd", type: "gauge", name: "snd_cwnd" },
  { description: "receive queue", type: "gauge", name: "rcv_queue" }, { description: "send queue", type: "gauge", name: "snd_queue" } ) } );
"""


def timed_get(url):
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def measure(url, runs):
    times, body = [], b""
    timed_get(url)  # warm-up
    for _ in range(runs):
        t, body = timed_get(url)
        times.append(t)
    series = sum(1 for l in body.split(b"\n") if l and not l.startswith(b"#"))
    return statistics.median(times), series, len(body)


def main():
    series = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rows = (series + 9) // 10
    port = free_port()
    meta = os.path.join("/tmp", "gg-bench-tcp_link_bench.meta")
    with open(meta, "w") as f:
        f.write(META)
    lines = os.path.join("/tmp", "gg-bench-rows.lines")
    with open(lines, "w") as f:
        for i in range(rows):
            f.write("|tcp_link_bench|%d|client|10.0.%d.%d|192.168.1.10|8080|tcp|nginx|a1b2c3d4e5f6|%d|%d|%d|%d|%d|"
                    "%d.5|65535|10|0|%d|\n" % (1000 + i % 5000, (i // 250) % 250, i % 250, i * 1500, i * 900, i * 3,
                                               i * 2, i % 7, 100 + i % 900, i % 13))
    emit = os.path.join(ROOT, "tests", "integration", "scripts", "emit_lines.py")
    s = Supervisor(extend=[extend_entry("rows", shutil.which("python3"), "%s -c 1 %s" % (emit, lines))],
                   metric_out="web_server", extra_meta=[meta],
                   extra="web_server = { port = %d; }; imdb = { max_records_num = %d; record_timeout = 3600; };"
                   % (port, rows + 10)).start()
    ne = None
    try:
        s.wait_probe("rows", lambda p: p["accepted"] >= rows, 60, "rows stored")
        url = "http://127.0.0.1:%d/metrics" % port
        wall, n, size = measure(url, runs)
        _, body = timed_get(url)
        render = [float(l.split()[-1]) for l in body.decode().splitlines()
                  if l.startswith("gala_gopher_sup_scrape_duration_seconds ")][0]
        print("gala-gopher /metrics: %d lines, %.1f MiB; GET median %.1f ms (%.0f ns/line); render %.1f ms" %
              (n, size / 2**20, wall * 1e3, wall * 1e9 / n, render * 1e3))
        nport = free_port()
        ne = subprocess.Popen(["prometheus-node-exporter", "--web.listen-address=127.0.0.1:%d" % nport],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        nurl = "http://127.0.0.1:%d/metrics" % nport

        def up():
            try:
                return timed_get(nurl)
            except OSError:
                return None
        wait_for(up, 10, "node exporter")
        wall2, n2, size2 = measure(nurl, runs)
        print("prometheus-node-exporter /metrics: %d lines, %.2f MiB; GET median %.1f ms (%.0f ns/line)" %
              (n2, size2 / 2**20, wall2 * 1e3, wall2 * 1e9 / n2))
        print("per line: gala-gopher %.0fx faster than node-exporter" % ((wall2 / n2) / (wall / n)))
    finally:
        if ne:
            ne.terminate()
            ne.wait()
        s.cleanup()
        os.unlink(lines)
        os.unlink(meta)


if __name__ == "__main__":
    main()
