"""pyro_receiver.py - a small HTTP server standing in for Pyroscope's /ingest endpoint in tests: it keeps
every request (method, path, query, headers, body) and answers 200. Use it from a test
(`r = PyroReceiver().start(); ...; r.requests(); r.stop()`) or run it: `pyro_receiver.py PORT FILE`
appends one JSON line per request to FILE."""
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 64 << 20


class _Handler(BaseHTTPRequestHandler):
    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.send_response(413)
            self.end_headers()
            return
        body = self.rfile.read(length) if length else b""
        url = urllib.parse.urlsplit(self.path)
        rec = {
            "method": self.command,
            "path": url.path,
            "query": dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True)),
            "raw_query": url.query,
            "content_type": self.headers.get("Content-Type", ""),
            "body": body.decode("utf-8", "replace"),
        }
        self.server.receiver._add(rec)
        status = 200 if url.path == "/ingest" and self.command == "POST" else 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = _serve
    do_GET = _serve

    def log_message(self, fmt, *args):  # quiet
        pass


class PyroReceiver:
    def __init__(self, port=0, out_file=None):
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.receiver = self
        self.port = self.server.server_address[1]
        self.out_file = out_file
        self._lock = threading.Lock()
        self._reqs = []
        self._thread = None

    def _add(self, rec):
        with self._lock:
            self._reqs.append(rec)
            if self.out_file:
                with open(self.out_file, "a") as f:
                    f.write(json.dumps(rec) + "\n")

    def requests(self):
        with self._lock:
            return list(self._reqs)

    def start(self):
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    r = PyroReceiver(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
    print(r.port, flush=True)
    r.server.serve_forever()
