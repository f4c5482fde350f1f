"""browser.py - a real headless Chromium (Debian's) driven over the DevTools protocol, with a small
WebSocket client of the standard library's sockets: load a page, click, evaluate, collect console
errors, exceptions and CSP reports, take screenshots."""
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

from harness import TestFailure, check, wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class WebSocket:
    """RFC 6455 client: text frames out (masked), frames in (fragments joined); enough for DevTools."""

    def __init__(self, url, timeout=30):
        check(url.startswith("ws://"), "not a ws:// url: %s" % url)
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            check(chunk, "websocket handshake: connection closed")
            head += chunk
        status, self.buf = head.split(b"\r\n\r\n", 1)
        check(b" 101 " in status.split(b"\r\n")[0], "websocket handshake refused: %r" % status[:200])

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise TestFailure("websocket closed by the browser")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(head + mask + masked)

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise TestFailure("websocket closed by the browser")
            if op in (0x9, 0xA):  # ping / pong: DevTools does not send them; ignore
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode("utf-8", "replace")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Chromium:
    """One headless Chromium with its own profile directory; one page (tab) driven over DevTools."""

    def __init__(self, width=1400, height=900):
        check(os.path.exists(CHROMIUM), "chromium is not installed (scripts/install-deps.sh installs it)")
        self.dir = tempfile.mkdtemp(prefix="gg-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--metrics-recording-only",
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             "--user-data-dir=" + self.dir, "--window-size=%d,%d" % (width, height), "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr.txt"), "w"),
            start_new_session=True)
        port_file = os.path.join(self.dir, "DevToolsActivePort")
        wait_for(lambda: self.proc.poll() is not None or
                 (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1), 30,
                 "chromium's DevToolsActivePort")
        check(self.proc.poll() is None, "chromium exited: %s" % self._stderr())
        port = int(open(port_file).read().split("\n")[0])
        targets = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10).read())
        page = [t for t in targets if t.get("type") == "page"][0]
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable")

    def _stderr(self):
        try:
            with open(os.path.join(self.dir, "stderr.txt"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise TestFailure("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
        raise TestFailure("%s: no answer within %ds" % (method, timeout))

    def navigate(self, url):
        self.call("Page.navigate", {"url": url})

    def eval(self, expr, await_promise=False):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": await_promise})
        if "exceptionDetails" in r:
            raise TestFailure("evaluate %r: %s" % (expr[:80], r["exceptionDetails"].get("text")))
        return r.get("result", {}).get("value")

    def wait_js(self, expr, timeout, what):
        return wait_for(lambda: self.eval(expr), timeout, what, interval=0.2)

    def click(self, selector):
        """A real mouse click (press and release) at the middle of the element."""
        box = self.eval("(() => { const e = document.querySelector(%s); if (!e) return null; e.scrollIntoView({block: 'center'});"
                        " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
                        % json.dumps(selector))
        check(box, "nothing to click: %s" % selector)
        for t in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": t, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def mouse_move(self, x, y):
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def drain(self, seconds=0.3):
        """Collect the events that arrived without a call (a short no-op call flushes them in)."""
        time.sleep(seconds)
        self.call("Runtime.evaluate", {"expression": "1"})

    def errors(self):
        """Console errors, uncaught exceptions, CSP violations and failed loads the page produced."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: %s %s" % (d.get("text"), (d.get("exception") or {}).get("description", "")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append("console.%s: %s" % (p["type"], " ".join(str(a.get("value", a.get("description")))
                                                                  for a in p.get("args", []))))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                en = p["entry"]
                out.append("log %s (%s): %s %s" % (en.get("level"), en.get("source"), en.get("text"), en.get("url", "")))
            elif m == "Network.loadingFailed":
                out.append("load failed: %s %s" % (p.get("errorText"), p.get("blockedReason", "")))
        return out

    def requests(self):
        """URLs the page asked for (Network.requestWillBeSent)."""
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def close(self):
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
