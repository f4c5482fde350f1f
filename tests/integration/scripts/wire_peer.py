"""wire_peer.py - what the wire-exact test peers (mongo_wire.py, rocketmq_wire.py) share: a threaded
loopback server and their command line, `server PORT` or `client PORT`."""
import json
import os
import socketserver
import sys


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main(handler, client):
    """server PORT: serves with handler until killed, printing {"ready": pid} once listening;
    client PORT: client(port)."""
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "server":
        srv = Server(("127.0.0.1", port), handler)
        print(json.dumps({"ready": os.getpid()}), flush=True)
        srv.serve_forever()
    else:
        client(port)
