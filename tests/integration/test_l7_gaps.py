"""test_l7_gaps.py - l7probe on the calls the first capture missed: sendmmsg/recvmmsg (glibc's resolver
sends its A and AAAA queries with one sendmmsg) and io_uring (counted in l7_stats.uncaptured, its bytes
reported). Real traffic of known counts: glibc's getaddrinfo against dnsmasq in a namespace of the
test's own."""
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import BUILD, check, free_port, stop_with_line, teardown
from test_l7 import Probe, both_sides, wait_or_dump

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


@contextlib.contextmanager
def peers(srv_argv, srv_what, cli_argv, proto):
    """A server of ours (it prints "ready" once listening), a client of it (a ready line once set up)
    and l7probe -p proto on both, started. Yields (srv, cli, probe); after, the probe is stopped, the
    client asked to end ("bye", killed when it does not) and the server killed."""
    srv = subprocess.Popen(srv_argv, stdout=subprocess.PIPE, text=True)
    cli = probe = None
    try:
        check(srv.stdout.readline().strip() == "ready", "%s did not start" % srv_what)
        cli = subprocess.Popen(cli_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = cli.stdout.readline()
        check(line.strip() == "ready" or json.loads(line)["ready"] == cli.pid, "client did not start: %r" % line)
        probe = Probe(["-t", "1", "-p", proto, "--pid", "%d,%d" % (srv.pid, cli.pid)])
        probe.wait_started()
        time.sleep(0.5)
        yield srv, cli, probe
    finally:
        teardown(probe, lambda: cli and stop_with_line(cli, "bye"), cli, srv)


def check_both(probe, keys, n, errs, errs_are):
    """Both sides' l7_rpc rows (keys: "client", "server") once they count n requests, and one report
    later: n requests, n responses and errs errors each."""
    rows = dict(zip(("client", "server"), both_sides(probe, keys["client"], keys["server"], n)))
    for side, r in rows.items():
        check(int(r["req_count"]) == n and int(r["resp_count"]) == n and int(r["err_count"]) == errs,
              "%s side: %s requests, %s responses, %s errors; sent %d with %d %s" % (
                  side, r["req_count"], r["resp_count"], r["err_count"], n, errs, errs_are))
    return rows


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
        for side, r in check_both(probe, keys, 80, 20, "NXDOMAIN").items():
            check(r["protocol"] == "dns" and r["l4_role"] == "udp", "%s: %r" % (side, r))
        stats = probe.latest("l7_stats")
        check(int(stats["uncaptured"]) == 0, "uncaptured: %r" % stats)
        check(int(stats["unparsable"]) == 0 and int(stats["resp_unmatched"]) == 0, "stats: %r" % stats)
        print("  sendmmsg: client 80 requests, 20 errors; server 80, 20; uncaptured 0")
    finally:
        teardown(probe, lambda: res and stop_with_line(res, "bye"), tmp)


test_l7_dns_sendmmsg.timeout = 60


URING_CLIENT = r"""
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("ready", flush=True)
sys.stdin.readline()
req = b"GET /u HTTP/1.1\r\nHost: t\r\n\r\n"
for _ in range(int(sys.argv[2])):
    s.sendall(req)
    got = b""
    while not got.endswith(b"ok"):
        got += s.recv(4096)
print("done", flush=True)
sys.stdin.readline()
"""


def io_uring_run(mode):
    """A server whose first exchange uses recv/send and the 24 after it io_uring: the 48 io_uring calls
    are counted in l7_stats.uncaptured and their bytes are in the server's l7_link (all 25 requests'
    and responses' bytes and calls); the client (plain system calls) counts its 25 requests. mode "tw":
    the receives complete in task work on the way out of a read() of a timerfd (registers that are not
    the receive's): counted the same, never parsed as the timerfd's buffer."""
    n, req_len, resp_len = 25, 28, 40
    port = free_port()
    with peers([os.path.join(BUILD, "tests", "uring_http"), str(port)] + ([mode] if mode else []), "uring_http",
               [sys.executable, "-c", URING_CLIENT, str(port), str(n)], "http") as (srv, cli, probe):
        cli.stdin.write("go\n")
        cli.stdin.flush()
        check(cli.stdout.readline().strip() == "done", "client failed")
        cli.stdin.write("bye\n")
        cli.stdin.flush()
        cli.wait(5)
        out = srv.communicate(timeout=5)[0]
        check("served %d uring %d" % (n, n - 1) in out, "uring_http: %r" % out)

        def link():
            r = probe.latest("l7_link", tgid=srv.pid, server_port=port)
            return r if r and int(r["bytes_recv"]) >= n * req_len and int(r["bytes_sent"]) >= n * resp_len else None
        wait_or_dump(probe, link, 15, "the server's l7_link with every byte", last=3)
        time.sleep(1.5)
        r = probe.latest("l7_link", tgid=srv.pid, server_port=port)
        check(int(r["bytes_recv"]) == n * req_len and int(r["bytes_sent"]) == n * resp_len,
              "server l7_link bytes %s/%s, moved %d/%d" % (r["bytes_recv"], r["bytes_sent"], n * req_len, n * resp_len))
        check(int(r["segs_recv"]) == n and int(r["segs_sent"]) == n, "server l7_link calls: %r" % r)
        stats = probe.latest("l7_stats")
        check(int(stats["uncaptured"]) == 2 * (n - 1), "uncaptured %s, io_uring calls %d" % (stats["uncaptured"],
                                                                                            2 * (n - 1)))
        c = probe.latest("l7_rpc", tgid=cli.pid, l7_role="client", server_port=port)
        check(c and int(c["req_count"]) == n, "client side: %r" % c)
        s = probe.latest("l7_rpc", tgid=srv.pid, l7_role="server", server_port=port)
        # each uncopied chunk is a gap where a message should start (unparsable), nothing more is parsed
        check(int(stats["unparsable"]) <= 2 * (n - 1) and (not s or int(s["req_count"]) <= 1),
              "stats %r, server %r" % (stats, s))
        print("  io_uring%s: uncaptured %s; server l7_link %s/%s bytes; server l7_rpc req_count %s (the first, parsed)"
              % (" (task work)" if mode else "", stats["uncaptured"], r["bytes_recv"], r["bytes_sent"],
                 s and s["req_count"]))


def test_l7_io_uring_counted():
    io_uring_run(None)


test_l7_io_uring_counted.timeout = 60


def test_l7_io_uring_task_work():
    io_uring_run("tw")


test_l7_io_uring_task_work.timeout = 60


def test_l7_h2c_upgrade():
    """HTTP/1.1 Upgrade to h2c: the upgrade request is answered on stream 1 in HTTP/2, then 20 requests
    on streams 3..41 (4 of them 404). Both sides count 21 requests and 4 errors as http2 (the upgrade
    request included, under its HTTP/1.1 api), no http row counts a request, nothing unparsable."""
    script = os.path.join(SCRIPTS, "h2c_upgrade.py")
    port = free_port()
    with peers([sys.executable, script, "server", str(port)], "server",
               [sys.executable, script, "client", str(port), "20"], "http") as (srv, cli, probe):
        cli.stdin.write("go\n")
        cli.stdin.flush()
        done = json.loads(cli.stdout.readline())
        check(done == {"requests": 21, "errors": 4}, "client did %r" % done)
        keys = {"client": dict(tgid=cli.pid, l7_role="client", server_port=port, protocol="http2"),
                "server": dict(tgid=srv.pid, l7_role="server", server_port=port, protocol="http2")}
        check_both(probe, keys, 21, 4, "errors")
        for side, k in keys.items():
            h1 = probe.latest("l7_rpc", **dict(k, protocol="http"))
            check(not h1 or int(h1["req_count"]) == 0, "%s side http row counts requests: %r" % (side, h1))
        stats = probe.latest("l7_stats")
        for f in ("unparsable", "resp_unmatched", "req_lost", "hpack_unresolved"):
            check(int(stats[f]) == 0, "%s: %r" % (f, stats))
        print("  h2c upgrade: both sides 21 requests, 4 errors as http2")


test_l7_h2c_upgrade.timeout = 60


DNS_CLIENT = r"""
import socket, struct, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
print("ready", flush=True)
sys.stdin.readline()
nx = 0
for burst in range(0, n, 5):
    for i in range(burst, burst + 5):
        name = ("no%d" % i if i % 4 == 3 else "ok%d" % i) + ".example.test"
        q = struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0)
        q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
        s.sendto(q, ("127.0.0.1", port))
    for _ in range(5):
        r = s.recv(512)
        nx += (r[3] & 15) == 3
print("done %d" % nx, flush=True)
sys.stdin.readline()
"""


def test_l7_dns_recvmmsg():
    """A DNS responder of ours reading with recvmmsg (batches of up to 8 that end with an EAGAIN message)
    and answering with sendmmsg; a client sends 40 queries in bursts of 5, 10 of them NXDOMAIN. The
    responder's rows (server, every datagram through the mmsg calls) and the client's count 40 requests
    and 10 errors."""
    n = 40
    port = free_port()
    with peers([os.path.join(BUILD, "tests", "mmsg_dns"), str(port), str(n)], "mmsg_dns",
               [sys.executable, "-c", DNS_CLIENT, str(port), str(n)], "dns") as (srv, cli, probe):
        cli.stdin.write("go\n")
        cli.stdin.flush()
        check(cli.stdout.readline().strip() == "done 10", "client: NXDOMAIN count")
        out = srv.communicate(timeout=5)[0]
        check(("answered %d" % n) in out, "mmsg_dns: %r" % out)
        keys = {"client": dict(tgid=cli.pid, l7_role="client", server_port=port),
                "server": dict(tgid=srv.pid, l7_role="server", server_port=port)}
        check_both(probe, keys, n, 10, "NXDOMAIN")
        stats = probe.latest("l7_stats")
        check(int(stats["uncaptured"]) == 0 and int(stats["unparsable"]) == 0, "stats: %r" % stats)
        print("  recvmmsg/sendmmsg: %s; both sides %d requests, 10 errors" % (out.strip(), n))


test_l7_dns_recvmmsg.timeout = 60
