"""test_haproxy.py - trace_haproxy (haproxy): Debian's HAProxy started by the test on loopback (a TCP
frontend and an HTTP one, each to a backend server of the test's own, a stats socket in a temporary
directory), clients with known counts: 3 TCP streams held open and 2 HTTP requests the server answers
only after 8 s. Ground truth: haproxy_link gives, in one report, link_count 3 for the TCP key
(client, frontend address, server address, protocol 0) and 2 for the HTTP key (protocol 1); after
the TCP clients close, their key is gone from the next report. Also: trace_haproxy_stats names
HAProxy's pid and its socket; a probe whose scope is another process reports nothing; PUT /haproxy
through the supervisor's REST API."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from harness import (PROBES, ROOT, StandaloneProbe, check, dump_probe_log, free_port, meta_fields, put_running,
                     rest_supervisor, stop_proc, teardown, wait_for, wait_port)

BIN = os.path.join(PROBES, "trace_haproxy")
FIELDS = meta_fields(os.path.join(ROOT, "schema", "trace_haproxy.meta"))
SLOW_S = 8

BACKEND = r'''
import socket, sys, threading, time
def serve(l):
    while True:
        c, _ = l.accept()
        def h(c=c):
            try:
                while True:
                    d = c.recv(4096)
                    if not d:
                        break
                    if d.startswith(b"GET"):
                        time.sleep(%d)
                        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    else:
                        c.sendall(d)
            except OSError:
                pass
            c.close()
        threading.Thread(target=h, daemon=True).start()
for p in sys.argv[1:]:
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", int(p)))
    l.listen(128)
    threading.Thread(target=serve, args=(l,), daemon=True).start()
print("ready", flush=True)
time.sleep(3600)
''' % SLOW_S


class Haproxy:
    def __init__(self, tmp):
        self.tmp = tmp
        self.fe_tcp, self.fe_http, self.be_tcp, self.be_http = (free_port() for _ in range(4))
        self.sock = os.path.join(tmp, "admin.sock")
        self.backend = subprocess.Popen([sys.executable, "-c", BACKEND, str(self.be_tcp), str(self.be_http)],
                                        stdout=subprocess.PIPE, text=True)
        check(self.backend.stdout.readline().strip() == "ready", "backend did not start")
        cfg = os.path.join(tmp, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write("global\n    stats socket %s mode 600 level admin\n"
                    "defaults\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n"
                    "frontend fe_tcp\n    mode tcp\n    bind 127.0.0.1:%d\n    default_backend be_tcp\n"
                    "frontend fe_http\n    mode http\n    bind 127.0.0.1:%d\n    default_backend be_http\n"
                    "backend be_tcp\n    mode tcp\n    server s1 127.0.0.1:%d\n"
                    "backend be_http\n    mode http\n    server s2 127.0.0.1:%d\n"
                    % (self.sock, self.fe_tcp, self.fe_http, self.be_tcp, self.be_http))
        self.log = open(os.path.join(tmp, "haproxy.log"), "w")
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        wait_port(self.fe_http, self.proc, "haproxy", timeout=20)
        wait_for(lambda: os.path.exists(self.sock), 10, "the stats socket")

    def tcp_clients(self, n):
        cs = []
        for _ in range(n):
            c = socket.create_connection(("127.0.0.1", self.fe_tcp), timeout=10)
            c.sendall(b"ping")
            check(c.recv(16) == b"ping", "no echo through haproxy")
            cs.append(c)
        return cs

    def slow_requests(self, n):
        cs = []
        for _ in range(n):
            c = socket.create_connection(("127.0.0.1", self.fe_http), timeout=30)
            c.sendall(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            cs.append(c)
        return cs

    def tcp_key(self):
        return ("127.0.0.1", "127.0.0.1", "127.0.0.1", str(self.fe_tcp), str(self.be_tcp), "0")

    def http_key(self):
        return ("127.0.0.1", "127.0.0.1", "127.0.0.1", str(self.fe_http), str(self.be_http), "1")

    def stop(self):
        stop_proc(self.proc, group=True)
        stop_proc(self.backend)
        self.log.close()


KEY = ("client_ip", "virtual_ip", "server_ip", "virtual_port", "server_port", "protocol")


def reports(recs):
    """The records of each report: haproxy_link rows, then one stats row per socket; a report ends at
    its last stats row. [(links {key: count}, stats rows)]"""
    out, links, stats = [], {}, []
    for r in recs:
        if r["table"] == "haproxy_link":
            if stats:
                out.append((links, stats))
                links, stats = {}, []
            links[tuple(r[k] for k in KEY)] = int(r["link_count"])
        else:
            stats.append(r)
    if stats:
        out.append((links, stats))
    return out


def test_haproxy_links():
    tmp = tempfile.mkdtemp(prefix="gg-hap-")
    hap = probe = other = None
    clients = []
    try:
        hap = Haproxy(tmp)
        probe = StandaloneProbe(BIN, ["-t", "1", "--pid", str(hap.proc.pid)], FIELDS)
        other = StandaloneProbe(BIN, ["-t", "1", "--pid", str(os.getpid())], FIELDS)
        probe.wait_started()
        other.wait_started()
        clients += hap.tcp_clients(3)
        clients += hap.slow_requests(2)
        t0 = time.monotonic()

        def both():
            for links, _ in reports(probe.rows())[-2:]:
                if links.get(hap.tcp_key()) == 3 and links.get(hap.http_key()) == 2:
                    return links
            return None
        try:
            links = wait_for(both, SLOW_S - 2, "tcp 3 and http 2 in one report")
        except Exception:
            raise AssertionError("reports %r" % [r[0] for r in reports(probe.rows())[-3:]])
        check(time.monotonic() - t0 < SLOW_S, "the HTTP requests were answered before they were seen")
        check(len(links) == 2, "other links: %r" % links)
        st = reports(probe.rows())[-1][1]
        check(len(st) == 1 and st[0]["tgid"] == str(hap.proc.pid) and st[0]["socket"] == hap.sock,
              "stats %r" % st)
        check(st[0]["up"] == "1" and st[0]["malformed"] == "0" and st[0]["poll_errors"] == "0", "stats %r" % st)

        # the TCP clients go: their key leaves the reports
        for c in clients[:3]:
            c.close()
        n = len(reports(probe.rows()))
        wait_for(lambda: len(reports(probe.rows())) > n + 1 and
                 hap.tcp_key() not in reports(probe.rows())[-1][0], 10, "the TCP key gone")
        check(not other.rows(), "a probe scoped to another process reported %r" % other.rows()[:2])
        check(not probe.bad and not other.bad, "malformed records %r" % (probe.bad + other.bad)[:3])
        print("  tcp 3 and http 2 (in flight) in one report; tcp key gone after the clients closed")
    finally:
        for c in clients:
            c.close()
        teardown(probe, other, hap)
        shutil.rmtree(tmp, ignore_errors=True)


test_haproxy_links.timeout = 90


def test_haproxy_rest():
    tmp = tempfile.mkdtemp(prefix="gg-hap-rest-")
    hap = s = None
    clients = []
    try:
        hap = Haproxy(tmp)
        s = rest_supervisor(tmp, "trace_haproxy")
        put_running(s, "haproxy", "trace_haproxy", {"snoopers": {"proc_id": [hap.proc.pid]}, "state": "running"})
        clients = hap.tcp_clients(4)

        def count():
            rows = [r for r in s.metric_records("haproxy_link")
                    if tuple(str(r[k]) for k in KEY) == hap.tcp_key()]
            return int(rows[-1]["link_count"]) if rows else None
        try:
            wait_for(lambda: count() == 4, 20, "link_count 4 through the supervisor")
        except Exception:
            dump_probe_log(s, "trace_haproxy")
            raise
        check(s.probe("trace_haproxy")["rejected_total"] == 0, "records rejected by the supervisor")
        print("  PUT /haproxy: link_count 4")
    finally:
        for c in clients:
            c.close()
        teardown(s, hap)
        shutil.rmtree(tmp, ignore_errors=True)


test_haproxy_rest.timeout = 90


def test_haproxy_socket_replaced():
    """HAProxy's socket path replaced by a symbolic link to another process's socket (the path is the
    HAProxy process's to change, and root follows links from its own root): the probe connects, sees
    that the listener is not HAProxy, sends nothing and counts a poll error."""
    import threading
    tmp = tempfile.mkdtemp(prefix="gg-hap-swap-")
    hap = probe = None
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    got = []
    try:
        hap = Haproxy(tmp)
        decoy = os.path.join(tmp, "decoy.sock")
        other.bind(decoy)
        other.listen(8)

        def serve():
            while True:
                try:
                    c, _ = other.accept()
                except OSError:
                    return
                c.settimeout(2)
                try:
                    got.append(c.recv(100))
                except OSError:
                    got.append(b"")
                c.close()
        threading.Thread(target=serve, daemon=True).start()
        probe = StandaloneProbe(BIN, ["-t", "1", "--pid", str(hap.proc.pid)], FIELDS)
        probe.wait_started()
        def st():
            return probe.latest("trace_haproxy_stats") or {}
        wait_for(lambda: st().get("up") == "1", 10, "up 1")
        os.unlink(hap.sock)
        os.symlink(decoy, hap.sock)
        wait_for(lambda: int(st()["poll_errors"]) >= 2, 10, "poll errors")
        check(st()["up"] == "0", "up after the swap")
        check(len(got) >= 1 and not any(got), "the decoy received %r" % got)
        check("is not HAProxy" in probe.stderr(), "no warning: %s" % probe.stderr()[-800:])
        print("  swapped socket: %d connections to the decoy, nothing sent" % len(got))
    finally:
        other.close()
        teardown(probe, hap)
        shutil.rmtree(tmp, ignore_errors=True)
