"""test_seed_examples.py - every curl example of seed 000 (the gala-gopher manual), pasted verbatim and run
through bash against the real supervisor and the real stackprobe; only "http://localhost:9999" (and
"<gopher-node-ip>:9999") become the test supervisor's REST address. A user who copies a command from
the manual gets what the manual promises, or a clear answer where this build differs (the sliprobe
example is not valid JSON: 400). The supervisor runs in a private
mount namespace with a tmpfs on /var/log, so the examples' /var/log/gala-gopher directories are the
test's own. Also: cmd.bin spelled another way (config/.., a root-owned symbolic link) is accepted and
anything else refused, and the spawn wrapper runs a binary only if it is still the file checked."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import (GOPHER, PROBES, Supervisor, TestFailure, check, pid_alive, rest_call, rest_port,
                     rest_section, wait_for)
from seed_000 import (SEED_ADVANCED, SEED_BASIC, SEED_GET, SEED_GET_REPLY, SEED_PARAMS, SEED_SCOPE, SEED_SLI,
                      SEED_STATE, SEED_TPROF_START, SEED_TPROF_STOP)

SEED_PARAMS_WARNING = ("params.sample_period: not a parameter of probe flamegraph (gala-gopher applies it to io, "
                       "tcp); accepted and ignored")


class SeedEnv:
    """The real supervisor with the real probes (build/probes), REST on a free port, in a private mount
    namespace whose /var/log is a tmpfs holding /var/log/gala-gopher (the examples' output base)."""

    def __init__(self, probes_dir=PROBES):
        self.tmp = tempfile.mkdtemp(prefix="gg-seed-")
        rest = rest_section(os.path.join(self.tmp, "state"), extra='output_base_dir = "/var/log/gala-gopher";')
        self.sup = Supervisor(extra=rest, probes_dir=probes_dir)
        self.port = None

    def start(self):
        sup = self.sup
        sup.stderr = open(os.path.join(sup.dir, "stderr.txt"), "w")
        script = 'mount -t tmpfs -o mode=0755 tmpfs /var/log && mkdir -p /var/log/gala-gopher && exec "$0" -c "$1"'
        sup.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script, GOPHER,
                                     sup.conf], stdout=sup.stderr, stderr=sup.stderr, start_new_session=True)
        wait_for(lambda: sup.proc.poll() is not None or os.path.exists(sup.status_path()), 10, "status.json")
        check(sup.proc.poll() is None, "supervisor exited at start: %s" % sup.stderr_text())
        self.port = rest_port(sup)
        return self

    def run(self, command):
        """Run a seed command through bash with the host replaced; (HTTP status, reply text)."""
        cmd = command.replace("http://localhost:9999", "http://127.0.0.1:%d" % self.port)
        cmd = cmd.replace("http://<gopher-node-ip>:9999", "http://127.0.0.1:%d" % self.port)
        check(cmd.startswith("curl "), "a curl command: %r" % cmd[:40])
        cmd = "curl -s -S -w '\\n%{http_code}' " + cmd[5:]
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=20)
        body, _, code = r.stdout.rpartition("\n")
        check(code.isdigit(), "curl ran: %r %r" % (r.stdout[-200:], r.stderr[-300:]))
        return int(code), body

    def get(self, probe):
        st, doc, raw, _ = rest_call(self.port, "GET", "/" + probe)
        check(st == 200 and doc is not None, "GET /%s: %d %s" % (probe, st, raw[:300]))
        return doc

    def wait_confirmed(self, probe, timeout=20):
        def ok():
            rt = self.get(probe)["runtime"]
            return rt if rt.get("config_confirmed") and rt.get("pid") else None
        return wait_for(ok, timeout, "%s runs and confirms its configuration" % probe, interval=0.1)

    def sup_log(self):
        with open(os.path.join(self.sup.log_dir, "debug", "gala-gopher.log"), errors="replace") as f:
            return f.read()

    def cleanup(self):
        try:
            self.sup.cleanup()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def success(code, body, what):
    check(code == 200, "%s: want 200, got %d %s" % (what, code, body[:400]))
    doc = json.loads(body)
    check(doc["result"] == "success" and doc["message"] == "New config takes effect", "%s: %r" % (what, doc))
    return doc


def test_seed_scope_params_state_get():
    """The manual's REST section in order: scope, runtime parameters, start, GET (its printed reply)."""
    env = SeedEnv().start()
    try:
        doc = success(*env.run(SEED_SCOPE), what="scope example")
        check("warnings" not in doc, "no warnings for a valid scope: %r" % doc)
        g = env.get("flamegraph")
        check(g["cmd"]["bin"] == os.path.join(PROBES, "stackprobe") and g["state"] == "stopped",
              "stored, not started (no state given): %r" % g)

        # sample_period is io and tcp's only: gala-gopher ignores it for flamegraph, so it is accepted,
        # and the reply and the log say it has no effect
        doc = success(*env.run(SEED_PARAMS), what="runtime parameters example")
        check(doc.get("warnings") == [SEED_PARAMS_WARNING], "the warning: %r" % doc)
        wait_for(lambda: SEED_PARAMS_WARNING in env.sup_log(), 5, "the warning in the supervisor's log")

        doc = success(*env.run(SEED_STATE), what="start/stop example (with its // comment)")
        rt = env.wait_confirmed("flamegraph")
        check(pid_alive(rt["pid"]), "stackprobe %d runs" % rt["pid"])

        code, body = env.run(SEED_GET)
        check(code == 200, "GET example: %d %s" % (code, body[:300]))
        got, want = json.loads(body), SEED_GET_REPLY
        # the manual's reply, except that cmd.bin is where the binary is installed here
        check(got["cmd"]["bin"] == os.path.join(PROBES, "stackprobe"), "cmd.bin: %r" % got["cmd"])
        got["cmd"]["bin"] = want["cmd"]["bin"]
        for part in ("cmd", "snoopers", "params", "state"):
            check(got[part] == want[part], "GET %s: %r, the manual prints %r" % (part, got[part], want[part]))
        check(set(got) - set(want) == {"runtime"}, "no other parts but runtime: %r" % sorted(got))
        # the probe really applied the scope: the stored configuration is what it confirmed
        check(got["runtime"]["config_version_applied"] == got["runtime"]["config_version"],
              "probe confirmed the last version: %r" % got["runtime"])
    finally:
        env.cleanup()
test_seed_scope_params_state_get.timeout = 90


def test_seed_stackprobe_startup_examples():
    """The stackprobe chapter's basic and advanced startup commands: both start the real stackprobe,
    which confirms the configuration (sub-probes, perf period, directories) in its log."""
    env = SeedEnv().start()
    try:
        success(*env.run(SEED_BASIC), what="basic startup example")
        rt = env.wait_confirmed("flamegraph")
        g = env.get("flamegraph")
        check(g["cmd"]["probe"] == ["oncpu"] and g["state"] == "running" and
              g["snoopers"]["proc_name"] == [{"comm": "cadvisor", "cmdline": "", "debugging_dir": ""}],
              "basic: %r" % g)

        doc = success(*env.run(SEED_ADVANCED), what="advanced startup example")
        check("warnings" not in doc, "every parameter of the advanced example is stackprobe's: %r" % doc)
        wait_for(lambda: env.get("flamegraph")["runtime"]["config_version_applied"] ==
                 env.get("flamegraph")["runtime"]["config_version"], 20, "advanced configuration confirmed")
        g = env.get("flamegraph")
        check(g["runtime"]["pid"] == rt["pid"], "applied live, same process: %r -> %r" % (rt["pid"], g["runtime"]))
        check(g["cmd"]["probe"] == ["oncpu", "offcpu", "mem"] and g["params"]["perf_sample_period"] == 100 and
              g["params"]["svg_dir"] == "/var/log/gala-gopher/stacktrace" and g["params"]["multi_instance"] == 1,
              "advanced: %r" % g)
        # the probe's own account of what it applied
        pat = re.compile(r"configuration \d+: sub-probes oncpu,offcpu,mem, perf period 100 ms, svg period 300 s, "
                         r"flame_dir /var/log/gala-gopher/flamegraph, svg_dir /var/log/gala-gopher/stacktrace")
        wait_for(lambda: pat.search(env.sup.probe_log("stackprobe")), 10, "stackprobe logs the advanced configuration")
    finally:
        env.cleanup()
test_seed_stackprobe_startup_examples.timeout = 90


def test_seed_tprofiling_examples():
    """The seed's two tprofiling commands: the start runs the probe with the five event kinds and the scope by
    name (no java here: nothing in scope), the stop stops it."""
    env = SeedEnv().start()
    try:
        code, body = env.run(SEED_TPROF_START)
        check(code == 200, "tprofiling start: %d %s" % (code, body))
        rt = env.wait_confirmed("tprofiling")
        g = env.get("tprofiling")
        check(g["state"] == "running" and g["cmd"]["probe"] ==
              ["oncpu", "syscall_file", "syscall_net", "syscall_sched", "syscall_lock"] and
              [p["comm"] for p in g["snoopers"]["proc_name"]] == ["java"], "GET: %r" % g)
        wait_for(lambda: "scope filtered" in env.sup.probe_log("tprofiling"), 10, "tprofiling applies the scope")
        code, body = env.run(SEED_TPROF_STOP)
        check(code == 200, "tprofiling stop: %d %s" % (code, body))
        wait_for(lambda: env.get("tprofiling")["runtime"].get("pid") in (None, 0) or
                 env.get("tprofiling")["runtime"].get("pid") != rt["pid"], 20, "tprofiling stops")
    finally:
        env.cleanup()
test_seed_tprofiling_examples.timeout = 60


def test_seed_sli_example():
    """The sliprobe chapter's command is not valid JSON ({"container_id": "abcd12345678","abcd87654321"}
    has a string without a key): 400 with the place, and nothing changes or starts."""
    env = SeedEnv().start()
    try:
        code, body = env.run(SEED_SLI)
        doc = json.loads(body)
        check(code == 400 and doc["result"] == "failed" and doc["message"].startswith("invalid JSON near"),
              "sli example: %d %s" % (code, body))
        g = env.get("sli")
        check(g["state"] == "stopped" and g["runtime"].get("pid", 0) == 0 and g.get("params", {}) == {},
              "nothing applied: %r" % g)
        # the same request with the object it meant is accepted
        fixed = SEED_SLI.replace('[{"container_id": "abcd12345678","abcd87654321"}]', '["abcd12345678","abcd87654321"]')
        fixed = fixed.replace('"state":"running"', '"state":"stopped"')
        success(*env.run(fixed), what="the sli example with valid JSON")
    finally:
        env.cleanup()
test_seed_sli_example.timeout = 60


def test_seed_params_outside_scope():
    """gala-gopher's parameter names outside a probe's scope: 200 with one warning each (and a log line);
    its names with invalid values and names it does not know: 400, nothing changed."""
    env = SeedEnv().start()
    try:
        def put(probe, params):
            return rest_call(env.port, "PUT", "/" + probe, "json=" + json.dumps({"params": params}))
        st, doc, raw, _ = put("socket", {"latency_thr": 50, "svg_period": 60, "report_period": 30})
        check(st == 200 and doc["warnings"] == [
            "params.latency_thr: not a parameter of probe socket (gala-gopher applies it to tcp, io, proc, ksli); "
            "accepted and ignored",
            "params.svg_period: not a parameter of probe socket (gala-gopher applies it to flamegraph); "
            "accepted and ignored"], "socket: %d %s" % (st, raw))
        for params, msg in (({"latency_thr": 5}, "params.latency_thr: 5 is out of range"),
                            ({"svg_period": 0}, "params.svg_period: 0 is out of range"),
                            ({"report_cport": 1}, "params.report_cport: not a parameter of probe socket"),
                            ({"sample_periods": 100}, "params.sample_periods: not a parameter of probe socket")):
            st, doc, raw, _ = put("socket", params)
            check(st == 400 and doc["message"].startswith(msg), "%r: %d %s" % (params, st, raw))
        check(env.get("socket")["params"] == {"latency_thr": 50, "svg_period": 60, "report_period": 30},
              "refused PUTs changed nothing: %r" % env.get("socket")["params"])
        log = env.sup_log()
        check("rest: PUT /socket: params.svg_period: not a parameter of probe socket" in log,
              "the log says so: %s" % log[-1500:])
    finally:
        env.cleanup()
test_seed_params_outside_scope.timeout = 60


def test_seed_cmd_bin_spellings():
    """cmd.bin naming the registered binary another way (a "config/.." detour, a root-owned symbolic
    link) is accepted: the canonical paths of root-owned files are compared. A link to another binary,
    a path through a directory others can write to and a link owned by another user are refused (403),
    and only the registered binary ever runs."""
    tmp = tempfile.mkdtemp(prefix="gg-seed-bin-")
    env = None
    try:
        probes = os.path.join(tmp, "probes")
        os.makedirs(probes)
        os.makedirs(os.path.join(tmp, "config"))
        os.symlink(os.path.join(PROBES, "stackprobe"), os.path.join(probes, "stackprobe"))
        os.symlink(os.path.join(PROBES, "stackprobe"), os.path.join(tmp, "stackprobe-link"))
        os.symlink(os.path.join(PROBES, "system_infos"), os.path.join(tmp, "other-link"))
        os.makedirs(os.path.join(tmp, "open"))
        os.chmod(os.path.join(tmp, "open"), 0o777)
        os.symlink(os.path.join(PROBES, "stackprobe"), os.path.join(tmp, "open", "link"))
        os.symlink(os.path.join(PROBES, "stackprobe"), os.path.join(tmp, "nobody-link"))
        os.lchown(os.path.join(tmp, "nobody-link"), 65534, 65534)
        env = SeedEnv(probes_dir=probes).start()
        reg = os.path.join(probes, "stackprobe")
        for bin_, want in ((os.path.join(tmp, "config", "..", "probes", "stackprobe"), 200),
                           (os.path.join(tmp, "stackprobe-link"), 200),
                           (os.path.realpath(reg), 200),
                           (os.path.join(tmp, "other-link"), 403),
                           (os.path.join(PROBES, "system_infos"), 403),
                           (os.path.join(tmp, "open", "link"), 403),
                           (os.path.join(tmp, "nobody-link"), 403),
                           ("probes/stackprobe", 403)):
            st, doc, raw, _ = rest_call(env.port, "PUT", "/flamegraph",
                                        "json=" + json.dumps({"cmd": {"bin": bin_, "probe": ["oncpu"]}}))
            check(st == want, "cmd.bin %s: want %d, got %d %s" % (bin_, want, st, raw[:300]))
            if want == 403:
                check("is not the registered binary of probe flamegraph" in doc["message"], raw)
        check(env.get("flamegraph")["cmd"]["bin"] == reg, "the registered binary is what is stored")
    finally:
        if env:
            env.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
test_seed_cmd_bin_spellings.timeout = 60


def test_exec_wrapper_checks_identity():
    """The spawn wrapper runs the binary only when it is still the file the supervisor checked (st_dev
    and st_ino): a path replaced after the check runs nothing (exit 126)."""
    tmp = tempfile.mkdtemp(prefix="gg-seed-exec-")
    try:
        prog = os.path.join(tmp, "prog")
        shutil.copy("/bin/true", prog)
        st = os.stat(prog)
        ok = subprocess.run([GOPHER, "--exec-probe", "%d:%d:%d" % (os.getpid(), st.st_dev, st.st_ino), prog],
                            capture_output=True, text=True, timeout=10)
        check(ok.returncode == 0, "the checked file runs: %d %s" % (ok.returncode, ok.stderr))
        # the path now names another file (same content, new inode): refused
        os.rename(prog, prog + ".old")
        shutil.copy("/bin/true", prog)
        bad = subprocess.run([GOPHER, "--exec-probe", "%d:%d:%d" % (os.getpid(), st.st_dev, st.st_ino), prog],
                             capture_output=True, text=True, timeout=10)
        check(bad.returncode == 126 and "not the file checked before" in bad.stderr,
              "a replaced binary is refused: %d %s" % (bad.returncode, bad.stderr))
        # a script is checked the same way
        script = os.path.join(tmp, "s.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\necho \"ran $0\"\n")
        os.chmod(script, 0o755)
        st = os.stat(script)
        ok = subprocess.run([GOPHER, "--exec-probe", "%d:%d:%d" % (os.getpid(), st.st_dev, st.st_ino), script],
                            capture_output=True, text=True, timeout=10)
        check(ok.returncode == 0 and ok.stdout.strip() == "ran " + script, "script: %r %r" % (ok.stdout, ok.stderr))
        bad = subprocess.run([GOPHER, "--exec-probe", "%d:%d:%d" % (os.getpid(), st.st_dev, st.st_ino + 1), script],
                             capture_output=True, text=True, timeout=10)
        check(bad.returncode == 126, "script with another identity: %d %s" % (bad.returncode, bad.stderr))
    except TestFailure:
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
test_exec_wrapper_checks_identity.timeout = 30
