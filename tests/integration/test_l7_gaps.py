"""test_l7_gaps.py - l7probe on the calls the first capture missed: sendmmsg/recvmmsg (glibc's resolver
sends its A and AAAA queries with one sendmmsg) and io_uring (counted in l7_stats.uncaptured, its bytes
reported). Real traffic of known counts: glibc's getaddrinfo against dnsmasq in a namespace of the
test's own."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from harness import check, stop_with_line, wait_for
from test_l7 import Probe

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def test_l7_dns_sendmmsg():
    """getaddrinfo(AF_UNSPEC) x 40 (10 of them NXDOMAIN): 80 queries sent by sendmmsg two at a time;
    both the resolver's rows (client, through sendmmsg) and dnsmasq's (server) count 80 requests and 20
    errors, and nothing is counted as uncaptured."""
    tmp = tempfile.mkdtemp(prefix="gg-l7-mmsg-")
    res = probe = None
    try:
        res = subprocess.Popen(["unshare", "-m", "-n", sys.executable, os.path.join(SCRIPTS, "l7_resolver.py"), tmp,
                                "30", "10"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        line = res.stdout.readline()
        check(line.startswith('{"ready"'), "resolver not ready: %r %s" % (
            line, res.stderr.read() if res.poll() is not None else ""))
        ready = json.loads(line)
        probe = Probe(["-t", "1", "-p", "dns", "--pid", "%d,%d" % (ready["ready"], ready["dnsmasq"])])
        probe.wait_started()
        time.sleep(0.5)
        res.stdin.write("go\n")
        res.stdin.flush()
        done = json.loads(res.stdout.readline())
        check(done["queries"] == 80 and done["nxdomain"] == 20, "the resolver did %r" % done)
        keys = {"client": dict(tgid=ready["ready"], l7_role="client", server_port=53),
                "server": dict(tgid=ready["dnsmasq"], l7_role="server", server_port=53)}

        def both():
            rows = {side: probe.latest("l7_rpc", **k) for side, k in keys.items()}
            return rows if all(r and int(r["req_count"]) >= 80 for r in rows.values()) else None
        try:
            wait_for(both, 15, "client and server l7_rpc rows with 80 requests")
        except Exception:
            for t in ("l7_rpc", "l7_stats"):
                for r in probe.rows(t)[-4:]:
                    print("  last %s: %r" % (t, r))
            raise
        time.sleep(1.5)  # one more report: nothing more may come
        for side, k in keys.items():
            r = probe.latest("l7_rpc", **k)
            check(r["protocol"] == "dns" and r["l4_role"] == "udp", "%s: %r" % (side, r))
            check(int(r["req_count"]) == 80 and int(r["resp_count"]) == 80 and int(r["err_count"]) == 20,
                  "%s side: %s requests, %s responses, %s errors; sent 80 with 20 NXDOMAIN" % (
                      side, r["req_count"], r["resp_count"], r["err_count"]))
        stats = probe.latest("l7_stats")
        check(int(stats["uncaptured"]) == 0, "uncaptured: %r" % stats)
        check(int(stats["unparsable"]) == 0 and int(stats["resp_unmatched"]) == 0, "stats: %r" % stats)
        print("  sendmmsg: client 80 requests, 20 errors; server 80, 20; uncaptured 0")
    finally:
        if probe:
            probe.stop()
        if res:
            stop_with_line(res, "bye")
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_dns_sendmmsg.timeout = 60
