#!/usr/bin/env python3
"""rest_bench.py - the REST API's two figures on the real supervisor and system_infos:
  1. PUT -> new configuration confirmed by the running probe (median, p99): a PUT changing
     report_period, then GET /baseinfo on a kept-alive connection every POLL_MS until the probe has
     reported the new version in a batch header (runtime.config_confirmed);
  2. GET requests per second with keep-alive (bench/rest_get, C), 1 and 4 connections.

usage: bench/rest_bench.py [PUTS=200] [GET_SECONDS=3]      (GG_BUILD selects the build, default build)
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import BUILD, Supervisor, proc_status_kb, rest_port, rest_section, wait_for  # noqa: E402

POLL_MS = 1


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def main():
    puts = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    get_s = float(sys.argv[2]) if len(sys.argv) > 2 else 3
    state = tempfile.mkdtemp(prefix="gg-bench-rest-")
    s = Supervisor(extra=rest_section(state))
    try:
        s.start()
        port = rest_port(s)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

        def call(method, path, body=None):
            c.request(method, path, body=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
                      if body else {})
            r = c.getresponse()
            return r.status, json.loads(r.read())

        st, doc = call("PUT", "/baseinfo", "json=" + json.dumps({"params": {"report_period": 7}, "state": "running"}))
        assert st == 200, doc
        wait_for(lambda: call("GET", "/baseinfo")[1]["runtime"]["config_confirmed"], 10, "probe up and confirmed")
        pid = call("GET", "/baseinfo")[1]["runtime"]["pid"]

        put_rtt, confirm = [], []
        for i in range(puts):
            body = urllib.parse.urlencode({"json": json.dumps({"params": {"report_period": 5 + i % 2}})})
            t0 = time.perf_counter()
            st, doc = call("PUT", "/baseinfo", body)
            t1 = time.perf_counter()
            assert st == 200, doc
            while True:
                rt = call("GET", "/baseinfo")[1]["runtime"]
                if rt["config_confirmed"]:
                    break
                if time.perf_counter() - t0 > 5:
                    raise SystemExit("not confirmed within 5 s: %r" % rt)
                time.sleep(POLL_MS / 1000.0)
            t2 = time.perf_counter()
            put_rtt.append((t1 - t0) * 1000)
            confirm.append((t2 - t0) * 1000)
        rt = call("GET", "/baseinfo")[1]["runtime"]
        assert rt["pid"] == pid and rt["starts"] == 1, "applied live, no restart: %r" % rt
        c.close()
        print("PUT -> confirmed by system_infos, %d PUTs (poll every %d ms): median %.2f ms, p99 %.2f ms, max %.2f ms"
              % (puts, POLL_MS, pct(confirm, 0.5), pct(confirm, 0.99), max(confirm)))
        print("PUT reply alone (validate + fsync'd save + send): median %.2f ms, p99 %.2f ms"
              % (pct(put_rtt, 0.5), pct(put_rtt, 0.99)))
        print("config versions sent %d, confirmed %d; same probe process throughout (pid %d)"
              % (rt["config_version"], rt["config_version_applied"], pid))

        tool = os.path.join(BUILD, "bench", "rest_get")
        for conns in (1, 4):
            for path in ("/baseinfo", "/probes"):
                out = subprocess.run([tool, str(port), str(conns), str(get_s), path], capture_output=True, text=True)
                print(out.stdout.strip() or out.stderr.strip())
        rss = proc_status_kb(s.proc.pid)
        print("supervisor RSS after the run: %s kB" % rss)
    finally:
        s.cleanup()
        subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    main()
