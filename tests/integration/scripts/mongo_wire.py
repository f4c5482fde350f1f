"""mongo_wire.py - a MongoDB wire-protocol server and client for test_l7api.py (Debian 12 has no
MongoDB): OP_MSG requests with a kind 0 body (and a kind 1 document sequence for inserts), answered
by OP_MSG replies as mongod shapes them ({ok: 1.0, ...}, or {ok: 0.0, errmsg, code, codeName} for a
collection named "missing"); BSON encoded and decoded here, by the spec (bsonspec.org).

Usage: mongo_wire.py server PORT        serves until killed; prints {"ready": pid} once listening
       mongo_wire.py client PORT        prints {"ready": pid}, then for each stdin line
                                        [["find", "coll"], ["insert", "coll"], ...] sends each command
                                        over one connection (opened at the first line) and prints
                                        {"ok": [1, 0, ...]}
"""
import json
import os
import socket
import socketserver
import struct
import sys

import wire_peer

OP_MSG = 2013


def bson_elem(key, v):
    k = key.encode() + b"\x00"
    if isinstance(v, bool):
        return b"\x08" + k + (b"\x01" if v else b"\x00")
    if isinstance(v, int):
        return b"\x10" + k + struct.pack("<i", v)
    if isinstance(v, float):
        return b"\x01" + k + struct.pack("<d", v)
    if isinstance(v, str):
        s = v.encode() + b"\x00"
        return b"\x02" + k + struct.pack("<i", len(s)) + s
    if isinstance(v, list):
        return b"\x04" + k + bson_doc([(str(i), x) for i, x in enumerate(v)])
    return b"\x03" + k + bson_doc(v)


def bson_doc(items):
    """items: a list of (key, value) pairs (order matters: the command name is the first key)."""
    if isinstance(items, dict):
        items = list(items.items())
    body = b"".join(bson_elem(k, v) for k, v in items)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def bson_first(doc):
    """(first key, its value when a string) of a BSON document."""
    i = 4
    t = doc[i]
    end = doc.index(b"\x00", i + 1)
    key = doc[i + 1:end].decode()
    val = None
    if t == 2:
        n = struct.unpack_from("<i", doc, end + 1)[0]
        val = doc[end + 5:end + 5 + n - 1].decode()
    return key, val


def op_msg(req_id, to, doc, seq=None):
    body = struct.pack("<I", 0) + b"\x00" + doc
    if seq:
        ident, docs = seq
        payload = ident.encode() + b"\x00" + b"".join(docs)
        body += b"\x01" + struct.pack("<i", len(payload) + 4) + payload
    return struct.pack("<iiii", 16 + len(body), req_id, to, OP_MSG) + body


def read_msg(sock):
    hdr = b""
    while len(hdr) < 16:
        d = sock.recv(16 - len(hdr))
        if not d:
            return None
        hdr += d
    length, req_id, to, op = struct.unpack("<iiii", hdr)
    body = b""
    while len(body) < length - 16:
        d = sock.recv(length - 16 - len(body))
        if not d:
            return None
        body += d
    return req_id, to, op, body


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        n = 0
        while True:
            m = read_msg(self.request)
            if not m:
                return
            req_id, _, op, body = m
            assert op == OP_MSG and body[4] == 0
            cmd, coll = bson_first(body[5:])
            n += 1
            if coll == "missing":
                doc = bson_doc([("ok", 0.0), ("errmsg", "ns not found"), ("code", 26),
                                ("codeName", "NamespaceNotFound")])
            elif cmd == "find":
                doc = bson_doc([("cursor", {"firstBatch": [{"_id": 1}], "id": 0, "ns": "test." + coll}),
                                ("ok", 1.0)])
            elif cmd == "insert":
                doc = bson_doc([("n", 1), ("ok", 1.0)])
            else:
                doc = bson_doc([("isWritablePrimary", True), ("maxWireVersion", 17), ("ok", 1.0)])
            self.request.sendall(op_msg(100000 + n, req_id, doc))


def client(port):
    # connects on the first line: the server's thread then reads its first request after the test
    # started the probe (a read already blocked when the probe attaches is not seen)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    sock = None
    rid = 0
    for line in sys.stdin:
        if sock is None:
            sock = socket.create_connection(("127.0.0.1", port))
        oks = []
        for cmd, coll in json.loads(line):
            rid += 1
            if cmd == "insert":
                msg = op_msg(rid, 0, bson_doc([("insert", coll), ("ordered", True), ("$db", "test")]),
                             ("documents", [bson_doc([("_id", rid), ("x", 1)])]))
            elif cmd == "hello":
                msg = op_msg(rid, 0, bson_doc([("hello", 1), ("$db", "admin")]))
            else:
                msg = op_msg(rid, 0, bson_doc([(cmd, coll), ("filter", {"x": 1}), ("$db", "test")]))
            sock.sendall(msg)
            _, to, op, body = read_msg(sock)
            assert op == OP_MSG and to == rid
            doc = body[5:]
            oks.append(0 if b"\x01ok\x00" + struct.pack("<d", 0.0) in doc else 1)
        print(json.dumps({"ok": oks}), flush=True)


if __name__ == "__main__":
    wire_peer.main(Handler, client)
