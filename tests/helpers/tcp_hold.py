#!/usr/bin/env python3
"""tcp_hold.py - peers for tcpprobe's seeding and tcp_delay tests. Prints JSON lines; errors go to
stderr with exit status 1.

  serve PORT A R1 B R2     accept one link: read A bytes, send R1, read B, send R2, wait for EOF
  hold HOST PORT A R1 B R2 connect; send A, read R1; print "ready" and wait for a line on stdin (the
                           test starts the probe then); send B, read R2; close
  slow_reader PORT N SIZE DELAY_MS
                           accept one link; N times: wait until data is readable (poll), sleep
                           DELAY_MS, read SIZE bytes, answer one byte
  writer HOST PORT N SIZE  connect; N times: send SIZE bytes, wait for the one-byte answer
  prefork PORT SIZE HOLD_MS
                           listen, fork; the child accepts one link, reads SIZE bytes, waits HOLD_MS
  client_hold HOST PORT SIZE
                           connect, send SIZE bytes, wait for the server to close
"""
import json
import select
import socket
import sys
import time


def read_exact(c, n):
    got = 0
    while got < n:
        b = c.recv(min(65536, n - got))
        if not b:
            raise SystemExit("peer closed after %d of %d bytes" % (got, n))
        got += len(b)


def listen(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(4)
    print(json.dumps({"ready": True}), flush=True)
    return ls


def serve(port, a, r1, b, r2):
    c, peer = listen(port).accept()
    read_exact(c, a)
    c.sendall(b"s" * r1)
    read_exact(c, b)
    c.sendall(b"s" * r2)
    while c.recv(65536):
        pass
    c.close()
    print(json.dumps({"peer_port": peer[1]}), flush=True)


def hold(host, port, a, r1, b, r2):
    c = socket.create_connection((host, port), timeout=60)
    c.sendall(b"c" * a)
    read_exact(c, r1)
    print(json.dumps({"ready": True, "lport": c.getsockname()[1]}), flush=True)
    sys.stdin.readline()
    c.sendall(b"c" * b)
    read_exact(c, r2)
    lport = c.getsockname()[1]
    c.close()
    print(json.dumps({"lport": lport}), flush=True)


def slow_reader(port, n, size, delay_ms):
    c, peer = listen(port).accept()
    p = select.poll()
    p.register(c, select.POLLIN)
    waited = []
    for _ in range(n):
        p.poll(60000)
        t = time.monotonic()
        time.sleep(delay_ms / 1000.0)
        read_exact(c, size)
        waited.append(round((time.monotonic() - t) * 1e6))
        c.sendall(b"k")
    while c.recv(65536):
        pass
    c.close()
    print(json.dumps({"peer_port": peer[1], "waited_us": waited}), flush=True)


def writer(host, port, n, size):
    c = socket.create_connection((host, port), timeout=60)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(n):
        c.sendall(b"w" * size)
        read_exact(c, 1)
    lport = c.getsockname()[1]
    c.close()
    print(json.dumps({"lport": lport}), flush=True)


def prefork(port, size, hold_ms):
    """Listen in this process, accept in a forked child (as nginx and other prefork servers do)."""
    import os
    ls = listen(port)
    child = os.fork()
    if child == 0:
        c, peer = ls.accept()
        read_exact(c, size)
        time.sleep(hold_ms / 1000.0)
        c.close()
        os._exit(0)
    ls.close()
    _, status = os.waitpid(child, 0)
    print(json.dumps({"child": child, "status": status}), flush=True)


def client_hold(host, port, size):
    c = socket.create_connection((host, port), timeout=60)
    c.sendall(b"c" * size)
    lport = c.getsockname()[1]
    while c.recv(65536):
        pass
    c.close()
    print(json.dumps({"lport": lport}), flush=True)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve(*map(int, args))
    elif cmd == "hold":
        hold(args[0], *map(int, args[1:]))
    elif cmd == "slow_reader":
        slow_reader(*map(int, args))
    elif cmd == "prefork":
        prefork(*map(int, args))
    elif cmd == "client_hold":
        client_hold(args[0], *map(int, args[1:]))
    elif cmd == "writer":
        writer(args[0], *map(int, args[1:]))
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main()
