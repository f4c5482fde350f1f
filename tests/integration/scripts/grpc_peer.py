#!/usr/bin/python3
"""grpc_peer.py - a gRPC server or client for the l7probe HTTP/2 tests, on Debian's python3-grpcio with
generic handlers and raw bytes (no protobuf stubs).

  grpc_peer.py server PORT [DELAY_MS]   serves /l7.Echo/Say (echoes; "fail" -> NOT_FOUND, "bad" ->
                                         INVALID_ARGUMENT) and /l7.Echo/Slow; prints {"ready": pid}
  grpc_peer.py client PORT N [FAILS [late|early]]
                                         one channel; prints {"ready": pid}, waits for "go" on stdin,
                                         makes N unary calls (FAILS of them fail), prints
                                         {"requests", "errors", "latency_ns"}, waits for "bye"; the
                                         channel connects after "go" (late) or before "ready" with a
                                         first call (early)
"""
import json
import os
import sys
import time

import grpc


def ident(b):
    return b


def serve(port, delay_ms):
    from concurrent import futures

    def say(req, ctx):
        time.sleep(delay_ms / 1000.0)
        if req == b"fail":
            ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
        if req == b"bad":
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad argument")
        return b"echo:" + req

    handlers = {"Say": grpc.unary_unary_rpc_method_handler(say, request_deserializer=ident,
                                                           response_serializer=ident)}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("l7.Echo", handlers),))
    server.add_insecure_port("127.0.0.1:%d" % port)
    server.start()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    server.wait_for_termination()


def client(port, n, fails, when):
    def connect():
        ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        grpc.channel_ready_future(ch).result(timeout=10)
        return ch, ch.unary_unary("/l7.Echo/Say", request_serializer=ident, response_deserializer=ident)

    if when == "early":
        ch, say = connect()
        say(b"warm")  # the connection and a first exchange before the probe starts
    print(json.dumps({"ready": os.getpid()}), flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    if when != "early":
        ch, say = connect()  # the connection (preface, SETTINGS) only: no call yet
    errors = 0
    lat = 0
    # failures spread over the run: every k-th call
    k = n // fails if fails else 0
    for i in range(n):
        msg = (b"fail" if i % 2 else b"bad") if k and i % k == k - 1 and errors < fails else b"hello %d" % i
        t0 = time.perf_counter_ns()
        try:
            say(msg)
        except grpc.RpcError:
            errors += 1
        lat += time.perf_counter_ns() - t0
    print(json.dumps({"requests": n, "errors": errors, "latency_ns": lat}), flush=True)
    sys.stdin.readline()
    ch.close()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 0)
    else:
        client(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0,
               sys.argv[5] if len(sys.argv) > 5 else "late")
