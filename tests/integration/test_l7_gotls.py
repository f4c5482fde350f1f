"""test_l7_gotls.py - l7probe's Go TLS uprobes (issue 18): a Go HTTPS server and client (scripts/gotls,
standard library only, built here with Debian's golang, no network) talk HTTP/1.1 over crypto/tls on
loopback with a self-signed certificate made by the test; the client makes a known number of
keep-alive requests, every fifth one a 404. Both sides' l7_rpc rows must say ssl=1 with the client's
request and error counts, which only the plaintext from crypto/tls.(*Conn).Read/Write can give (the
socket payloads are ciphertext)."""
import os
import shutil
import subprocess
import tempfile
import time

from harness import LinePeer, check, free_port, wait_for
from test_l7 import Probe, check_rows, hist_sum, make_cert, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "scripts", "gotls", "main.go")


def build_gotls(tmp):
    """The test program, built offline: GOPATH mode (GO111MODULE=off), no proxy, caches in tmp."""
    go = shutil.which("go")
    check(go is not None, "no go toolchain: scripts/install-deps.sh installs golang-go")
    out = os.path.join(tmp, "gotls")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "GOCACHE": os.path.join(tmp, "gocache"),
           "GOPATH": os.path.join(tmp, "gopath"), "GO111MODULE": "off", "GOFLAGS": "", "GOPROXY": "off",
           "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    r = subprocess.run([go, "build", "-o", out, SRC], env=env, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "go build: %s" % (r.stderr[-2000:]))
    return out


class GoClient(LinePeer):
    """gotls client: connected lazily by net/http, waiting for go on stdin."""

    def __init__(self, binary, port, n):
        super().__init__([binary, "client", str(port), str(n)], what="go client")

    def go(self):
        done = self.ask("go")
        done["preempted"] = 0
        return done


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_l7_gotls():
    tmp = tempfile.mkdtemp(prefix="gg-l7-gotls-")
    server = client = probe = None
    try:
        binary = build_gotls(tmp)
        key, crt = make_cert(tmp)
        port = free_port()
        server = subprocess.Popen([binary, "server", crt, key, str(port)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(port, server, "gotls server")
        n = 50
        client = GoClient(binary, port, n)
        probe = Probe(["-t", "1", "-p", "http", "-s", "1", "--pid", "%d,%d" % (server.pid, client.pid)])
        probe.wait_started()
        wait_for(lambda: probe.stderr().count("Go TLS (go1.") >= 2, 20, "Go TLS uprobes in both programs")
        # Read's end at its deferred closure's entry (emulated), not at its rets (single-stepped)
        check(probe.stderr().count("its deferred closure's entry") >= 2, "Read's end probes: %s" % probe.stderr()[-1500:])
        time.sleep(0.5)
        done = client.go()
        check(done["requests"] == n and done["errors"] == n // 5, "client did %r" % done)
        check_rows(probe, "https", port, server.pid, client, done, ssl="1", latency=False)
        c = probe.latest("l7_rpc", tgid=client.pid, server_port=port, l7_role="client", ssl="1")
        lat = hist_sum(c["latency"])
        # from the request's Write to the response's Read: inside what the client timed around c.Get
        check(0 < lat <= done["latency_ns"] * 1.1, "client-side latency sum %d ns, the client measured %d ns"
              % (lat, done["latency_ns"]))
        # no plaintext row: the socket's own payloads were ciphertext, counted but not parsed
        check(probe.latest("l7_rpc", tgid=client.pid, server_port=port, ssl="0") is None,
              "a row without ssl: %r" % probe.latest("l7_rpc", tgid=client.pid, server_port=port, ssl="0"))
        stats = probe.latest("l7_stats")
        check(int(stats["ssl_nofd"]) == 0, "Go TLS calls without a socket: %r" % stats)
        print("  go tls: %d requests, %d errors on both sides; client-side latency sum %d ns (client measured %d)"
              % (n, n // 5, lat, done["latency_ns"]))
    finally:
        if client:
            client.close()
        if probe:
            probe.stop()
        if server:
            stop(server)
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_gotls.timeout = 240
