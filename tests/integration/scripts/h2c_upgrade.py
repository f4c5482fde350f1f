#!/usr/bin/env python3
"""h2c_upgrade.py - an HTTP/1.1 -> HTTP/2 cleartext upgrade (RFC 7540 3.2), both ends, wire-exact
(Debian has no server that does it: nginx and nghttpd speak h2c with prior knowledge only). HPACK as
literals without indexing, raw strings.

  h2c_upgrade.py server PORT      prints "ready", serves one connection: the upgrade request is answered
                                  101, then on stream 1 in HTTP/2; every later stream gets 404 when its
                                  :path holds "nope", else 200 with a body
  h2c_upgrade.py client PORT N    connects, prints {"ready": pid}, on "go": the upgrade (GET /up), then N
                                  requests on streams 3, 5, ... one at a time, every fifth to /nope;
                                  prints {"requests": N + 1, "errors": ..}; exits on "bye"."""
import json
import os
import socket
import struct
import sys

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS = 0, 1, 4
END_STREAM, END_HEADERS, ACK = 1, 4, 1


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def hstr(s):
    b = s.encode()
    assert len(b) < 127
    return bytes([len(b)]) + b


def block(fields):
    """Literal header fields without indexing, new names, raw strings."""
    return b"".join(b"\x00" + hstr(n) + hstr(v) for n, v in fields)


def unblock(p):
    """The fields of a block made by block()."""
    out, i = {}, 0
    while i < len(p):
        assert p[i] == 0
        n = p[i + 2:i + 2 + p[i + 1]]
        i += 2 + p[i + 1]
        v = p[i + 1:i + 1 + p[i]]
        i += 1 + p[i]
        out[n.decode()] = v.decode()
    return out


class Conn:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line_block(self):
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head.decode()

    def frame(self):
        h = self.need(9)
        n = struct.unpack(">I", b"\0" + h[:3])[0]
        return h[3], h[4], struct.unpack(">I", h[5:9])[0] & 0x7fffffff, self.need(n)


def respond(s, sid, path):
    status = "404" if "nope" in path else "200"
    body = b"not here\n" if status == "404" else b"hello from stream %d\n" % sid
    s.sendall(frame(HEADERS, END_HEADERS, sid, block([(":status", status), ("content-length", str(len(body)))]))
              + frame(DATA, END_STREAM, sid, body))


def server(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    print("ready", flush=True)
    s, _ = ls.accept()
    c = Conn(s)
    head = c.line_block()
    assert "upgrade: h2c" in head.lower(), head
    path = head.split("\r\n")[0].split()[1]
    s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
    s.sendall(frame(SETTINGS, 0, 0))
    respond(s, 1, path)
    assert c.need(len(PREFACE)) == PREFACE
    try:
        while True:
            ftype, flags, sid, payload = c.frame()
            if ftype == SETTINGS and not flags & ACK:
                s.sendall(frame(SETTINGS, ACK, 0))
            elif ftype == HEADERS:
                respond(s, sid, unblock(payload).get(":path", ""))
    except EOFError:
        pass
    s.close()


def client(port, n):
    s = socket.create_connection(("127.0.0.1", port))
    c = Conn(s)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    errors = 0

    def answer(sid):
        nonlocal errors
        while True:
            ftype, flags, fsid, payload = c.frame()
            if ftype == HEADERS and fsid == sid and unblock(payload)[":status"] >= "400":
                errors += 1
            if fsid == sid and flags & END_STREAM:
                return
    s.sendall(b"GET /up HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
              b"HTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n")
    assert c.line_block().startswith("HTTP/1.1 101")
    s.sendall(PREFACE + frame(SETTINGS, 0, 0))
    answer(1)
    for i in range(n):
        sid = 3 + 2 * i
        path = "/nope/%d" % i if i % 5 == 4 else "/a/%d" % i
        s.sendall(frame(HEADERS, END_HEADERS | END_STREAM, sid, block([(":method", "GET"), (":scheme", "http"),
                                                                          (":authority", "127.0.0.1"),
                                                                          (":path", path)])))
        answer(sid)
    print(json.dumps({"requests": n + 1, "errors": errors}), flush=True)
    sys.stdin.readline()
    s.close()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]))
    else:
        client(int(sys.argv[2]), int(sys.argv[3]))
