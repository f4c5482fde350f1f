"""test_l7.py - l7probe on the real kernel against real servers from Debian (nginx plain and HTTPS,
redis-server) on loopback, each driven by a client of ours (scripts/l7_client.py) that sends a known
number of requests over a keep-alive connection, some of them errors, ten of them pipelined: both
sides' request and error counts must equal what the client sent, the client side's latency sum must
be within 10 % of what the client measured, and a client outside the scope leaves no row."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import PROBES, ROOT, check, free_port, wait_for

L7PROBE = os.path.join(PROBES, "l7probe")
CLIENT = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "l7_client.py")]
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def meta_fields(path):
    """table -> [field names] in meta order, read from a .meta file."""
    tables = {}
    cur = None
    with open(path) as f:
        for line in f:
            m = re.search(r'table_name:\s*"([^"]+)"', line)
            if m:
                cur = tables.setdefault(m.group(1), [])
                continue
            m = re.search(r'name:\s*"([^"]+)"', line)
            if m and cur is not None and "entity_name" not in line:
                cur.append(m.group(1))
    return tables


FIELDS = meta_fields(os.path.join(ROOT, "schema", "l7probe.meta"))


class Probe:
    """l7probe run by hand: its stdout records parsed into dicts as they come."""

    def __init__(self, args):
        self.err_path = tempfile.mktemp(prefix="gg-l7probe-", suffix=".log")
        self.err = open(self.err_path, "w")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GALA_GOPHER_")}
        self.proc = subprocess.Popen([L7PROBE] + args, stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
        self.recs = []
        self.bad = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.rstrip("\n").split("|")
            table = parts[1] if len(parts) > 2 else None
            vals = parts[2:-1]
            with self.lock:
                if table not in FIELDS or len(vals) != len(FIELDS[table]) or parts[0] or parts[-1]:
                    self.bad.append(line)
                    continue
                rec = dict(zip(FIELDS[table], vals))
                rec["table"] = table
                self.recs.append(rec)

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def wait_started(self):
        wait_for(lambda: "started:" in self.stderr() or self.proc.poll() is not None, 20, "l7probe start")
        check(self.proc.poll() is None, "l7probe exited at start: %s" % self.stderr()[-3000:])

    def latest(self, table, **keys):
        with self.lock:
            found = None
            for r in self.recs:
                if r["table"] == table and all(r.get(k) == str(v) for k, v in keys.items()):
                    found = r
            return found

    def rows(self, table, **keys):
        with self.lock:
            return [r for r in self.recs if r["table"] == table and all(r.get(k) == str(v) for k, v in keys.items())]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)
        text = self.stderr()
        self.err.close()
        os.unlink(self.err_path)
        for m in SANITIZER_MARKERS:
            check(m not in text, "l7probe: sanitizer report: %s" % text[-3000:])
        check(self.proc.returncode == 0, "l7probe exit status %s: %s" % (self.proc.returncode, text[-2000:]))
        check(not self.bad, "records that do not match the schema: %r" % self.bad[:3])


class Client:
    """scripts/l7_client.py: connected and waiting for go."""

    def __init__(self, mode, port, n=40):
        self.proc = subprocess.Popen(CLIENT + [mode, str(port), str(n)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        check(line.startswith('{"ready"'), "client not ready: %r %s" % (line, self.proc.stderr.read()
                                                                       if self.proc.poll() is not None else ""))
        self.ready = json.loads(line)
        self.pid = self.ready["ready"]

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        check(line.startswith("{"), "client failed: %r %s" % (line, self.proc.stderr.read()
                                                              if self.proc.poll() is not None else ""))
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("bye\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_port(port, proc, what, timeout=20):
    def ok():
        check(proc.poll() is None, "%s exited at start" % what)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False
    wait_for(ok, timeout, "%s on port %d" % (what, port))


def make_cert(tmp):
    key, crt = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True)
    return key, crt


class Nginx:
    """nginx with one worker serving a small file (sendfile on) and 404s, plain and optionally HTTPS."""

    def __init__(self, tmp, port, ssl_port=None):
        root = os.path.join(tmp, "www")
        os.makedirs(root)
        os.chmod(tmp, 0o755)  # the worker runs as www-data
        with open(os.path.join(root, "small.html"), "w") as f:
            f.write("<html><body>" + "x" * 600 + "</body></html>\n")
        ssl_server = ""
        if ssl_port:
            key, crt = make_cert(tmp)
            ssl_server = "server { listen 127.0.0.1:%d ssl; ssl_certificate %s; ssl_certificate_key %s; root %s; }" % (
                ssl_port, crt, key, root)
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""
worker_processes 1;
daemon off;
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path %(tmp)s/body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    server { listen 127.0.0.1:%(port)d; root %(root)s; }
    %(ssl)s
}
""" % {"tmp": tmp, "port": port, "root": root, "ssl": ssl_server})
        self.proc = subprocess.Popen(["nginx", "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(port, self.proc, "nginx")

        def workers():
            # the master listens before it forks its worker: the port answers a moment before
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                return [int(x) for x in f.read().split()] or None
        kids = wait_for(workers, 10, "nginx's worker")
        check(len(kids) == 1, "expected one nginx worker, found %r" % kids)
        self.worker = kids[0]
        self.pids = [self.proc.pid, self.worker]

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def hist_count(h):
    """Observations of a histogram value "n le1 c1 ... len cn sum count"."""
    return int(h.split()[-1])


def hist_sum(h):
    """Sum of the observations of a histogram value (the histogram's _sum series, ns)."""
    return int(float(h.split()[-2]))


def check_rows(probe, mode, port, server_tgid, client, done, ssl="0", latency=True):
    """Both sides' l7_rpc and l7_link rows against what the client did."""
    n, e = done["requests"], done["errors"]
    udp = mode == "dns"
    keys_c = dict(tgid=client.pid, server_port=port, l7_role="client", l4_role="udp" if udp else "tcp_client", ssl=ssl)
    keys_s = dict(tgid=server_tgid, server_port=port, l7_role="server", l4_role="udp" if udp else "tcp_server", ssl=ssl)

    def complete(keys):
        r = probe.latest("l7_rpc", **keys)
        return r if r and int(r["req_count"]) >= n else None

    try:
        wait_for(lambda: complete(keys_c), 15, "client-side l7_rpc with %d requests" % n)
        wait_for(lambda: complete(keys_s), 15, "server-side l7_rpc with %d requests" % n)
    except Exception:
        for t in ("l7_rpc", "l7_link", "l7_stats"):
            for r in probe.rows(t)[-6:]:
                print("  last %s: %r" % (t, r))
        raise
    time.sleep(1.5)  # one more report: nothing more may come
    c = probe.latest("l7_rpc", **keys_c)
    s = probe.latest("l7_rpc", **keys_s)
    proto = {"redis": "redis", "dns": "dns", "pgsql": "pgsql", "mysql": "mysql"}.get(mode, "http")
    for side, r in (("client", c), ("server", s)):
        check(r["protocol"] == proto, "%s side protocol %s" % (side, r["protocol"]))
        check(r["client_ip"] == "127.0.0.1" and r["server_ip"] == "127.0.0.1", "%s side addresses %r" % (side, r))
        check(int(r["req_count"]) == n and int(r["resp_count"]) == n,
              "%s side: %s requests, %s responses, the client sent %d" % (side, r["req_count"], r["resp_count"], n))
        check(int(r["err_count"]) == e, "%s side: %s errors, the client had %d" % (side, r["err_count"], e))
        check(hist_count(r["latency"]) == n, "%s side latency histogram counts %s" % (side, r["latency"]))
    lat_c, lat_s = hist_sum(c["latency"]), hist_sum(s["latency"])
    print("  %s: %d requests, %d errors; latency sum client-measured %d ns, probe client side %d ns (%+.1f %%), "
          "server side %d ns" % (mode, n, e, done["latency_ns"], lat_c, 100.0 * (lat_c - done["latency_ns"]) /
                                 max(done["latency_ns"], 1), lat_s))
    if latency:
        # The client is preempted now and then on a shared machine: that time is in its own figure but
        # not in the probe's when it falls outside the system calls. Such runs get a looser bound.
        # The client's own figure also holds the interpreter's time between its clock reads and its
        # system calls (a few us a request), which the probe does not see: 10 % plus 4 us a request.
        tol = 0.10 if not done["preempted"] else 0.5
        slack = 4000 * n
        if done["preempted"] and abs(lat_c - done["latency_ns"]) > 0.10 * done["latency_ns"] + slack:
            print("  the client was preempted %d times while timing: latency bound %d %%" % (done["preempted"],
                                                                                        100 * tol))
        check(abs(lat_c - done["latency_ns"]) <= tol * done["latency_ns"] + slack,
              "client latency sum %d ns, the client measured %d ns (more than %d %% + 4 us a request apart)" % (
                  lat_c, done["latency_ns"], 100 * tol))
    check(0 < lat_s <= lat_c, "server latency sum %d ns should be positive and below the client's %d ns" % (lat_s, lat_c))
    link = probe.latest("l7_link", **keys_c)
    check(link is not None, "no client-side l7_link row")
    if ssl == "0":
        check(int(link["bytes_sent"]) == done["bytes_sent"],
              "client bytes_sent %s, the client sent %d" % (link["bytes_sent"], done["bytes_sent"]))
    else:
        check(int(link["bytes_sent"]) > done["bytes_sent"],
              "client bytes_sent %s over TLS should exceed the plaintext %d" % (link["bytes_sent"], done["bytes_sent"]))
    check(int(link["segs_recv"]) >= 1, "client segs_recv %s" % link["segs_recv"])


def test_l7_http():
    tmp = tempfile.mkdtemp(prefix="gg-l7-http-")
    port = free_port()
    nginx = Nginx(tmp, port)
    try:
        inside = Client("http", port)
        probe = Probe(["-t", "1", "-c", "8192", "-p", "http", "--pid", ",".join(str(p) for p in nginx.pids + [inside.pid])])
        try:
            probe.wait_started()
            time.sleep(0.5)
            done = inside.go()
            check(done["errors"] == 10 and done["requests"] == 50, "client did %r" % done)
            check_rows(probe, "http", port, nginx.worker, inside, done)
        finally:
            inside.close()
            probe.stop()
    finally:
        nginx.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_http.timeout = 90


def test_l7_https():
    tmp = tempfile.mkdtemp(prefix="gg-l7-https-")
    port, sport = free_port(), free_port()
    nginx = Nginx(tmp, port, ssl_port=sport)
    try:
        inside = Client("https", sport)
        probe = Probe(["-t", "1", "-p", "http", "-s", "1",
                       "--pid", ",".join(str(p) for p in nginx.pids + [inside.pid])])
        try:
            probe.wait_started()
            wait_for(lambda: probe.stderr().count("uprobes on") >= 1, 10, "libssl uprobes")
            time.sleep(0.5)
            done = inside.go()
            check(done["errors"] == 10 and done["requests"] == 50, "client did %r" % done)
            check_rows(probe, "https", sport, nginx.worker, inside, done, ssl="1")
            stats = probe.latest("l7_stats")
            check(int(stats["ssl_nofd"]) == 0, "SSL calls without a socket: %r" % stats)
        finally:
            inside.close()
            probe.stop()
    finally:
        nginx.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_https.timeout = 90


class Redis:
    def __init__(self, tmp, port):
        self.proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", tmp, "--io-threads", "1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(port, self.proc, "redis-server")
        self.pids = [self.proc.pid]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_l7_redis():
    tmp = tempfile.mkdtemp(prefix="gg-l7-redis-")
    port = free_port()
    redis = Redis(tmp, port)
    try:
        inside = Client("redis", port)
        outside = Client("redis", port)
        probe = Probe(["-t", "1", "-p", "http,redis", "--pid", ",".join(str(p) for p in redis.pids + [inside.pid])])
        try:
            probe.wait_started()
            time.sleep(0.5)
            done = inside.go()
            check(done["errors"] == 10 and done["requests"] == 50, "client did %r" % done)
            # the out-of-scope client talks after the in-scope one's rows are checked: the server
            # (in scope) would count its requests too
            check_rows(probe, "redis", port, redis.proc.pid, inside, done)
            outside.go()
            time.sleep(2.5)
            check(not [r for r in probe.recs if r.get("tgid") == str(outside.pid)],
                  "the client outside the scope (%d) has rows" % outside.pid)
            s = probe.latest("l7_rpc", tgid=redis.proc.pid, l7_role="server", server_port=port)
            check(int(s["req_count"]) == 2 * done["requests"],
                  "server side counts %s requests after both clients, expected %d" % (s["req_count"],
                                                                                     2 * done["requests"]))
        finally:
            inside.close()
            outside.close()
            probe.stop()
    finally:
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_redis.timeout = 90


class Dnsmasq:
    """dnsmasq answering ok.example.test and NXDOMAIN for every other name under example.test."""

    def __init__(self, tmp, port):
        self.proc = subprocess.Popen(["dnsmasq", "--keep-in-foreground", "--port=%d" % port,
                                      "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv", "--no-hosts",
                                      "--address=/ok.example.test/192.0.2.7", "--local=/example.test/",
                                      "--pid-file=%s/dnsmasq.pid" % tmp, "--log-facility=%s/dnsmasq.log" % tmp],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(0.3)
        check(self.proc.poll() is None, "dnsmasq exited at start")
        self.pids = [self.proc.pid]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_l7_dns():
    tmp = tempfile.mkdtemp(prefix="gg-l7-dns-")
    os.chmod(tmp, 0o755)  # dnsmasq runs as nobody
    port = free_port()
    dns = Dnsmasq(tmp, port)
    try:
        inside = Client("dns", port)
        probe = Probe(["-t", "1", "-p", "dns", "--pid", ",".join(str(p) for p in dns.pids + [inside.pid])])
        try:
            probe.wait_started()
            time.sleep(0.5)
            done = inside.go()
            check(done["errors"] == 9 and done["requests"] == 45, "client did %r" % done)
            check_rows(probe, "dns", port, dns.proc.pid, inside, done)
        finally:
            inside.close()
            probe.stop()
    finally:
        dns.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_dns.timeout = 60


def test_l7_rest_snoopers():
    """PUT /l7 through the supervisor's REST API: proc_id snoopers become the scope, l7_protocol and
    the sub-probes apply; a Redis client outside the snoopers leaves no row, the server and the
    snooped client have theirs, validated by the supervisor against the .meta."""
    import urllib.parse
    from harness import Supervisor, probe_entry, rest_call, rest_port, rest_section
    tmp = tempfile.mkdtemp(prefix="gg-l7-rest-")
    port = free_port()
    redis = Redis(tmp, port)
    inside = outside = None
    s = Supervisor(probes=[probe_entry("l7probe", "-t 1", switch="off")],
                   extra=rest_section(os.path.join(tmp, "state"))).start()
    try:
        inside = Client("redis", port)
        outside = Client("redis", port)
        rport = rest_port(s)
        conf = {"cmd": {"probe": ["l7_rpc_metrics"]}, "snoopers": {"proc_id": [redis.proc.pid, inside.pid]},
                "params": {"l7_protocol": ["redis", "kafka", "mongo", "rocketmq"]}, "state": "running"}
        st, doc, raw, _ = rest_call(rport, "PUT", "/l7", urllib.parse.urlencode({"json": json.dumps(conf)}))
        check(st == 200, "PUT /l7: %d %s" % (st, raw[:300]))
        s.wait_probe("l7probe", lambda p: p["config_version_applied"] >= 1 and p["pid"], 20, "running, configured")
        # kafka and mongo map to their parsers (1 << 6, 1 << 7, with redis 1 << 4); rocketmq is ignored
        wait_for(lambda: "protocols redis,kafka,mongo,rocketmq (mask 0xd0)" in s.probe_log("l7probe"), 10,
                 "the probe's log of l7_protocol")
        done = inside.go()
        outside.go()

        def rows():
            got = {}
            for r in s.metric_records("l7_rpc"):
                if str(r["server_port"]) == str(port):
                    got[(str(r["tgid"]), r["l7_role"])] = r
            c, sv = got.get((str(inside.pid), "client")), got.get((str(redis.proc.pid), "server"))
            ok = c and sv and int(c["req_count"]) == done["requests"] and int(sv["req_count"]) == 2 * done["requests"]
            return got if ok else None
        got = wait_for(rows, 20, "l7_rpc rows of the snooped client and the server")
        time.sleep(1.5)
        check(not [r for r in s.metric_records() if str(r.get("tgid")) == str(outside.pid)],
              "the client outside the snoopers has rows")
        check(int(got[(str(inside.pid), "client")]["err_count"]) == done["errors"], "client errors: %r" % got)
        check(int(got[(str(redis.proc.pid), "server")]["err_count"]) == 2 * done["errors"], "server errors: %r" % got)
        check(got[(str(inside.pid), "client")]["protocol"] == "redis", "protocol: %r" % got)
        check(not s.metric_records("l7_link"), "l7_bytes_metrics is off: no l7_link")
        check(s.probe("l7probe")["rejected_total"] == 0, "records rejected by the supervisor")
    finally:
        for c in (inside, outside):
            if c:
                c.close()
        s.cleanup()
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_rest_snoopers.timeout = 90


def vm_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_l7_short_connections_bounded():
    """100k short HTTP connections (the server closes each) and 100 that send garbage: every request
    is counted on the server side, connections are forgotten at close (the tracked count falls
    back), the probe's memory stays flat, nothing crashes."""
    n = int(os.environ.get("GG_L7_CHURN", "100000"))
    tmp = tempfile.mkdtemp(prefix="gg-l7-churn-")
    port = free_port()
    nginx = Nginx(tmp, port)
    try:
        client = Client("churn", port, n)
        probe = Probe(["-t", "1", "-p", "http", "--pid", ",".join(str(p) for p in nginx.pids + [client.pid])])
        try:
            probe.wait_started()
            time.sleep(0.5)
            rss0 = vm_rss_kb(probe.proc.pid)
            done = client.go()
            check(done["ok"] == n, "client: %r" % done)
            keys = dict(tgid=nginx.worker, server_port=port, l7_role="server")
            wait_for(lambda: (probe.latest("l7_rpc", **keys) or {}).get("req_count") == str(n), 30,
                     "server-side l7_rpc with %d requests" % n)
            time.sleep(1.5)
            rss1 = vm_rss_kb(probe.proc.pid)
            st = probe.latest("l7_stats")
            r = probe.latest("l7_rpc", **keys)
            print("  %d connections: probe RSS %d -> %d kB; stats %r" % (n, rss0, rss1, st))
            check(int(r["req_count"]) == n and int(r["err_count"]) == 0, "server side: %r" % r)
            c = probe.latest("l7_rpc", tgid=client.pid, server_port=port, l7_role="client")
            check(c is not None and int(c["req_count"]) == n, "client side: %r" % c)
            check(int(st["ringbuf_full"]) == 0 and int(st["conn_overflow"]) == 0, "losses: %r" % st)
            check(int(st["conns"]) <= 10, "connections still tracked after they closed: %s" % st["conns"])
            if "san" not in os.environ.get("GG_BUILD", ""):  # ASan keeps freed memory in quarantine
                check(rss1 - rss0 < 16 * 1024, "probe RSS grew by %d kB over %d connections" % (rss1 - rss0, n))
            # the garbage connections: no request counted; nginx answers 400, a response without its request
            check(int(st["untracked"]) + int(st["unparsable"]) + int(st["resp_unmatched"]) >= 100,
                  "garbage not counted: %r" % st)
        finally:
            client.close()
            probe.stop()
    finally:
        nginx.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_short_connections_bounded.timeout = 240


PG_BIN = "/usr/lib/postgresql/15/bin"


class Postgres:
    """A throw-away cluster (initdb, trust authentication) run as the postgres user on loopback."""

    def __init__(self, tmp, port):
        data = os.path.join(tmp, "data")
        shutil.chown(tmp, "postgres", "postgres")
        subprocess.run([os.path.join(PG_BIN, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"],
                       check=True, capture_output=True, user="postgres", group="postgres", cwd=tmp)
        self.log = open(os.path.join(tmp, "pg.log"), "w")
        self.proc = subprocess.Popen([os.path.join(PG_BIN, "postgres"), "-D", data, "-p", str(port), "-k", tmp,
                                      "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
                                     stdout=self.log, stderr=self.log, user="postgres", group="postgres", cwd=tmp,
                                     start_new_session=True)
        wait_port(port, self.proc, "postgres", timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def test_l7_pgsql():
    tmp = tempfile.mkdtemp(prefix="gg-l7-pg-")
    port = free_port()
    pg = Postgres(tmp, port)
    try:
        inside = Client("pgsql", port)
        backend = inside.ready["backend"]
        probe = Probe(["-t", "1", "-p", "pgsql", "--pid", "%d,%d,%d" % (pg.proc.pid, backend, inside.pid)])
        try:
            probe.wait_started()
            time.sleep(0.5)
            done = inside.go()
            check(done["errors"] == 9 and done["requests"] == 50, "client did %r" % done)
            check_rows(probe, "pgsql", port, backend, inside, done)
        finally:
            inside.close()
            probe.stop()
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_pgsql.timeout = 120


class Mariadb:
    """A throw-away mariadb (mysql_install_db into a temporary directory) run as the mysql user on
    loopback, without grant tables (any user, no password)."""

    def __init__(self, tmp, port):
        data = os.path.join(tmp, "data")
        shutil.chown(tmp, "mysql", "mysql")
        r = subprocess.run(["mysql_install_db", "--no-defaults", "--datadir=" + data, "--user=mysql",
                            "--skip-test-db", "--auth-root-authentication-method=normal"],
                           capture_output=True, text=True, cwd=tmp)
        check(r.returncode == 0, "mysql_install_db: %s" % (r.stdout + r.stderr)[-2000:])
        self.log = os.path.join(tmp, "mariadb.log")
        self.proc = subprocess.Popen(["mariadbd", "--no-defaults", "--datadir=" + data, "--user=mysql",
                                      "--port=%d" % port, "--bind-address=127.0.0.1",
                                      "--socket=" + os.path.join(tmp, "sock"), "--pid-file=" + os.path.join(tmp, "pid"),
                                      "--skip-grant-tables", "--skip-log-bin", "--innodb-buffer-pool-size=16M",
                                      "--log-error=" + self.log],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_port(port, self.proc, "mariadbd", timeout=60)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def test_l7_mysql():
    tmp = tempfile.mkdtemp(prefix="gg-l7-my-")
    port = free_port()
    db = Mariadb(tmp, port)
    try:
        inside = Client("mysql", port)
        probe = Probe(["-t", "1", "-p", "mysql", "--pid", "%d,%d" % (db.proc.pid, inside.pid)])
        try:
            probe.wait_started()
            time.sleep(0.5)
            done = inside.go()
            check(done["errors"] == 8 and done["requests"] == 40, "client did %r" % done)
            check_rows(probe, "mysql", port, db.proc.pid, inside, done)
        finally:
            inside.close()
            probe.stop()
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_l7_mysql.timeout = 150
