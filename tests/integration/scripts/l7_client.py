"""l7_client.py - a client for test_l7.py that sends a known number of requests over one keep-alive
connection, some of them errors, some pipelined, and prints what it did as one JSON line: requests,
errors, and the sum of the latencies it measured (from just before the send of a request to just
after the receive that completed its response, in ns).

Usage: l7_client.py MODE PORT [N]   (MODE: http, https, redis, dns, pgsql, mysql, churn). Prints {"ready": pid} first and waits
for a line on stdin before it starts, so that the test can put it in the probe's scope."""
import json
import os
import socket
import ssl
import struct
import sys
import time


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.sent = 0
        self.recv_ns = 0
        self.plain = not isinstance(sock, ssl.SSLSocket)

    def send(self, data):
        if not self.plain:
            self.sock.sendall(data)
            return
        while data:
            data = data[os.write(self.sock.fileno(), data):]

    def fill(self):
        # os.read/os.write on plain sockets: the thinnest calls Python has, so that the interpreter's
        # time between the clock reads and the system calls stays small beside the server's
        d = os.read(self.sock.fileno(), 65536) if self.plain else self.sock.recv(65536)
        self.recv_ns = now_ns()  # right after the receive, as close as we can get to its exit
        if not d:
            raise SystemExit("server closed the connection")
        self.buf += d

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        out, self.buf = self.buf.split(b"\r\n", 1)
        return out

    def has_complete(self, parse):
        """Whether buf holds a whole response (parse returns its length or None)."""
        return parse(self.buf) is not None


def http_len(buf):
    """Length of the complete HTTP response at the start of buf, or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end].decode("latin-1").split("\r\n")
    clen = 0
    for h in head[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "content-length":
            clen = int(v.strip())
    total = end + 4 + clen
    return total if len(buf) >= total else None


def http_status(buf):
    return int(buf.split(b" ", 2)[1])


def redis_len(buf):
    """Length of the complete RESP2 reply (simple, error, integer or bulk) at the start of buf."""
    eol = buf.find(b"\r\n")
    if eol < 0:
        return None
    if buf[:1] == b"$":
        n = int(buf[1:eol])
        total = eol + 2 + (n + 2 if n >= 0 else 0)
        return total if len(buf) >= total else None
    return eol + 2


def nonvoluntary():
    """Involuntary context switches of this process so far: a preemption inside a timed window adds
    time the probe (which times the system calls) does not see."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("nonvoluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0


def pg_len(buf):
    """Length of the complete PostgreSQL response (messages up to ReadyForQuery) at the start of buf."""
    off = 0
    while off + 5 <= len(buf):
        t = buf[off:off + 1]
        ln = struct.unpack(">I", buf[off + 1:off + 5])[0]
        if off + 1 + ln > len(buf):
            return None
        off += 1 + ln
        if t == b"Z":
            return off
    return None


def pg_is_error(resp):
    off = 0
    while off < len(resp):
        if resp[off:off + 1] == b"E":
            return True
        off += 1 + struct.unpack(">I", resp[off + 1:off + 5])[0]
    return False


def pg_msg(t, body):
    return t + struct.pack(">I", len(body) + 4) + body


def pg_query(sql):
    return pg_msg(b"Q", sql.encode() + b"\0")


def pg_extended(sql):
    """Parse, Bind, Execute, Sync of an unnamed statement without parameters: one request."""
    return (pg_msg(b"P", b"\0" + sql.encode() + b"\0" + b"\0\0") +
            pg_msg(b"B", b"\0\0" + b"\0\0" + b"\0\0" + b"\0\0") +
            pg_msg(b"E", b"\0" + b"\0\0\0\0") + pg_msg(b"S", b""))


def pg_connect(c):
    """Startup (trust authentication) up to the first ReadyForQuery; returns the backend's pid."""
    body = struct.pack(">I", 196608) + b"user\0postgres\0database\0postgres\0\0"
    c.send(struct.pack(">I", len(body) + 4) + body)
    while pg_len(c.buf) is None:
        c.fill()
    n = pg_len(c.buf)
    resp, c.buf = c.buf[:n], c.buf[n:]
    off, pid = 0, 0
    while off < len(resp):
        t = resp[off:off + 1]
        ln = struct.unpack(">I", resp[off + 1:off + 5])[0]
        if t == b"K":
            pid = struct.unpack(">I", resp[off + 5:off + 9])[0]
        if t == b"E":
            raise SystemExit("postgres refused the connection: %r" % resp)
        off += 1 + ln
    return pid


def my_packets(buf):
    """[(seq, payload)] of the whole MySQL packets at the start of buf, and the bytes they span."""
    out, off = [], 0
    while off + 4 <= len(buf):
        ln = buf[off] | buf[off + 1] << 8 | buf[off + 2] << 16
        if off + 4 + ln > len(buf):
            break
        out.append((buf[off + 3], buf[off + 4:off + 4 + ln]))
        off += 4 + ln
    return out, off


def my_len(buf):
    """Length of the complete response to a COM_QUERY (OK, ERR, or a result set ended by EOF packets;
    the client does not set CLIENT_DEPRECATE_EOF)."""
    pkts, _ = my_packets(buf)
    if not pkts:
        return None
    first = pkts[0][1]
    if first[:1] in (b"\x00", b"\xff"):
        return 4 + len(first)
    eofs, off = 0, 0
    for _, p in pkts:
        off += 4 + len(p)
        if p[:1] == b"\xfe" and len(p) < 9:
            eofs += 1
            if eofs == 2:
                return off
        elif p[:1] == b"\xff" and eofs == 1:
            return off
    return None


def my_packet(seq, payload):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def my_connect(c):
    """Handshake as root without a password (the server runs --skip-grant-tables)."""
    while not my_packets(c.buf)[0]:
        c.fill()
    pkts, n = my_packets(c.buf)
    c.buf = c.buf[n:]
    caps = 0x00000200 | 0x00008000 | 0x00080000  # PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
    resp = struct.pack("<IIB", caps, 1 << 24, 33) + b"\0" * 23 + b"root\0" + b"\0" + b"mysql_native_password\0"
    c.send(my_packet(pkts[0][0] + 1, resp))
    while True:
        while not my_packets(c.buf)[0]:
            c.fill()
        pkts, n = my_packets(c.buf)
        c.buf = c.buf[n:]
        seq, p = pkts[0]
        if p[:1] == b"\x00":
            return
        if p[:1] == b"\xfe":  # AuthSwitchRequest: an empty password
            c.send(my_packet(seq + 1, b""))
            continue
        raise SystemExit("mariadb refused the connection: %r" % p)


def exchange(c, reqs, parse, is_error):
    """Send reqs in one write (pipelined when more than one), read as many responses; returns
    (errors, latency ns summed over the requests)."""
    data = b"".join(reqs)
    t0 = now_ns()
    c.send(data)
    c.sent += sum(len(r) for r in reqs)
    errors = 0
    lat = 0
    for _ in reqs:
        while True:
            n = parse(c.buf)
            if n is not None:
                break
            c.fill()
        t1 = c.recv_ns  # the receive that completed this response
        resp, c.buf = c.buf[:n], c.buf[n:]
        errors += 1 if is_error(resp) else 0
        lat += t1 - t0
    return errors, lat


def dns_query(qid, name):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)


def dns(port, n):
    """Queries over a connected UDP socket, with os.write/os.read (the thinnest calls Python has, so
    that the interpreter's time between the system calls stays small beside dnsmasq's few tens of
    us): every fifth one for a name that does not exist (NXDOMAIN), then five sent at once and
    answered by id. dnsmasq's side is unconnected (recvmsg/sendmsg with the peer's address)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.connect(("127.0.0.1", port))
    fd = s.fileno()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sys.stdin.readline()
    done = {"requests": 0, "errors": 0, "latency_ns": 0, "pipelined": 5, "bytes_sent": 0, "preempted": 0}

    def run(names):
        nv = nonvoluntary()
        run1(names)
        done["preempted"] += nonvoluntary() - nv

    def run1(names):
        ids = {}
        qs = []
        for name in names:
            qid = (done["requests"] + len(ids) + 1) & 0xffff
            qs.append(dns_query(qid, name))
            ids[qid] = name
            done["bytes_sent"] += len(qs[-1])
        t0 = now_ns()
        for q in qs:
            os.write(fd, q)
        while ids:
            r = os.read(fd, 4096)
            t1 = now_ns()  # right after the receive
            qid, flags = struct.unpack(">HH", r[:4])
            if qid not in ids:
                continue
            del ids[qid]
            done["requests"] += 1
            done["errors"] += 1 if flags & 0xf else 0
            done["latency_ns"] += t1 - t0

    for i in range(n):
        run(["nx%d.example.test" % i if i % 5 == 4 else "ok.example.test"])
    run(["ok.example.test", "nxa.example.test", "ok.example.test", "ok.example.test", "ok.example.test"])
    print(json.dumps(done), flush=True)
    sys.stdin.readline()
    s.close()


def churn(port, n):
    """n short connections, one HTTP/1.0 request each (the server closes), then 100 that send
    garbage and close; prints how many answered 200."""
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sys.stdin.readline()
    ok = 0
    req = b"GET /small.html HTTP/1.0\r\n\r\n"
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        os.write(s.fileno(), req)
        resp = b""
        while True:
            d = os.read(s.fileno(), 65536)
            if not d:
                break
            resp += d
        ok += resp.startswith(b"HTTP/1.1 200")
        s.close()
    for i in range(100):
        s = socket.create_connection(("127.0.0.1", port))
        os.write(s.fileno(), bytes((i * 37 + k) & 0xff for k in range(64)))
        s.close()
    print(json.dumps({"requests": n, "ok": ok}), flush=True)
    sys.stdin.readline()


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    if mode == "dns":
        return dns(port, n)
    if mode == "churn":
        return churn(port, n)
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "https":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        sock = ctx.wrap_socket(sock)
    c = Conn(sock)
    ready = {"ready": os.getpid()}
    if mode == "pgsql":
        ready["backend"] = pg_connect(c)
    elif mode == "mysql":
        my_connect(c)
    print(json.dumps(ready), flush=True)
    sys.stdin.readline()
    done = {"requests": 0, "errors": 0, "latency_ns": 0, "pipelined": 0, "preempted": 0}

    def run(reqs, parse, is_error):
        nv = nonvoluntary()
        e, lat = exchange(c, reqs, parse, is_error)
        done["preempted"] += nonvoluntary() - nv
        done["requests"] += len(reqs)
        done["errors"] += e
        done["latency_ns"] += lat

    if mode in ("http", "https"):
        ok = b"GET /small.html HTTP/1.1\r\nHost: t\r\n\r\n"
        bad = b"GET /missing.html HTTP/1.1\r\nHost: t\r\n\r\n"
        for i in range(n):
            run([bad if i % 5 == 4 else ok], http_len, lambda r: http_status(r) >= 400)
        # pipelined: 10 requests in one write, 2 of them 404
        run([ok, ok, bad, ok, ok, ok, ok, bad, ok, ok], http_len, lambda r: http_status(r) >= 400)
        done["pipelined"] = 10
    elif mode == "redis":
        for i in range(n):
            if i % 5 == 4:
                run([b"*1\r\n$7\r\nNOSUCHX\r\n"], redis_len, lambda r: r[:1] == b"-")
            elif i % 2:
                run([b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"], redis_len, lambda r: r[:1] == b"-")
            else:
                run([b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"], redis_len, lambda r: r[:1] == b"-")
        pipe = [b"*2\r\n$4\r\nINCR\r\n$3\r\ncnt\r\n"] * 8 + [b"*1\r\n$7\r\nNOSUCHX\r\n"] * 2
        run(pipe, redis_len, lambda r: r[:1] == b"-")
        done["pipelined"] = len(pipe)
    elif mode == "pgsql":
        for i in range(n):
            if i % 5 == 4:
                run([pg_query("SELEC 1")], pg_len, pg_is_error)
            elif i % 2:
                run([pg_extended("SELECT generate_series(1, 20)")], pg_len, pg_is_error)
            else:
                run([pg_query("SELECT %d, repeat('x', 100)" % i)], pg_len, pg_is_error)
        pipe = [pg_query("SELECT 1")] * 4 + [pg_query("SELECT * FROM no_such_table")] + [pg_extended("SELECT 2")] * 5
        run(pipe, pg_len, pg_is_error)
        done["pipelined"] = len(pipe)
    elif mode == "mysql":
        for i in range(n):
            if i % 5 == 4:
                sql = b"SELEC 1"
            elif i % 2:
                sql = b"SELECT 1, 'two', 3.0"
            else:
                sql = b"SELECT seq FROM mysql.seq_1_to_20"
            run([my_packet(0, b"\x03" + sql)], my_len, lambda r: r[4:5] == b"\xff")
    else:
        raise SystemExit("unknown mode " + mode)
    done["bytes_sent"] = c.sent
    print(json.dumps(done), flush=True)
    # stay connected until told to go: the probe reports the connection while it is open
    sys.stdin.readline()
    sock.close()


if __name__ == "__main__":
    main()
