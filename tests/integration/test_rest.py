"""test_rest.py - the REST API against the real supervisor and the real system_infos probe: seed 000's
curl examples, every error case, live reconfiguration confirmed by the probe, start/stop, restart
with new flags, persistence across SIGKILL, mTLS with certificates made by openssl, snoopers resolved
from real processes (unique comm, docker- and kubepods-like cgroups), keep-alive and concurrent clients."""
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse

from harness import (PROBES, Supervisor, TestFailure, cgroup2_root, check, extend_entry, pid_alive, rest_call,
                     rest_section, rmdir_retry, start_rest, teardown, wait_for)
from seed_000 import (SEED_ADVANCED, SEED_BASIC, SEED_PARAMS, SEED_SCOPE, SEED_SLI, SEED_STATE, SEED_TPROF_START,
                      seed_body)

SYSINFO = os.path.join(PROBES, "system_infos")


class RestEnv:
    """A supervisor with the REST API on a free port, its own state dir and a probes dir holding only
    system_infos (plus copies under other names when asked), so that the set of installed probes is
    known whatever else is built."""

    def __init__(self, state_dir=None, extra_rest="", probes=(), extend=(), aliases=(), out_base=None):
        self.tmp = tempfile.mkdtemp(prefix="gg-rest-")
        self.own_state = state_dir is None
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.probes_dir = os.path.join(self.tmp, "probes")
        os.makedirs(self.probes_dir)
        os.symlink(SYSINFO, os.path.join(self.probes_dir, "system_infos"))
        for a in aliases:
            os.symlink(SYSINFO, os.path.join(self.probes_dir, a))
        self.out_base = out_base or os.path.join(self.tmp, "out")
        rest = rest_section(self.state_dir, extra='output_base_dir = "%s"; %s' % (self.out_base, extra_rest))
        self.sup = Supervisor(probes=probes, extend=extend, extra=rest, probes_dir=self.probes_dir)
        self.port = None

    def start(self):
        self.port, self.url = start_rest(self.sup)
        return self

    def call(self, method, path, body=None, headers=None):
        return rest_call(self.port, method, path, body, headers)

    def put(self, probe, conf, raw=False):
        body = ("json=" + json.dumps(conf)) if raw else urllib.parse.urlencode({"json": json.dumps(conf)})
        return self.call("PUT", "/" + probe, body)

    def get(self, probe):
        st, doc, raw, _ = self.call("GET", "/" + probe)
        check(st == 200 and doc is not None, "GET /%s: %d %s" % (probe, st, raw[:300]))
        return doc

    def wait_confirmed(self, probe, timeout=10):
        def ok():
            rt = self.get(probe)["runtime"]
            return rt if rt.get("config_confirmed") else None
        return wait_for(ok, timeout, "%s confirms its configuration" % probe, interval=0.02)

    def curl(self, *args):
        r = subprocess.run(["curl", "-s", "-w", "\n%{http_code}"] + list(args), capture_output=True, text=True,
                           timeout=20)
        body, _, code = r.stdout.rpartition("\n")
        return int(code or 0), body

    def cleanup(self):
        try:
            self.sup.cleanup()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def expect(resp, status, msg_part=None):
    st, doc, raw, hdrs = resp
    check(st == status, "want HTTP %d, got %d: %s" % (status, st, raw[:400]))
    check(doc is not None and set(doc) == {"result", "message"}, "reply is {result, message} JSON: %r" % raw[:400])
    check(hdrs.get("Content-Type", "").startswith("application/json"), "JSON content type: %r" % hdrs)
    check(doc["result"] == ("success" if status == 200 else "failed"), "result: %r" % doc)
    if msg_part:
        check(msg_part in doc["message"], "message %r should contain %r" % (doc["message"], msg_part))
    return doc


def metric_rows(sup, table):
    return sup.metric_records(table)


def rest_status(env, pred, what, timeout=3):
    """The rest_api_server part of status.json once pred holds (the file is rewritten every second)."""
    def ok():
        try:
            s = env.sup.status()["rest_api_server"]
        except (ValueError, KeyError, FileNotFoundError):
            return None
        return s if pred(s) else None
    return wait_for(ok, timeout, what)


def test_seed_curl_examples():
    # stackprobe is "installed" as a copy of system_infos: the REST side is what is tested here (the copy
    # runs, and refuses flamegraph sub-probes it does not know, so it never confirms)
    env = RestEnv(aliases=("stackprobe",), out_base="/var/log/gala-gopher").start()
    try:
        u = env.url
        code, body = env.curl("-X", "PUT", u + "/flamegraph", "--data-urlencode", "json=" + seed_body(SEED_SCOPE))
        check(code == 200 and json.loads(body) == {"result": "success", "message": "New config takes effect"},
              "seed example 1: %d %s" % (code, body))
        g = env.get("flamegraph")
        check(g["cmd"]["probe"] == ["oncpu", "offcpu"], "sub-probes stored: %r" % g["cmd"])
        check(g["cmd"]["bin"] == os.path.join(env.probes_dir, "stackprobe"), "registered binary: %r" % g["cmd"])
        check(g["snoopers"]["proc_id"] == [101, 102] and g["snoopers"]["pod_id"] == ["pod1", "pod2"] and
              [p["comm"] for p in g["snoopers"]["proc_name"]] == ["app1", "app2"] and
              g["snoopers"]["container_id"] == ["container1", "container2"], "snoopers stored: %r" % g["snoopers"])
        check(g["state"] == "stopped" and g["runtime"]["pid"] == 0, "no state given: not started: %r" % g)

        # the runtime parameters example: sample_period is not a flamegraph parameter in the seed's table;
        # gala-gopher ignores it there, so it is accepted with a warning (tests/integration/test_seed_examples.py)
        code, body = env.curl("-X", "PUT", u + "/flamegraph", "--data-urlencode", "json=" + seed_body(SEED_PARAMS))
        check(code == 200 and json.loads(body)["warnings"] ==
              ["params.sample_period: not a parameter of probe flamegraph (gala-gopher applies it to io, tcp); "
               "accepted and ignored"], "seed params example: %d %s" % (code, body))
        check(env.get("flamegraph")["params"]["sample_period"] == 180, "stored as sent")

        # start/stop example (with its // comment)
        code, body = env.curl("-X", "PUT", u + "/flamegraph", "--data-urlencode", "json=" + seed_body(SEED_STATE))
        check(code == 200, "seed state example: %d %s" % (code, body))
        rt = wait_for(lambda: env.get("flamegraph")["runtime"]["pid"] or None, 10, "flamegraph started")
        check(pid_alive(rt), "stackprobe process %d runs" % rt)

        code, body = env.curl("-X", "PUT", u + "/flamegraph", "-d", "json=" + seed_body(SEED_BASIC))
        check(code == 200, "seed basic startup example: %d %s" % (code, body))
        code, body = env.curl("-X", "PUT", u + "/flamegraph", "-d", "json=" + seed_body(SEED_ADVANCED))
        check(code == 200, "seed advanced startup example: %d %s" % (code, body))
        code, body = env.curl("-X", "GET", u + "/flamegraph")
        g = json.loads(body)
        check(code == 200 and g["state"] == "running" and g["cmd"]["probe"] == ["oncpu", "offcpu", "mem"] and
              g["params"]["svg_dir"] == "/var/log/gala-gopher/stacktrace" and g["params"]["multi_instance"] == 1 and
              [p["comm"] for p in g["snoopers"]["proc_name"]] == ["cadvisor", "java"],
              "seed GET: %s" % body[:600])
        # the probe was told: its control message carries the REST configuration
        check(g["runtime"]["config_version"] >= 3, "versions bumped: %r" % g["runtime"])

        # tprofiling is not in this test's probes directory: a clear 404
        code, body = env.curl("-X", "PUT", u + "/tprofiling", "-d", "json=" + seed_body(SEED_TPROF_START))
        check(code == 404 and "not installed" in json.loads(body)["message"], "tprofiling: %d %s" % (code, body))
        code, body = env.curl("-X", "PUT", u + "/tprofiling", "-d", "json=" + '{"state": "stopped"}')
        check(code == 404, "tprofiling stop: %d %s" % (code, body))
        # the sliprobe example is not valid JSON (an object with a bare second string)
        code, body = env.curl("-X", "PUT", u + "/sli", "-d", "json=" + seed_body(SEED_SLI))
        check(code == 400 and "invalid JSON" in json.loads(body)["message"], "sli example: %d %s" % (code, body))

        # and the same forms against baseinfo, which runs for real
        code, body = env.curl("-X", "PUT", u + "/baseinfo", "--data-urlencode",
                              'json={"cmd": {"probe": ["cpu", "mem"]}, "params": {"report_period": 1}, '
                              '"state": "running"}')
        check(code == 200, "baseinfo: %d %s" % (code, body))
        env.wait_confirmed("baseinfo")
        wait_for(lambda: len(metric_rows(env.sup, "system_meminfo")) >= 2, 10, "baseinfo records")
        code, body = env.curl("-X", "GET", u + "/baseinfo")
        g = json.loads(body)
        check(g["state"] == "running" and g["params"] == {"report_period": 1}, "GET baseinfo: %s" % body[:400])
    finally:
        env.cleanup()
test_seed_curl_examples.timeout = 60


# ---- errors ------------------------------------------------------------------------------------------------

def test_errors():
    env = RestEnv().start()
    try:
        expect(env.call("PUT", "/nope", "json={}"), 404, 'unknown probe "nope"')
        expect(env.call("GET", "/nope"), 404, "unknown probe")
        expect(env.call("GET", "/a/b"), 404, "unknown path")
        expect(env.call("POST", "/baseinfo", "json={}"), 405, "method POST not allowed")
        expect(env.call("DELETE", "/baseinfo"), 405)
        # known probe, binary not installed
        expect(env.put("tcp", {"state": "running"}), 404, "probe tcp is not installed")
        g = env.get("tcp")
        check(g["runtime"]["available"] is False and g["state"] == "stopped", "GET of an absent probe: %r" % g)
        # bodies
        expect(env.call("PUT", "/baseinfo", ""), 400, "empty request body")
        expect(env.call("PUT", "/baseinfo", "state=running"), 400, "no json=<JSON>")
        expect(env.call("PUT", "/baseinfo", "json={\"state\":"), 400, "invalid JSON")
        expect(env.call("PUT", "/baseinfo", "json=%ZZ"), 400, "bad URL encoding")
        expect(env.put("baseinfo", [1]), 400, "must be a JSON object")
        # fields, ranges
        expect(env.put("baseinfo", {"params": {"report_period": 601}}), 400,
               "params.report_period: 601 is out of range; must be an integer in [1, 600] s (default 5)")
        expect(env.put("baseinfo", {"params": {"report_period": "10"}}), 400, "params.report_period: not an integer")
        expect(env.put("baseinfo", {"params": {"latency_thr_ms": 10}}), 400,
               "params.latency_thr_ms: not a parameter of probe baseinfo (allowed: ")
        expect(env.put("baseinfo", {"params": {"latency_thr": 5}}), 400, "params.latency_thr: 5 is out of range")
        expect(env.put("baseinfo", {"params": {"drops_thr": 5}}), 400, "must be 0 (off) or an integer in [10, 100000]")
        expect(env.put("baseinfo", {"cmd": {"probe": ["cpu", "gpu"]}}), 400,
               'cmd.probe[1]: unknown sub-probe "gpu" of baseinfo (allowed: cpu, mem, nic, disk, net, fs, proc, host)')
        expect(env.put("baseinfo", {"state": "on"}), 400, 'state: must be "running" or "stopped"')
        expect(env.put("baseinfo", {"snoopers": {"proc_id": [-1]}}), 400, "snoopers.proc_id[0]")
        expect(env.put("baseinfo", {"status": "running"}), 400, "status: unknown field")
        # security
        expect(env.put("baseinfo", {"cmd": {"bin": "/bin/sh"}}), 403, "cmd.bin")
        pwned = os.path.join(env.tmp, "pwned")  # a path of this test only: nothing else creates it
        expect(env.put("baseinfo", {"cmd": {"check_cmd": "id > %s" % pwned}}), 403, "cmd.check_cmd")
        check(not os.path.exists(pwned), "nothing was run")
        # size: 2049 characters of JSON -> 413 (raw and URL-encoded); a body over the wire limit -> 413
        big = '{"params":{"report_period":5}}' + " " * (2049 - 30)
        expect(env.call("PUT", "/baseinfo", "json=" + big), 413, "2049 characters (at most 2048)")
        expect(env.call("PUT", "/baseinfo", urllib.parse.urlencode({"json": big})), 413, "at most 2048")
        ok = '{"params":{"report_period":5}}' + " " * (2048 - 30)
        expect(env.call("PUT", "/baseinfo", urllib.parse.urlencode({"json": ok})), 200)
        expect(env.call("PUT", "/baseinfo", "json=" + " " * 7000 + "{}"), 413, "too large")
        code, body = env.curl("-X", "PUT", env.url + "/baseinfo", "--data-urlencode", "json=" + big)
        check(code == 413, "curl with a large body: %d %s" % (code, body))

        # all or nothing: a valid part next to an invalid one changes nothing
        expect(env.put("baseinfo", {"params": {"report_period": 7}, "cmd": {"probe": ["cpu"]}}), 200)
        before = env.get("baseinfo")
        expect(env.put("baseinfo", {"params": {"report_period": 9}, "cmd": {"probe": ["cpu", "nope"]},
                                    "state": "running"}), 400, "cmd.probe[1]")
        after = env.get("baseinfo")
        check(after["params"] == {"report_period": 7} and after["cmd"]["probe"] == ["cpu"] and
              after["state"] == "stopped" and after["runtime"]["config_version"] == before["runtime"]["config_version"],
              "refused PUT changed something: %r -> %r" % (before, after))
        with open(os.path.join(env.state_dir, "rest", "baseinfo.json")) as f:
            check(json.load(f)["params"] == {"report_period": 7}, "the saved file is the last accepted one")

        # replies are JSON with user text escaped (quotes, backslash, control characters, UTF-8)
        st, doc, raw, _ = env.call("PUT", "/baseinfo", "json=" + json.dumps({"cmd": {"probe": ["a\"b\\c\n\u00e9<"]}}))
        check(st == 400 and doc is not None and "cmd.probe[0]" in doc["message"], "escaped reply: %r" % raw)
        st, doc, raw, _ = env.call("GET", "/%22%5C%0A")
        check(st == 404 and doc is not None, "escaped path in the reply: %r" % raw)
        rest_status(env, lambda s: s["refused_too_large"] >= 1 and s["puts_refused"] >= 20 and s["puts_applied"] == 2,
                    "refusals counted in status.json")
    finally:
        env.cleanup()


# ---- live reconfiguration, state ------------------------------------------------------------------------

def test_live_reconfig_start_stop():
    env = RestEnv().start()
    try:
        # baseinfo is not in the configuration file: the supervisor creates its entry
        check(not [p for p in env.sup.status()["probes"] if p["name"] == "system_infos"], "no entry before")
        expect(env.put("baseinfo", {"cmd": {"probe": ["cpu", "mem"]}, "params": {"report_period": 1},
                                    "state": "running"}), 200)
        rt = env.wait_confirmed("baseinfo")
        pid = rt["pid"]
        wait_for(lambda: len(metric_rows(env.sup, "system_cpu")) >= 2 and
                 len(metric_rows(env.sup, "system_meminfo")) >= 2, 10, "cpu and mem records")

        # live: sub-probes and period change without a restart, confirmed by the probe
        t0 = time.monotonic()
        expect(env.put("baseinfo", {"cmd": {"probe": ["mem"]}, "params": {"report_period": 1}}), 200)
        rt = env.wait_confirmed("baseinfo")
        confirm_s = time.monotonic() - t0
        check(rt["pid"] == pid and rt["starts"] == 1, "applied live, same process: %r" % rt)
        check(confirm_s < 1.0, "confirmed within 1 s (took %.3f s)" % confirm_s)
        time.sleep(0.5)  # a cpu record in flight
        ncpu = len(metric_rows(env.sup, "system_cpu"))
        nmem = len(metric_rows(env.sup, "system_meminfo"))
        time.sleep(2.6)
        check(len(metric_rows(env.sup, "system_cpu")) == ncpu, "cpu sub-probe off: no new system_cpu records")
        mem = metric_rows(env.sup, "system_meminfo")
        check(len(mem) >= nmem + 2, "mem records go on: %d -> %d" % (nmem, len(mem)))
        ts = [r["timestamp"] for r in mem]
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        check(max(gaps) < 2500, "no gap in the data across the change: %r" % gaps)
        log = env.sup.probe_log("system_infos")
        check("applied configuration version %d" % rt["config_version"] in log, "probe log shows the version")

        # stop: the process goes; GET says stopped
        expect(env.put("baseinfo", {"state": "stopped"}), 200)
        wait_for(lambda: not pid_alive(pid), 5, "probe process gone")
        g = wait_for(lambda: (lambda g: g if g["runtime"]["state"] == "stopped" else None)(env.get("baseinfo")), 5,
                     "stopped")
        check(g["state"] == "stopped" and g["runtime"]["pid"] == 0 and g["params"] == {"report_period": 1},
              "stopped, configuration kept: %r" % g)
        st = env.sup.wait_probe("system_infos", lambda p: p["desired"] == "stopped", 3, "desired: stopped")
        check(st["restarts"] == 0, "a requested stop is not a crash: %r" % st)
        # running again: a fresh start with the stored configuration
        expect(env.put("baseinfo", {"state": "running"}), 200)
        rt = env.wait_confirmed("baseinfo")
        check(rt["pid"] != pid and pid_alive(rt["pid"]) and rt["starts"] == 2, "fresh start: %r" % rt)
        # the same state again does not restart it
        expect(env.put("baseinfo", {"state": "running"}), 200)
        time.sleep(0.3)
        check(env.get("baseinfo")["runtime"]["pid"] == rt["pid"], "running + running: same process")
    finally:
        env.cleanup()
test_live_reconfig_start_stop.timeout = 60


def test_restart_with_new_flags():
    script = tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False, dir="/tmp")
    script.write('#!/bin/sh\necho "args: $*" >&2\nexec sleep 600\n')
    script.close()
    os.chmod(script.name, 0o755)
    # (1) native: dev_name chooses what is attached -> the probe restarts; others are applied live
    env = RestEnv().start()
    try:
        expect(env.put("baseinfo", {"params": {"report_period": 2}, "state": "running"}), 200)
        pid = env.wait_confirmed("baseinfo")["pid"]
        expect(env.put("baseinfo", {"params": {"report_period": 2, "dev_name": "lo"}}), 200)
        rt = wait_for(lambda: (lambda r: r if r["pid"] not in (0, pid) and r["config_confirmed"] else None)(
            env.get("baseinfo")["runtime"]), 10, "restarted and confirmed")
        check(rt["starts"] == 2 and rt["restarts"] == 0, "a restart on request, not a crash: %r" % rt)
        check(not pid_alive(pid), "old process gone")
        check(rt["command_line"].endswith("system_infos -t 2"), "flags from the table: %r" % rt["command_line"])
        check("next_command_line" not in rt, "the next start runs what runs now: %r" % rt)
        # stopped: no command runs; what the next start would run is shown as such (issue 22 item 10)
        expect(env.put("baseinfo", {"state": "stopped"}), 200)
        rt = wait_for(lambda: (lambda r: r if r["pid"] == 0 else None)(env.get("baseinfo")["runtime"]), 10,
                      "stopped")
        check(rt["command_line"] is None and rt["next_command_line"].endswith("system_infos -t 2"),
              "stopped: %r" % rt)
    finally:
        env.cleanup()
    # (2) an extend probe under a REST name has no control channel: it restarts with new flags
    env = RestEnv(extend=[extend_entry("baseinfo", script.name, param="-t 5")]).start()
    try:
        pid = env.sup.wait_probe("baseinfo", lambda p: p["pid"], 10, "extend probe up")["pid"]
        expect(env.put("baseinfo", {"params": {"report_period": 7}, "cmd": {"probe": ["cpu", "mem"]}}), 200)
        wait_for(lambda: "args: -t 5 -t 7 -P cpu,mem" in env.sup.probe_log("baseinfo"), 10, "restart with new flags")
        rt = env.get("baseinfo")["runtime"]
        check(rt["kind"] == "extend" and rt["pid"] != pid and rt["command_line"].endswith("-t 5 -t 7 -P cpu,mem"),
              "extend runtime: %r" % rt)
        expect(env.put("baseinfo", {"snoopers": {"proc_id": [1]}}), 400, "extend probe")
    finally:
        env.cleanup()
        os.unlink(script.name)
test_restart_with_new_flags.timeout = 60


# ---- persistence -------------------------------------------------------------------------------------------

def test_persistence_across_sigkill():
    state = tempfile.mkdtemp(prefix="gg-rest-state-")
    env = RestEnv(state_dir=state).start()
    env2 = None
    try:
        conf = {"cmd": {"probe": ["mem"]}, "params": {"report_period": 3}, "snoopers": {"proc_id": [1]},
                "state": "running"}
        expect(env.put("baseinfo", conf), 200)
        old = env.wait_confirmed("baseinfo")["pid"]
        env.sup.proc.send_signal(signal.SIGKILL)
        env.sup.proc.wait(5)
        wait_for(lambda: not pid_alive(old), 5, "probe dies with its supervisor")
        with open(os.path.join(state, "rest", "baseinfo.json")) as f:
            saved = json.load(f)
        check(saved["params"] == {"report_period": 3} and saved["state"] == "running", "saved: %r" % saved)
        check(not [f for f in os.listdir(os.path.join(state, "rest")) if f.endswith(".tmp")], "no temp files left")

        env2 = RestEnv(state_dir=state).start()
        rt = env2.wait_confirmed("baseinfo")
        g = env2.get("baseinfo")
        check(g["state"] == "running" and g["params"] == {"report_period": 3} and g["cmd"]["probe"] == ["mem"] and
              g["snoopers"]["proc_id"] == [1], "restored: %r" % g)
        check(rt["scope"] == {"all": False, "pids": [1], "cgroup_ids": []}, "scope restored: %r" % rt["scope"])
        check("-P mem" in rt["command_line"] and "-t 3" in rt["command_line"], "flags: %r" % rt["command_line"])
        # a stop is persisted too
        expect(env2.put("baseinfo", {"state": "stopped"}), 200)
        env2.sup.stop()
        env3 = RestEnv(state_dir=state).start()
        try:
            time.sleep(1.2)
            g = env3.get("baseinfo")
            check(g["state"] == "stopped" and g["runtime"]["starts"] == 0, "stays stopped: %r" % g)
        finally:
            env3.cleanup()
    finally:
        env.cleanup()
        if env2:
            env2.cleanup()
        shutil.rmtree(state, ignore_errors=True)
test_persistence_across_sigkill.timeout = 60


# ---- TLS ------------------------------------------------------------------------------------------------

def make_pki(d):
    def ossl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True, timeout=30)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=gg-test-ca")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
         "-days", "2", "-extfile", "san.ext")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "cli.key", "-out", "cli.csr", "-subj", "/CN=client")
    ossl("x509", "-req", "-in", "cli.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "cli.pem",
         "-days", "2")
    # a client certificate from another CA
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2",
         "-subj", "/CN=rogue")


def test_mtls():
    pki = tempfile.mkdtemp(prefix="gg-pki-")
    try:
        make_pki(pki)
        p = lambda f: os.path.join(pki, f)  # noqa: E731
        tls = 'ssl_auth = "on"; private_key = "%s"; cert_file = "%s"; ca_file = "%s";' % (p("srv.key"), p("srv.pem"),
                                                                                         p("ca.pem"))
        env = RestEnv(extra_rest=tls).start()
        try:
            u = "https://127.0.0.1:%d" % env.port
            code, body = env.curl("--cacert", p("ca.pem"), "--cert", p("cli.pem"), "--key", p("cli.key"),
                                  "-X", "PUT", u + "/baseinfo", "-d", 'json={"params":{"report_period":4}}')
            check(code == 200 and json.loads(body)["result"] == "success", "trusted client: %d %s" % (code, body))
            code, body = env.curl("--cacert", p("ca.pem"), "--cert", p("cli.pem"), "--key", p("cli.key"),
                                  u + "/baseinfo")
            check(code == 200 and json.loads(body)["params"] == {"report_period": 4}, "GET over mTLS: %s" % body)
            code, body = env.curl("--cacert", p("ca.pem"), "-X", "PUT", u + "/baseinfo", "-d",
                                  'json={"params":{"report_period":9}}')
            check(code == 403 and "client certificate" in json.loads(body)["message"], "no client cert: %d %s" %
                  (code, body))
            code, body = env.curl("--cacert", p("ca.pem"), "--cert", p("rogue.pem"), "--key", p("rogue.key"),
                                  "-X", "PUT", u + "/baseinfo", "-d", 'json={"params":{"report_period":9}}')
            check(code == 403, "untrusted client cert: %d %s" % (code, body))
            code, _ = env.curl("http://127.0.0.1:%d/baseinfo" % env.port)
            check(code != 200, "plain HTTP is not served on the TLS port (%d)" % code)
            code, _ = env.curl("--cacert", p("rogue.pem"), "--cert", p("cli.pem"), "--key", p("cli.key"), u + "/probes")
            check(code == 0, "the server certificate is checked by the client too")
            g = json.loads(env.curl("--cacert", p("ca.pem"), "--cert", p("cli.pem"), "--key", p("cli.key"),
                                    u + "/baseinfo")[1])
            check(g["params"] == {"report_period": 4}, "refused requests changed nothing: %r" % g["params"])
            rest_status(env, lambda s: s["refused_client_cert"] >= 2, "client certificate refusals counted")
        finally:
            env.cleanup()
        # HTTPS without ca_file: no client certificate needed
        env = RestEnv(extra_rest='ssl_auth = "on"; private_key = "%s"; cert_file = "%s";' % (p("srv.key"),
                                                                                           p("srv.pem"))).start()
        try:
            code, body = env.curl("--cacert", p("ca.pem"), "https://127.0.0.1:%d/probes" % env.port)
            check(code == 200 and "baseinfo" in body, "HTTPS without client certs: %d" % code)
        finally:
            env.cleanup()
    finally:
        shutil.rmtree(pki, ignore_errors=True)
test_mtls.timeout = 60


# ---- snoopers ------------------------------------------------------------------------------------------

class Procs:
    """Processes the test starts (copies of sleep under a unique name) and cgroups it makes."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gg-snp-")
        self.procs = []
        self.cgroups = []

    def binary(self, name):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            shutil.copy("/bin/sleep", path)
        return path

    def start(self, name, arg="300", cgroup=None):
        """A copy of sleep named name (sleeping arg s), moved into cgroup when given."""
        p = subprocess.Popen([self.binary(name), arg])
        self.procs.append(p)
        if cgroup:
            self.move(p, cgroup)
        return p

    def cgroup(self, rel):
        path = os.path.join(cgroup2_root(), rel.lstrip("/"))
        parts = rel.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = os.path.join(cgroup2_root(), *parts[:i])
            if not os.path.isdir(d):
                os.mkdir(d)
                self.cgroups.append(d)
        return path

    def move(self, proc, cg):
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(proc.pid))

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for d in reversed(self.cgroups):
            rmdir_retry(d)
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def snooping():
    """Procs and a started RestEnv, for the snooper tests; the supervisor cleaned up, then the processes
    and cgroups."""
    procs, env = Procs(), None
    try:
        env = RestEnv().start()
        yield procs, env
    finally:
        teardown(env, procs)


def scope_of(env, probe="baseinfo"):
    return env.get(probe)["runtime"]["scope"]


def test_snoopers_real_processes():
    tag = "%05d" % random.randrange(100000)
    comm = "ggsnp" + tag  # unique, within TASK_COMM_LEN
    cid = "%064x" % random.getrandbits(256)
    uid = "%08x-%04x-%04x-%04x-%012x" % (random.getrandbits(32), random.getrandbits(16), random.getrandbits(16),
                                         random.getrandbits(16), random.getrandbits(48))
    cid2 = "%064x" % random.getrandbits(256)
    with snooping() as (procs, env):
        a = procs.start(comm, "300")
        b = procs.start(comm, "301")
        other = procs.start("ggoth" + tag)
        expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": comm}]}, "state": "running"}), 200)
        rt = env.wait_confirmed("baseinfo")
        check(rt["scope"]["all"] is False and rt["scope"]["pids"] == sorted([a.pid, b.pid]),
              "comm resolves to both: %r" % rt["scope"])
        v = rt["config_version"]
        # a new matching process is seen within 1 s (scan every 0.5 s), and the probe is told
        t0 = time.monotonic()
        c = procs.start(comm, "302")
        wait_for(lambda: c.pid in scope_of(env)["pids"], 3, "new process in scope")
        seen = time.monotonic() - t0
        check(seen <= 1.5, "new process seen after %.2f s (want about 1 s)" % seen)
        rt = env.wait_confirmed("baseinfo")
        check(rt["config_version"] > v, "a scope change is a new configuration version: %r" % rt)
        # one that exits is dropped
        t0 = time.monotonic()
        a.kill()
        a.wait()
        wait_for(lambda: a.pid not in scope_of(env)["pids"], 3, "exited process dropped")
        check(time.monotonic() - t0 <= 1.5, "dropped within about 1 s")
        # cmdline substring narrows comm
        expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": comm, "cmdline": "301"}]}}), 200)
        check(env.wait_confirmed("baseinfo")["scope"]["pids"] == [b.pid], "cmdline filter: %r" % scope_of(env))
        # comm is a POSIX extended regular expression found anywhere in the comm, as in gala-gopher
        expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": "^gg(snp|oth)%s$" % tag}]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        check(sc["pids"] == sorted([b.pid, c.pid, other.pid]), "comm alternation: %r" % sc)
        expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": "snp" + tag}]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        check(sc["pids"] == sorted([b.pid, c.pid]), "comm unanchored: %r" % sc)
        # patterns that could not be bounded are refused, and say why
        for pat, why in (("(a)\\1", "back-references"), ("a{99}", "intervals"), ("(java", "regular expression"),
                         ("x" * 65, "1 to 64 characters")):
            expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": pat}]}}), 400, why)

        # containers: docker's systemd layout, matched by a 12-character prefix
        dock = procs.cgroup("system.slice/docker-%s.scope" % cid)
        pod_leaf = procs.cgroup("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/"
                                "cri-containerd-%s.scope" % (uid.replace("-", "_"), cid2))
        d = procs.start("ggdoc" + tag, cgroup=dock)
        k = procs.start("ggk8s" + tag, cgroup=pod_leaf)
        expect(env.put("baseinfo", {"snoopers": {"container_id": [cid[:12]]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        check(sc["pids"] == [d.pid] and sc["cgroup_ids"] == [os.stat(dock).st_ino],
              "container %s: %r (cgroup inode %d)" % (cid[:12], sc, os.stat(dock).st_ino))
        # a process started later inside the container is picked up
        d2 = procs.start("ggdoc" + tag, "303", cgroup=dock)
        wait_for(lambda: scope_of(env)["pids"] == sorted([d.pid, d2.pid]), 3, "second container process")
        # pods: kubepods path with the UID's '_' form, asked for with '-'; the full container id works too
        expect(env.put("baseinfo", {"snoopers": {"pod_id": [uid]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        check(sc["pids"] == [k.pid] and sc["cgroup_ids"] == [os.stat(pod_leaf).st_ino], "pod %s: %r" % (uid, sc))
        expect(env.put("baseinfo", {"snoopers": {"container_id": [cid2]}}), 200)
        check(env.wait_confirmed("baseinfo")["scope"]["pids"] == [k.pid], "full container id")
        # the union of everything
        expect(env.put("baseinfo", {"snoopers": {"proc_id": [other.pid], "proc_name": [{"comm": comm}],
                                                 "container_id": [cid[:16]], "pod_id": ["pod" + uid]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        want = sorted([other.pid, b.pid, c.pid, d.pid, d2.pid, k.pid])
        check(sc["pids"] == want, "union: %r, want %r" % (sc["pids"], want))
        check(sorted(sc["cgroup_ids"]) == sorted([os.stat(dock).st_ino, os.stat(pod_leaf).st_ino]), "cgroups: %r" % sc)
        # no snoopers: everything again
        expect(env.put("baseinfo", {"snoopers": {}}), 200)
        check(env.wait_confirmed("baseinfo")["scope"] == {"all": True, "pids": [], "cgroup_ids": []}, "all")
        log = env.sup.probe_log("system_infos")
        check(log.count("applied configuration version") >= 8, "the probe applied every scope change")
test_snoopers_real_processes.timeout = 60


def test_blacklist_real_processes():
    """The top-level blacklist (gala-gopher's, the shape of snoopers) leaves what it matches out of the
    scope: a process of a matched name, a process inside a matched container (whose cgroup is then not
    watched as a whole), and, without snoopers, every process but the blacklisted ones; GET shows it;
    a blacklisted process started later never enters the scope."""
    tag = "%05d" % random.randrange(100000)
    comm = "ggbl" + tag
    cid = "%064x" % random.getrandbits(256)
    with snooping() as (procs, env):
        a = procs.start(comm, "300")
        b = procs.start(comm, "301")
        expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": "^" + comm}]},
                                    "blacklist": {"proc_name": [{"comm": comm, "cmdline": "301"}]},
                                    "state": "running"}), 200)
        rt = env.wait_confirmed("baseinfo")
        check(rt["scope"]["pids"] == [a.pid], "blacklisted by cmdline: %r" % rt["scope"])
        doc = env.get("baseinfo")
        check(doc["blacklist"] == {"proc_name": [{"comm": comm, "cmdline": "301", "debugging_dir": ""}]},
              "GET shows the blacklist: %r" % doc.get("blacklist"))
        c = procs.start(comm, "301")  # blacklisted, started later
        d = procs.start(comm, "302")
        wait_for(lambda: scope_of(env)["pids"] == sorted([a.pid, d.pid]), 3, "the later one, not the blacklisted")
        # a container watched by its cgroup, one of its processes blacklisted: the others by pid only
        dock = procs.cgroup("system.slice/docker-%s.scope" % cid)
        x = procs.start("ggbx" + tag, cgroup=dock)
        y = procs.start("ggby" + tag, cgroup=dock)
        expect(env.put("baseinfo", {"snoopers": {"container_id": [cid[:12]]},
                                    "blacklist": {"proc_id": [y.pid]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        check(sc["pids"] == [x.pid] and sc["cgroup_ids"] == [], "container without its blacklisted process: %r" % sc)
        expect(env.put("baseinfo", {"blacklist": {}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        check(sc["pids"] == sorted([x.pid, y.pid]) and sc["cgroup_ids"] == [os.stat(dock).st_ino],
              "empty blacklist: the whole container again: %r" % sc)
        # no snoopers: every process but the blacklisted, by pid
        expect(env.put("baseinfo", {"snoopers": {}, "blacklist": {"proc_name": [{"comm": "^ggb[lxy]" + tag}]}}), 200)
        sc = env.wait_confirmed("baseinfo")["scope"]
        mine = {a.pid, b.pid, c.pid, d.pid, x.pid, y.pid}
        check(sc["all"] is False and not mine & set(sc["pids"]), "all but the blacklisted: %d pids" % len(sc["pids"]))
        if not sc.get("truncated"):  # more processes than the probes' scope maps hold: a prefix of them
            check(os.getpid() in sc["pids"] and env.sup.proc.pid in sc["pids"], "others listed: %r" % sc["pids"][:20])
        expect(env.put("baseinfo", {"blacklist": {"proc_id": [0]}}), 400, "blacklist.proc_id[0]")


test_blacklist_real_processes.timeout = 60


# ---- keep-alive, concurrency -------------------------------------------------------------------------

def test_keepalive_and_concurrent_clients():
    import http.client
    env = RestEnv().start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", env.port, timeout=10)
        local = None
        for i in range(300):
            conn.request("GET", "/probes" if i % 2 else "/baseinfo")
            r = conn.getresponse()
            body = r.read()
            check(r.status == 200 and json.loads(body), "GET %d" % i)
            port = conn.sock.getsockname()[1]
            check(local in (None, port), "keep-alive: request %d on a new connection" % i)
            local = port
        # a PUT on the same connection keeps it too
        conn.request("PUT", "/baseinfo", body="json=" + json.dumps({"params": {"report_period": 3}}),
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        r = conn.getresponse()
        check(r.status == 200 and json.loads(r.read())["result"] == "success", "PUT on a kept connection")
        check(conn.sock.getsockname()[1] == local, "same connection after PUT")
        conn.close()

        errors, puts = [], []
        lock = threading.Lock()

        def client(n):
            try:
                c = http.client.HTTPConnection("127.0.0.1", env.port, timeout=10)
                for j in range(40):
                    if j % 4 == 0:
                        period = 1 + (n * 40 + j) % 600
                        c.request("PUT", "/baseinfo", body=urllib.parse.urlencode(
                            {"json": json.dumps({"params": {"report_period": period}})}),
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
                        with lock:
                            puts.append(period)
                    else:
                        c.request("GET", "/baseinfo")
                    r = c.getresponse()
                    doc = json.loads(r.read())
                    if r.status != 200:
                        raise TestFailure("client %d request %d: %d %r" % (n, j, r.status, doc))
                c.close()
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append("%s" % e)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        check(not errors, "concurrent clients: %r" % errors[:3])
        final = env.get("baseinfo")["params"]["report_period"]
        check(final in puts, "the stored configuration is one of the PUTs: %r" % final)
        rest_status(env, lambda s: s["puts_applied"] == len(puts) + 1 and s["puts_refused"] == 0,
                    "every one of the %d PUTs applied once" % (len(puts) + 1))
    finally:
        env.cleanup()
test_keepalive_and_concurrent_clients.timeout = 60
