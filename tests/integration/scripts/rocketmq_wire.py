"""rocketmq_wire.py - a RocketMQ remoting-protocol peer for test_l7api.py (Debian 12 has no RocketMQ):
a name server + broker that answers GET_ROUTEINFO_BY_TOPIC, SEND_MESSAGE(_V2), PULL_MESSAGE and
HEART_BEAT as the Java ones do (TOPIC_NOT_EXIST for a topic named "missing", PULL_NOT_FOUND once the
topic is read, REQUEST_CODE_NOT_SUPPORTED for other codes), and a client. Frames as RemotingCommand
encodes them: 4-byte length, 4-byte serialize type (high byte: 0 JSON, 1 ROCKETMQ) + header length,
the header, the body. JSON headers are written as fastjson does (keys sorted, "language":"JAVA") or
in the Go client's field order ("language":"GO"); the server answers in the request's encoding.
Requests on topics starting with "slow" are answered 100 ms later, while the connection's other
requests are answered at once (responses then come out of order: they pair by opaque). After each
HEART_BEAT the server asks the client GET_CONSUMER_RUNNING_INFO (a request from the server, which the
client answers). Oneway requests (flag bit 1) get no answer.

Usage: rocketmq_wire.py server PORT     serves until killed; prints {"ready": pid} once listening
       rocketmq_wire.py client PORT     prints {"ready": pid}, then for each stdin line
                                        {"enc": "binary"|"json"|"json-go", "pipeline": bool,
                                         "reqs": [[code name, topic, oneway], ...]}
                                        sends them over that encoding's connection (opened at its first
                                        line) and prints {"codes": [response code or null, ...]}
"""
import json
import os
import socket
import socketserver
import struct
import sys

import wire_peer
import threading

CODES = {"SEND_MESSAGE": 10, "PULL_MESSAGE": 11, "QUERY_MESSAGE": 12, "UPDATE_CONSUMER_OFFSET": 15,
         "HEART_BEAT": 34, "GET_ROUTEINFO_BY_TOPIC": 105, "GET_CONSUMER_RUNNING_INFO": 307,
         "SEND_MESSAGE_V2": 310, "SEND_BATCH_MESSAGE": 320}
V2 = (310, 320, 325)
LANG = {"JAVA": 0, "GO": 9}
SUCCESS, SYSTEM_ERROR, REQUEST_CODE_NOT_SUPPORTED, TOPIC_NOT_EXIST, PULL_NOT_FOUND = 0, 1, 3, 17, 19
FLAG_RESP, FLAG_ONEWAY = 1, 2
VERSION = 453  # MQVersion V4_9_4


def encode(cmd, body=b"", enc="binary"):
    """cmd: code, opaque, flag, remark (or None), ext (dict), language ("JAVA"/"GO")."""
    lang = cmd.get("language", "GO" if enc == "json-go" else "JAVA")
    if enc == "binary":
        remark = (cmd.get("remark") or "").encode()
        ext = b"".join(struct.pack(">H", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode())) +
                       v.encode() for k, v in cmd.get("ext", {}).items())
        hdr = struct.pack(">hBhii", cmd["code"], LANG[lang], VERSION, cmd["opaque"], cmd["flag"])
        hdr += struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext
        stype = 1
    else:
        fields = [("code", cmd["code"]), ("language", lang), ("version", VERSION), ("opaque", cmd["opaque"]),
                  ("flag", cmd["flag"])]
        if cmd.get("remark"):
            fields.append(("remark", cmd["remark"]))
        if cmd.get("ext"):
            fields.append(("extFields", cmd["ext"]))
        if enc == "json":
            # fastjson: keys sorted, and RemotingCommand's serializeTypeCurrentRPC among them
            d = dict(fields, serializeTypeCurrentRPC="JSON")
            hdr = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
        else:
            hdr = json.dumps(dict(fields), separators=(",", ":")).encode()
        stype = 0
    return struct.pack(">ii", 4 + len(hdr) + len(body), stype << 24 | len(hdr)) + hdr + body


def decode(frame):
    """frame: the bytes after the length. (cmd, body, encoding)."""
    hw = struct.unpack_from(">i", frame)[0]
    stype, hlen = hw >> 24 & 0xff, hw & 0xffffff
    hdr, body = frame[4:4 + hlen], frame[4 + hlen:]
    if stype == 1:
        code, lang, _ver, opaque, flag = struct.unpack_from(">hBhii", hdr)
        rl = struct.unpack_from(">i", hdr, 13)[0]
        remark = hdr[17:17 + rl].decode()
        el = struct.unpack_from(">i", hdr, 17 + rl)[0]
        ext, i, end = {}, 21 + rl, 21 + rl + el
        while i < end:
            kl = struct.unpack_from(">H", hdr, i)[0]
            k = hdr[i + 2:i + 2 + kl].decode()
            vl = struct.unpack_from(">i", hdr, i + 2 + kl)[0]
            ext[k] = hdr[i + 6 + kl:i + 6 + kl + vl].decode()
            i += 6 + kl + vl
        lang = {v: k for k, v in LANG.items()}.get(lang, "JAVA")
        enc = "binary"
    else:
        d = json.loads(hdr)
        code, opaque, flag, remark, ext, lang = (d["code"], d["opaque"], d["flag"], d.get("remark"),
                                                 d.get("extFields", {}), d.get("language", "JAVA"))
        enc = "json" if "serializeTypeCurrentRPC" in d else "json-go"
    return {"code": code, "opaque": opaque, "flag": flag, "remark": remark, "ext": ext, "language": lang}, body, enc


def read_frame(sock):
    def exact(n):
        b = b""
        while len(b) < n:
            d = sock.recv(n - len(b))
            if not d:
                return None
            b += d
        return b
    h = exact(4)
    if h is None:
        return None
    return exact(struct.unpack(">i", h)[0])


def topic_of(cmd):
    return cmd["ext"].get("b" if cmd["code"] in V2 else "topic", "")


class Broker:
    def __init__(self):
        self.lock = threading.Lock()
        self.queues = {}  # topic -> [messages]
        self.read = {}  # topic -> messages pulled so far

    def answer(self, cmd, body):
        """(code, remark, ext, body) of the response to a request."""
        code, topic = cmd["code"], topic_of(cmd)
        if code in (10, 310, 320, 11, 105) and topic == "missing":
            return TOPIC_NOT_EXIST, "topic[missing] not exist, apply first please!", {}, b""
        with self.lock:
            if code in (10, 310, 320):
                q = self.queues.setdefault(topic, [])
                q.append(body)
                return SUCCESS, None, {"msgId": "7F00000100002A9F%016X" % len(q), "queueId": "0",
                                       "queueOffset": str(len(q) - 1)}, b""
            if code == 11:
                q, r = self.queues.get(topic, []), self.read.get(topic, 0)
                if r >= len(q):
                    return PULL_NOT_FOUND, "no new message", {"nextBeginOffset": str(r), "minOffset": "0",
                                                               "maxOffset": str(len(q))}, b""
                self.read[topic] = len(q)
                return SUCCESS, None, {"nextBeginOffset": str(len(q)), "minOffset": "0",
                                       "maxOffset": str(len(q))}, b"".join(q[r:])
        if code == 105:
            route = {"brokerDatas": [{"brokerAddrs": {"0": "127.0.0.1:10911"}, "brokerName": "broker-a",
                                      "cluster": "DefaultCluster"}],
                     "queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 4,
                                     "topicSysFlag": 0, "writeQueueNums": 4}]}
            return SUCCESS, None, {}, json.dumps(route, separators=(",", ":")).encode()
        if code == 34:
            return SUCCESS, None, {}, b""
        return REQUEST_CODE_NOT_SUPPORTED, "request type %d not supported" % code, {}, b""


BROKER = Broker()


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        wlock = threading.Lock()
        asked = 0

        def send(data):
            with wlock:
                self.request.sendall(data)

        while True:
            frame = read_frame(self.request)
            if frame is None:
                return
            cmd, body, enc = decode(frame)
            if cmd["flag"] & FLAG_RESP:
                continue  # the client's answer to our GET_CONSUMER_RUNNING_INFO
            if cmd["flag"] & FLAG_ONEWAY:
                continue
            code, remark, ext, rbody = BROKER.answer(cmd, body)
            resp = encode({"code": code, "opaque": cmd["opaque"], "flag": FLAG_RESP, "remark": remark, "ext": ext},
                          rbody, enc)
            if topic_of(cmd).startswith("slow"):
                threading.Timer(0.1, send, (resp,)).start()
            else:
                send(resp)
            if cmd["code"] == 34:
                asked += 1
                send(encode({"code": 307, "opaque": 1000000 + asked, "flag": 0, "remark": None,
                             "ext": {"consumerGroup": "cg", "clientId": "127.0.0.1@1", "jstackEnable": "false"}},
                            b"", enc))


def request(name, topic, opaque, oneway, enc):
    code = CODES[name]
    if code in V2:
        ext = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000",
               "h": "0", "i": "UNIQ_KEY\x0100000000\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false"}
    elif code in (10, 11, 105, 12, 15):
        ext = {"topic": topic}
        if code == 10:
            ext.update({"producerGroup": "pg", "queueId": "0", "sysFlag": "0", "bornTimestamp": "1700000000000"})
        elif code == 11:
            ext.update({"consumerGroup": "cg", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
                        "sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*"})
        elif code == 15:
            ext.update({"consumerGroup": "cg", "queueId": "0", "commitOffset": "1"})
    else:
        ext = {}
    body = b"hello rocketmq %d" % opaque if code in (10, 310, 320) else b""
    if code == 34:
        body = b'{"clientID":"127.0.0.1@1","consumerDataSet":[],"producerDataSet":[{"groupName":"pg"}]}'
    return encode({"code": code, "opaque": opaque, "flag": FLAG_ONEWAY if oneway else 0, "ext": ext}, body, enc)


def client(port):
    # connects at an encoding's first line: the server's thread then reads its first request after the
    # test started the probe (a read already blocked when the probe attaches is not seen)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    socks = {}
    opaque = 0
    for line in sys.stdin:
        spec = json.loads(line)
        enc = spec["enc"]
        if enc not in socks:
            socks[enc] = socket.create_connection(("127.0.0.1", port))
        sock = socks[enc]
        codes, waiting = [], {}

        def read_until(want):
            while want & waiting.keys():
                cmd, _, renc = decode(read_frame(sock))
                if not cmd["flag"] & FLAG_RESP:
                    # the broker's own request: answer it, as the Java client does
                    sock.sendall(encode({"code": SUCCESS, "opaque": cmd["opaque"], "flag": FLAG_RESP, "ext": {}},
                                        b'{"properties":{}}', renc))
                    continue
                codes[waiting.pop(cmd["opaque"])] = cmd["code"]

        for name, topic, oneway in spec["reqs"]:
            opaque += 1
            codes.append(None)
            sock.sendall(request(name, topic, opaque, oneway, enc))
            if not oneway:
                waiting[opaque] = len(codes) - 1
                if not spec.get("pipeline"):
                    read_until({opaque})
        read_until(set(waiting))
        print(json.dumps({"codes": codes}), flush=True)


if __name__ == "__main__":
    wire_peer.main(Handler, client)
