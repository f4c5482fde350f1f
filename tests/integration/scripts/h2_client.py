"""h2_client.py - a raw HTTP/2 client for test_l7_h2.py: prior knowledge over TCP (h2c) or TLS with
ALPN h2, a known number of GET requests on one connection, some of them 404, in batches of concurrent
streams; prints what it did as one JSON line: requests, errors (status >= 400) and the sum of the
latencies it measured (each stream: from just before the write of its HEADERS to just after the read
that brought its END_STREAM, in ns).

Usage: h2_client.py h2c|h2 PORT N [CONCURRENCY]. Prints {"ready": pid}, waits for "go" on stdin, then
connects (so that a probe started in between sees the connection preface), runs, prints the result
and waits for a line on stdin before it closes."""
import json
import os
import socket
import ssl
import struct
import sys
import time


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def nonvoluntary():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("nonvoluntary_ctxt_switches"):
                return int(line.split()[1])
    return 0


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


class H2:
    def __init__(self, mode, port):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.tls = mode == "h2"
        if self.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            sock = ctx.wrap_socket(sock)
            if sock.selected_alpn_protocol() != "h2":
                raise SystemExit("ALPN did not select h2: %r" % sock.selected_alpn_protocol())
        self.sock = sock
        self.buf = b""
        self.recv_ns = 0
        self.sent = 0
        self.first = True
        self.send(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) +
                  frame(8, 0, 0, struct.pack(">I", 1 << 24)))  # a large connection window
        # the server's SETTINGS, acknowledged
        while True:
            t, fl, sid, p = self.next_frame()
            if t == 4 and not fl & 1:
                self.send(frame(4, 1, 0))
                break

    def send(self, data):
        self.sent += len(data)
        if self.tls:
            self.sock.sendall(data)
            return
        while data:
            data = data[os.write(self.sock.fileno(), data):]

    def fill(self):
        d = os.read(self.sock.fileno(), 65536) if not self.tls else self.sock.recv(65536)
        self.recv_ns = now_ns()  # right after the receive
        if not d:
            raise SystemExit("server closed the connection")
        self.buf += d

    def next_frame(self):
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            self.fill()
        n = int.from_bytes(self.buf[:3], "big")
        t, fl = self.buf[3], self.buf[4]
        sid = int.from_bytes(self.buf[5:9], "big") & 0x7fffffff
        p, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
        return t, fl, sid, p

    def headers(self, sid, path):
        # :method GET, :scheme http/https (static), :path literal without indexing, :authority literal
        # with incremental indexing the first time, then that dynamic entry (62)
        block = b"\x82" + (b"\x87" if self.tls else b"\x86") + b"\x04" + bytes([len(path)]) + path
        if self.first:
            block += b"\x41\x09localhost"
            self.first = False
        else:
            block += b"\xbe"
        return frame(1, 0x05, sid, block)

    def batch(self, sids_paths):
        """Send the requests in one write; returns (errors, latency sum) once every stream ended."""
        t0 = now_ns()
        self.send(b"".join(self.headers(sid, path) for sid, path in sids_paths))
        open_ = {sid: None for sid, _ in sids_paths}
        errors, lat = 0, 0
        while open_:
            t, fl, sid, p = self.next_frame()
            if t == 1 and sid in open_ and open_[sid] is None:
                # nginx gives :status from the static table: 0x88 200, 0x8d 404 (or a literal)
                pad = p[0] if fl & 0x08 else 0
                off = (1 if fl & 0x08 else 0) + (5 if fl & 0x20 else 0)
                b = p[off]
                status = {0x88: 200, 0x89: 204, 0x8b: 304, 0x8c: 400, 0x8d: 404, 0x8e: 500}.get(b)
                if status is None and b in (0x08, 0x48, 0x18):
                    status = int(p[off + 2:off + 5])
                open_[sid] = status
                del pad
            elif t == 8 or t == 6:
                if t == 6 and not fl & 1:
                    self.send(frame(6, 1, 0, p))
                continue
            elif t == 3 and sid in open_:
                raise SystemExit("stream %d reset" % sid)
            if t in (0, 1) and fl & 1 and sid in open_:
                if t == 0 and p:
                    self.send(frame(8, 0, sid, struct.pack(">I", len(p))))
                status = open_.pop(sid)
                errors += 1 if status is None or status >= 400 else 0
                lat += self.recv_ns - t0
            if t == 0 and p and not fl & 1:
                # keep the stream's window open for bodies larger than 64 KiB
                self.send(frame(8, 0, sid, struct.pack(">I", len(p))))
        return errors, lat


def main():
    mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    conc = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    print(json.dumps({"ready": os.getpid()}), flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    c = H2(mode, port)
    done = {"requests": 0, "errors": 0, "latency_ns": 0, "preempted": 0}
    sid = 1
    while done["requests"] < n:
        k = min(conc, n - done["requests"])
        reqs = []
        for _ in range(k):
            i = done["requests"] + len(reqs)
            reqs.append((sid, b"/missing.html" if i % 5 == 4 else b"/small.html"))
            sid += 2
        nv = nonvoluntary()
        e, lat = c.batch(reqs)
        done["preempted"] += nonvoluntary() - nv
        done["requests"] += k
        done["errors"] += e
        done["latency_ns"] += lat
    done["bytes_sent"] = c.sent
    print(json.dumps(done), flush=True)
    sys.stdin.readline()
    c.sock.close()


if __name__ == "__main__":
    main()
