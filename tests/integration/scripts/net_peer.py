#!/usr/bin/env python3
"""net_peer.py - the network tests' own client and server: moves a known number of bytes, or
misbehaves on purpose (a listener that never accepts, connects to closed ports, UDP to a closed
port). Prints one JSON line with what it did; errors go to stderr with exit status 1."""
import json
import socket
import sys
import time

CHUNK = 65536


def drain(c):
    """Read c to its end: how many bytes came."""
    n = 0
    while True:
        b = c.recv(CHUNK)
        if not b:
            return n
        n += len(b)


def serve(port, reply, count, host="0.0.0.0"):
    """Accept `count` connections one after the other; read each to EOF, then send `reply` bytes."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(16)
    print(json.dumps({"ready": True}), flush=True)
    got = []
    for _ in range(count):
        c, _ = ls.accept()
        n = drain(c)
        if reply:
            c.sendall(b"r" * reply)
        c.close()
        got.append(n)
    print(json.dumps({"received": got}), flush=True)


def client(host, port, size, expect):
    c = socket.create_connection((host, port), timeout=60)
    lport = c.getsockname()[1]
    buf = b"c" * CHUNK
    left = size
    while left:
        left -= c.send(buf[:min(left, CHUNK)])
    c.shutdown(socket.SHUT_WR)
    n = drain(c)
    c.close()
    if n != expect:
        sys.exit("expected %d bytes back, got %d" % (expect, n))
    print(json.dumps({"sent": size, "received": n, "lport": lport}), flush=True)


def backlog(port, host="0.0.0.0"):
    """Listen with backlog 1 and never accept, until killed."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(1)
    print(json.dumps({"ready": True}), flush=True)
    time.sleep(3600)


def connect_many(host, port, count, timeout):
    """Start `count` non-blocking connects and keep them open `timeout` seconds."""
    socks, ok = [], 0
    for _ in range(count):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        socks.append(s)
    time.sleep(timeout)
    for s in socks:
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
            ok += 1
        s.close()
    print(json.dumps({"started": count, "no_error": ok}), flush=True)


def connect_closed(host, port):
    s = socket.socket()
    try:
        s.connect((host, port))
    except ConnectionRefusedError:
        print(json.dumps({"refused": True, "lport": s.getsockname()[1]}), flush=True)
        return
    sys.exit("connect to a closed port succeeded")


def udp_send(host, port, count, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(count):
        s.sendto(b"u" * size, (host, port))
        time.sleep(0.002)
    print(json.dumps({"sent": count, "lport": s.getsockname()[1]}), flush=True)


def udp_churn(host, port, sockets):
    """Short-lived UDP sockets one after another: socket i sends i % 3 + 1 datagrams and closes. A
    closed socket's memory comes back (after an RCU grace period) for the next ones, so a probe that
    keys sockets by address credits one socket's traffic to another."""
    sent, reused = {}, set()
    for i in range(sockets):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(i % 3 + 1):
            s.sendto(b"c" * 10, (host, port))
        lport = s.getsockname()[1]
        if lport in sent:  # the same ephemeral port twice: its rows may come in different reports
            reused.add(lport)
        sent[lport] = i % 3 + 1
        s.close()
        time.sleep(0.03)
    print(json.dumps({"sent": {p: n for p, n in sent.items() if p not in reused}}), flush=True)


def udp_echo(port, count):
    """Receive `count` datagrams and answer each with the same bytes."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    print(json.dumps({"ready": True}), flush=True)
    n = 0
    for _ in range(count):
        b, peer = s.recvfrom(CHUNK)
        n += len(b)
        s.sendto(b, peer)
    print(json.dumps({"received": n}), flush=True)


def udp_ping(host, port, count, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    n = 0
    for _ in range(count):
        s.sendto(b"p" * size, (host, port))
        n += len(s.recvfrom(CHUNK)[0])
    print(json.dumps({"sent": count * size, "received": n, "lport": s.getsockname()[1]}), flush=True)


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "serve":
        serve(int(args[0]), int(args[1]), int(args[2]))
    elif cmd == "client":
        client(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "backlog":
        backlog(int(args[0]))
    elif cmd == "connect_many":
        connect_many(args[0], int(args[1]), int(args[2]), float(args[3]))
    elif cmd == "connect_closed":
        connect_closed(args[0], int(args[1]))
    elif cmd == "udp_send":
        udp_send(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "udp_churn":
        udp_churn(args[0], int(args[1]), int(args[2]))
    elif cmd == "udp_echo":
        udp_echo(int(args[0]), int(args[1]))
    elif cmd == "udp_ping":
        udp_ping(args[0], int(args[1]), int(args[2]), int(args[3]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
