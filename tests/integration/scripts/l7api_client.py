"""l7api_client.py - a client for test_l7api.py: one keep-alive connection, then the requests given
as one JSON line on stdin, each sent after the previous response was read; prints what the server
answered as one JSON line. Waits for its requests after printing {"ready": pid} so that the test can
put it in the probe's scope first.

Usage: l7api_client.py http|redis PORT
  http:  stdin [["GET", "/path"], ["GET", "/p", {"header": "value"}], ...] -> {"status": [200, 404, ...]}
  redis: stdin [["SET", "k", "v"], ...]  -> {"errors": [false, true, ...]}
"""
import json
import os
import socket
import sys

from l7_client import Conn  # buffered line and length reads of one connection


def http_one(c, method, path, headers=None):
    extra = "".join("%s: %s\r\n" % kv for kv in (headers or {}).items())
    c.sock.sendall(("%s %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (method, path, extra)).encode())
    status = int(c.line().split()[1])
    length = 0
    while True:
        h = c.line()
        if not h:
            break
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    if method != "HEAD":
        c.take(length)
    return status


def resp_read(c):
    """One RESP2 reply; True when it is an error."""
    line = c.line()
    t = line[:1]
    if t == b"-":
        return True
    if t == b"$":
        n = int(line[1:])
        if n >= 0:
            c.take(n + 2)
    elif t == b"*":
        n = int(line[1:])
        for _ in range(max(n, 0)):
            resp_read(c)
    return False


def redis_one(c, args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    c.sock.sendall(out)
    return resp_read(c)


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    c = Conn(socket.create_connection(("127.0.0.1", port)))
    print(json.dumps({"ready": os.getpid()}), flush=True)
    while True:
        line = sys.stdin.readline()
        if not line or line.strip() == "bye":
            return
        reqs = json.loads(line)
        if mode == "http":
            print(json.dumps({"status": [http_one(c, *r) for r in reqs]}), flush=True)
        else:
            print(json.dumps({"errors": [redis_one(c, r) for r in reqs]}), flush=True)


if __name__ == "__main__":
    main()
