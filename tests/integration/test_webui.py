"""test_webui.py - the built-in web page (/ui/ on the REST API server) in a real headless Chromium
(Debian's, over the DevTools protocol): it loads without console errors or CSP reports and asks for
nothing outside the agent, shows the running probes with the supervisor's pids and counters, a click
stops and starts a probe, sub-probe switches go through PUT /<probe>, imdb rows match /proc/meminfo,
a flame graph of stackprobe's profile store renders, events show; values carrying HTML (an extend probe
whose file is named `<img src=x onerror=...>`, its records and events, a process named `<b>busy</b>`
(cpu_split, profiled by stackprobe))
stay text. Screenshots are kept in build/artifacts/webui/. Also: headers, assets and mTLS without a
browser."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse

from harness import (BUILD, PROBES, ROOT, Supervisor, check, http_get, probe_entry, rest_call, rest_port,
                     start_rest, wait_for)

ARTIFACTS = os.path.join(BUILD, "artifacts", "webui")
PAYLOAD = "<img src=x onerror=window.__xss=1>"
EVENT_PAYLOAD = "<img src=x onerror=window.__xss=2> disk on fire"
LABEL_PAYLOAD = "<script>window.__xss=3</script>"
BUSY_COMM = "<b>busy</b>"
TEST_EXT_META = os.path.join(ROOT, "tests", "schema", "test_ext.meta")



def xss_script(path):
    """An extend probe (a file whose name is HTML) printing a record and an event that carry HTML."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\ni=0\nwhile :; do\n"
                "  echo '|test_ext|%s|%s|'$i'|'$i'|'\n"
                "  echo '|event|test_ext|%s|g|WARN|13|%s|'\n"
                "  i=$((i + 1)); sleep 0.5\ndone\n" % (PAYLOAD, LABEL_PAYLOAD, PAYLOAD, EVENT_PAYLOAD))
    os.chmod(path, 0o755)


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="gg-webui-")
        os.chmod(self.tmp, 0o755)
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        self.script = os.path.join(bindir, PAYLOAD)
        xss_script(self.script)
        self.flame = os.path.join(self.tmp, "flame")
        # frame pointers and symbols (tests/helpers/cpu_split): whole stacks under the process
        self.busy = subprocess.Popen(["nice", "-n", "19", os.path.join(BUILD, "tests", "cpu_split"), "-d", "170",
                                      "-n", BUSY_COMM], stdout=subprocess.DEVNULL)
        ext = '    { name = "xssprobe"; command = "%s"; param = ""; switch = "on"; }' % self.script
        self.sup = Supervisor(
            probes=[probe_entry("system_infos", "-t 1"),
                    probe_entry("stackprobe", "-t 1 --store-period 2", switch="off")],
            extend=[ext], metric_out="web_server", extra_meta=[TEST_EXT_META],
            extra='rest_api_server = { bind_addr = "127.0.0.1"; port = 0; state_dir = "%s/state"; '
                  'output_base_dir = "%s"; };' % (self.tmp, self.tmp))
        self.browser = None

    def start(self):
        self.port, self.base = start_rest(self.sup)
        return self

    def cleanup(self):
        if self.browser:
            self.browser.close()
        self.sup.cleanup()
        self.busy.kill()
        self.busy.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def no_xss(b, where):
    """Nothing a probe sent became markup: the only <img> is the page's own logo, no script ran."""
    imgs = b.eval("Array.from(document.images).map(i => i.getAttribute('src'))")
    check(imgs == ["/ui/favicon.svg"], "%s: an <img> made from data: %r" % (where, imgs))
    check(b.eval("typeof window.__xss") == "undefined", "%s: injected script ran (window.__xss)" % where)
    check(b.eval("document.querySelectorAll('main script, main b').length") == 0, "%s: markup from data" % where)


def body_text(b):
    return b.eval("document.body.innerText")


def test_webui_in_chromium():
    from browser import Chromium
    env = Env()
    try:
        env.start()
        # stackprobe through REST, as an operator starts it: on-cpu samples of the busy process
        st, _, text, _ = rest_call(env.port, "PUT", "/flamegraph", json.dumps({
            "cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_id": [env.busy.pid]},
            "params": {"flame_dir": env.flame, "svg_dir": os.path.join(env.tmp, "svg")}, "state": "running"}),
            {"Content-Type": "application/json"})
        check(st == 200, "PUT /flamegraph: %d %s" % (st, text))
        sysinfo = env.sup.wait_probe("system_infos", lambda p: p["state"] == "running" and p["records"] > 0, 15,
                                     "system_infos sends records")
        env.sup.wait_probe("xssprobe", lambda p: p["accepted"] > 0, 15, "the extend probe's records accepted")

        b = env.browser = Chromium()
        b.navigate(env.base + "/ui/")
        b.wait_js("document.body && document.body.getAttribute('data-loaded') === '1'", 20, "the page loaded its data")

        # probes with the supervisor's facts
        def row(key):
            return b.eval("(() => { const r = document.querySelector('tr[data-probe=\"%s\"]'); return r ? "
                          "Array.from(r.cells).map(c => c.innerText.trim()) : null; })()" % key)
        r = b.wait_js("(() => { const r = document.querySelector('tr[data-probe=\"baseinfo\"] [data-state]');"
                      " return r && r.getAttribute('data-state'); })()", 10, "baseinfo row")
        check(r == "running", "baseinfo shown %s" % r)
        cells = row("baseinfo")
        check(cells[2] == str(sysinfo["pid"]), "baseinfo pid on the page %r, status.json %d" % (cells[2], sysinfo["pid"]))
        check(row("flamegraph") and "running" in row("flamegraph")[1], "flamegraph row: %r" % row("flamegraph"))
        x = row("xssprobe")
        check(x and PAYLOAD in x[0] and x[1] == "running", "the extend probe, its file name as text: %r" % x)
        check(int(x[6].replace(",", "")) > 0, "the extend probe's records counted: %r" % x)
        no_xss(b, "probes")
        b.screenshot(os.path.join(ARTIFACTS, "probes.png"))

        # a click stops the probe, another starts it again
        b.click('button[data-action="stop"][data-probe="baseinfo"]')
        b.wait_js("document.querySelector('tr[data-probe=\"baseinfo\"] [data-state]').getAttribute('data-state')"
                  " === 'stopped'", 15, "baseinfo stopped on the page")
        p = env.sup.wait_probe("system_infos", lambda p: p["state"] == "stopped", 10, "stopped (status.json)")
        check(p["pid"] == 0 and not os.path.exists("/proc/%d" % sysinfo["pid"]) or
              open("/proc/%d/stat" % sysinfo["pid"]).read().split()[2] == "Z", "the old process is gone")
        b.click('button[data-action="start"][data-probe="baseinfo"]')
        b.wait_js("document.querySelector('tr[data-probe=\"baseinfo\"] [data-state]').getAttribute('data-state')"
                  " === 'running'", 15, "baseinfo running again on the page")
        p2 = env.sup.wait_probe("system_infos", lambda p: p["state"] == "running" and p["pid"] > 0, 10, "restarted")
        check(p2["pid"] != sysinfo["pid"] and p2["starts"] == sysinfo["starts"] + 1, "a fresh process: %r" % p2)
        b.wait_js("document.querySelector('tr[data-probe=\"baseinfo\"]').cells[2].innerText.trim() === '%d'"
                  % p2["pid"], 10, "the new pid on the page")

        # sub-probe switches: details, untick all but cpu and mem, apply -> PUT /baseinfo
        b.click('button[data-action="details"][data-probe="baseinfo"]')
        b.wait_js("document.querySelectorAll('tr[data-detail=\"baseinfo\"] input[data-subprobe]').length > 3", 10,
                  "sub-probe switches")
        b.eval("document.querySelectorAll('tr[data-detail=\"baseinfo\"] input[data-subprobe]').forEach(i => "
               "{ if ((i.getAttribute('data-subprobe') === 'cpu' || i.getAttribute('data-subprobe') === 'mem') "
               "!== i.checked) i.click(); })")
        b.screenshot(os.path.join(ARTIFACTS, "probe-details.png"))
        b.click('button[data-action="subprobes"][data-probe="baseinfo"]')
        b.wait_js("document.getElementById('notice').innerText.includes('New config takes effect')", 10,
                  "the PUT's answer on the page")
        st, doc, _, _ = rest_call(env.port, "GET", "/baseinfo")
        check(st == 200 and doc["cmd"]["probe"] == ["cpu", "mem"], "sub-probes applied: %r" % doc["cmd"])
        env.sup.wait_probe("system_infos", lambda p: p["config_version_applied"] >= p["config_version"] > 0, 10,
                           "the probe confirms the new sub-probes")

        # imdb: tables and the latest rows, against /proc/meminfo
        b.click('#tabs button[data-tab="tables"]')
        b.wait_js("!!document.querySelector('#imdb-tables li[data-table=\"system_meminfo\"]')", 10, "imdb tables")
        b.click('#imdb-tables li[data-table="system_meminfo"]')
        b.wait_js("document.getElementById('imdb-title').innerText === 'system_meminfo' && "
                  "document.querySelectorAll('#imdb-rows tbody tr').length === 1", 10, "system_meminfo rows")
        heads = b.eval("Array.from(document.querySelectorAll('#imdb-rows th')).map(t => t.innerText.trim())")
        vals = b.eval("Array.from(document.querySelectorAll('#imdb-rows tbody td')).map(t => t.innerText.trim())")
        with open("/proc/meminfo") as f:
            total = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
        shown = int(vals[heads.index("total_kB")].replace(",", ""))
        check(shown == total, "total_kB on the page %d, /proc/meminfo %d" % (shown, total))
        check(vals[heads.index("machine_id")] == env.sup.status()["supervisor"]["machine_id"], "machine_id label")
        b.click('#imdb-tables li[data-table="test_ext"]')
        b.wait_js("document.getElementById('imdb-title').innerText === 'test_ext' && "
                  "document.querySelectorAll('#imdb-rows tbody tr').length >= 1", 10, "test_ext rows")
        txt = b.eval("document.getElementById('imdb-rows').innerText")
        check(PAYLOAD in txt and LABEL_PAYLOAD in txt, "key and label shown as text: %r" % txt[:300])
        no_xss(b, "tables")
        b.screenshot(os.path.join(ARTIFACTS, "tables.png"))

        # events
        b.click('#tabs button[data-tab="events"]')
        b.wait_js("document.getElementById('event-rows').innerText.includes(%s)" % json.dumps(EVENT_PAYLOAD), 10,
                  "the extend probe's event")
        ev = b.eval("Array.from(document.querySelector('#event-rows tr').cells).map(c => c.innerText.trim())")
        check(ev[1] == "WARN" and ev[2] == "gala_gopher_test_ext_g" and ev[4] == EVENT_PAYLOAD, "event row: %r" % ev)
        no_xss(b, "events")
        b.screenshot(os.path.join(ARTIFACTS, "events.png"))

        # flame graph of the profile store: the busy process, its name drawn as text on the canvas
        b.click('#tabs button[data-tab="flame"]')

        def frames():
            m = re.search(r"([\d,]+) frames", b.eval("document.getElementById('flame-info').innerText"))
            return int(m.group(1).replace(",", "")) if m else 0

        def flame_loaded():
            b.click('#flame-form button[type="submit"]')
            time.sleep(1)
            return frames() >= 3
        wait_for(flame_loaded, 40, "the Total view (processes, threads) from the profile store", interval=1)
        rect = b.eval("(() => { const r = document.getElementById('flame').getBoundingClientRect();"
                      " return [r.left, r.top, r.width]; })()")

        def hover_row(row):
            seen = {}
            for i in range(1, 40):
                x, y = rect[0] + rect[2] * i / 40, rect[1] + 17 * row + 8
                b.mouse_move(x, y)
                seen.setdefault(b.eval("document.getElementById('flame-hover').innerText"), (x, y))
            return seen
        seen = hover_row(1)
        busy = [n for n in seen if n.startswith("[p] " + BUSY_COMM + " ")]
        check(busy, "hovering the Total view names the busy process, as text: %r" % list(seen))
        b.screenshot(os.path.join(ARTIFACTS, "flamegraph-total.png"))
        # a click on the process opens its own view: whole stacks, spin_hot above spin_cold (70/30)
        x, y = seen[busy[0]]
        b.call("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1})
        b.call("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x, "y": y, "button": "left", "clickCount": 1})
        b.wait_js("document.getElementById('flame-app').value === %s && /\\d+ frames/.test("
                  "document.getElementById('flame-info').innerText) && "
                  "document.getElementById('flame-info').innerText.includes('of ' + %s)" % (
                      json.dumps(BUSY_COMM), json.dumps(BUSY_COMM)), 10, "the process's own flame graph")
        check(frames() >= 6, "whole stacks: %d frames" % frames())
        painted = b.eval("(() => { const c = document.getElementById('flame'); const d = c.getContext('2d')"
                         ".getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4)"
                         " if (d[i]) n++; return [n, c.width * c.height, c.clientHeight]; })()")
        check(painted[0] > painted[1] * 0.2 and painted[2] >= 5 * 17, "the canvas is painted: %r" % (painted,))
        rect = b.eval("(() => { const r = document.getElementById('flame').getBoundingClientRect();"
                      " return [r.left, r.top, r.width]; })()")
        names = {}
        # rows below the process: _start, __libc_start_main, __libc_start_call_main, main, burn_loop,
        # then the two functions (.eh_frame unwinding shows libc's frames above main)
        for row in range(2, 11):
            for n in hover_row(row):
                names[n.split(" — ")[0]] = n
        hot = [n for n in names if n == "spin_hot"]
        check(hot and "spin_cold" in names, "the hot and the cold function under the process: %r" % list(names))
        # cpu_split spends 70 % of its CPU in spin_hot: the hover's share of the process says so
        share = float(re.search(r"\(([\d.]+) %\)", names["spin_hot"]).group(1))
        check(55 <= share <= 85, "spin_hot is %.1f %% of the process, cpu_split spends 70 %%: %r" % (share, names["spin_hot"]))
        b.screenshot(os.path.join(ARTIFACTS, "flamegraph.png"))
        no_xss(b, "flame graph")

        # self-metrics
        b.click('#tabs button[data-tab="agent"]')
        b.wait_js("document.getElementById('agent-cards').innerText.includes('ipc_refused_peers')", 10, "agent cards")
        b.screenshot(os.path.join(ARTIFACTS, "agent.png"))

        b.drain(1)
        errors = b.errors()
        check(not errors, "the page produced console errors, exceptions or CSP reports: %r" % errors)
        foreign = [u for u in b.requests() if not u.startswith(env.base + "/")]
        check(not foreign, "requests outside the agent: %r" % foreign)
    finally:
        env.cleanup()


test_webui_in_chromium.timeout = 180


def test_webui_headers_and_assets():
    """Every page file is compiled in and served with a strict CSP; no inline script, style or handler;
    no external URL; JSON replies carry nosniff and a CSP; the page is read-only (405)."""
    env = Env()
    try:
        env.start()
        base = env.base
        html = None
        for path, ctype in (("/ui/", "text/html"), ("/ui", "text/html"), ("/ui/app.js", "text/javascript"),
                            ("/ui/app.css", "text/css"), ("/ui/favicon.svg", "image/svg+xml")):
            st, _, text, h = rest_call(env.port, "GET", path)
            check(st == 200 and h.get("Content-Type", "").startswith(ctype), "%s: %d %r" % (path, st, h))
            csp = h.get("Content-Security-Policy", "")
            check("default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp and
                  "frame-ancestors 'none'" in csp, "%s: CSP %r" % (path, csp))
            check(h.get("X-Content-Type-Options") == "nosniff" and h.get("X-Frame-Options") == "DENY" and
                  h.get("Referrer-Policy") == "no-referrer", "%s: security headers %r" % (path, h))
            urls = [u for u in re.findall(r"https?://[^\s\"'<>)]+", text) if u != "http://www.w3.org/2000/svg"]
            check(not urls, "%s refers to something outside the agent: %r" % (path, urls))
            if path == "/ui/":
                html = text
        for m in re.finditer(r"<script\b([^>]*)>(.*?)</script>", html, re.S):
            check("src=" in m.group(1) and not m.group(2).strip(), "inline script: %r" % m.group(0)[:120])
        check(not re.search(r"<style\b|\sstyle=|\son[a-z]+=", html, re.I), "inline style or event handler in index.html")
        js = http_get(base + "/ui/app.js")[1]
        check(not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", js),
              "app.js builds markup from strings")
        # the served files are the compiled-in copies of supervisor/rest/webui/
        for name in os.listdir(os.path.join(ROOT, "supervisor", "rest", "webui")):
            with open(os.path.join(ROOT, "supervisor", "rest", "webui", name), "rb") as f:
                want = f.read()
            import urllib.request
            with urllib.request.urlopen(base + "/ui/" + name, timeout=5) as r:
                check(r.read() == want, "%s differs from the source" % name)
        # JSON: the page's views and the REST API's replies
        for path in ("/ui/api/status", "/ui/api/contracts", "/ui/api/imdb", "/ui/api/events", "/probes", "/baseinfo"):
            st, doc, _, h = rest_call(env.port, "GET", path)
            check(st == 200 and doc is not None, "%s: %d" % (path, st))
            check(h.get("X-Content-Type-Options") == "nosniff" and "default-src 'none'" in
                  h.get("Content-Security-Policy", "") and h.get("Cache-Control") == "no-store", "%s: %r" % (path, h))
        st, doc, _, _ = rest_call(env.port, "GET", "/ui/api/status")
        check([p["name"] for p in doc["probes"]] == [p["name"] for p in env.sup.status()["probes"]],
              "the status view lists what status.json lists")
        st, doc, _, _ = rest_call(env.port, "GET", "/ui/api/contracts")
        base_c = [c for c in doc if c["rest_name"] == "baseinfo"][0]
        check("cpu" in [s["name"] for s in base_c["subprobes"]] and
              "report_period" in [p["name"] for p in base_c["params"]], "baseinfo's contract: %r" % base_c)
        wait_for(lambda: rest_call(env.port, "GET", "/ui/api/events")[1]["events"], 10, "events kept")
        st, doc, _, _ = rest_call(env.port, "GET", "/ui/api/events")
        check(doc["events"][0]["event"]["Body"] == EVENT_PAYLOAD, "an event: %r" % doc["events"][0])
        nxt = doc["next"]
        st, doc, _, _ = rest_call(env.port, "GET", "/ui/api/events?after=%d" % (nxt - 1))
        check(all(e["seq"] >= nxt for e in doc["events"]), "?after= gives only newer events")
        # rows: limit, unknown table; read-only; unknown files
        wait_for(lambda: rest_call(env.port, "GET", "/ui/api/imdb/rows?table=system_cpu")[0] == 200, 10,
                 "system_cpu in the imdb")
        st, doc, _, _ = rest_call(env.port, "GET", "/ui/api/imdb/rows?table=system_cpu&limit=1")
        check(st == 200 and len(doc["rows"]) == 1 and doc["rows_total"] >= 2, "limit=1: %r" % doc)
        for method, path, want in (("GET", "/ui/api/imdb/rows?table=nope", 404), ("GET", "/ui/nope.js", 404),
                                   ("GET", "/ui/api/nope", 404), ("PUT", "/ui/", 405), ("POST", "/ui/api/status", 405),
                                   ("GET", "/ui/../baseinfo", None)):
            st, doc, raw, h = rest_call(env.port, method, path, body="" if method != "GET" else None)
            if want:
                check(st == want and doc and doc["result"] == "failed", "%s %s: %d %s" % (method, path, st, raw[:200]))
        # DNS rebinding and other sites: the page under another name, a browser's PUT from elsewhere
        hp = "127.0.0.1:%d" % env.port
        st, doc, _, _ = rest_call(env.port, "GET", "/ui/api/status", headers={"Host": "evil.example:%d" % env.port})
        check(st == 403 and "DNS rebinding" in doc["message"], "the page's data under another host name: %d" % st)
        st, _, _, _ = rest_call(env.port, "GET", "/ui/", headers={"Host": "localhost:%d" % env.port})
        check(st == 200, "the page as localhost: %d" % st)
        body = json.dumps({"params": {"report_period": 7}})
        st, doc, _, _ = rest_call(env.port, "PUT", "/baseinfo", body, {"Content-Type": "application/json",
                                                                        "Origin": "http://evil.example"})
        check(st == 403 and "another site" in doc["message"], "a PUT from another site: %d %r" % (st, doc))
        st, doc, _, _ = rest_call(env.port, "PUT", "/baseinfo", body, {"Content-Type": "application/json",
                                                                        "Origin": "http://%s" % hp})
        check(st == 200, "a PUT from the page's own origin: %d %r" % (st, doc))
        st, doc, _, _ = rest_call(env.port, "PUT", "/baseinfo", json.dumps({"params": {"report_period": 8}}),
                                  {"Content-Type": "application/json", "Host": "any.name.example"})
        check(st == 200, "curl (no Origin) under any Host name, as before: %d %r" % (st, doc))
        # HEAD gives the headers without a body
        st, _, raw, h = rest_call(env.port, "HEAD", "/ui/")
        check(st == 200 and raw == "" and "Content-Security-Policy" in h, "HEAD /ui/: %d %r" % (st, raw[:50]))
    finally:
        env.cleanup()


test_webui_headers_and_assets.timeout = 60


def test_webui_mtls():
    """The page is served by the REST API's server, so its TLS settings apply: with ca_file, no client
    certificate means 403 for the page and its data; a trusted one gets them over HTTPS."""
    from test_rest import make_pki
    pki = tempfile.mkdtemp(prefix="gg-pki-")
    sup = None
    try:
        make_pki(pki)
        p = lambda f: os.path.join(pki, f)  # noqa: E731
        tmp = tempfile.mkdtemp(prefix="gg-webui-", dir=pki)
        sup = Supervisor(probes=[probe_entry("system_infos", "-t 1")], extra=(
            'rest_api_server = { bind_addr = "127.0.0.1"; port = 0; state_dir = "%s/state"; ssl_auth = "on"; '
            'private_key = "%s"; cert_file = "%s"; ca_file = "%s"; };' % (tmp, p("srv.key"), p("srv.pem"), p("ca.pem"))))
        sup.start()
        port = rest_port(sup)

        def curl(*args):
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", p("ca.pem")] +
                                 list(args), capture_output=True, text=True, timeout=20)
            return int(out.stdout or 0)
        for path in ("/ui/", "/ui/app.js", "/ui/api/status"):
            u = "https://127.0.0.1:%d%s" % (port, path)
            check(curl(u) == 403, "%s without a client certificate" % path)
            check(curl("--cert", p("rogue.pem"), "--key", p("rogue.key"), u) == 403, "%s, untrusted certificate" % path)
            check(curl("--cert", p("cli.pem"), "--key", p("cli.key"), u) == 200, "%s with the client certificate" % path)
    finally:
        if sup:
            sup.cleanup()
        shutil.rmtree(pki, ignore_errors=True)


test_webui_mtls.timeout = 60
