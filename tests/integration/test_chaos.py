"""test_chaos.py - the attacks of issue #22, each as the test performs it, against the real supervisor."""
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from harness import (BUILD, GOPHER, ROOT, Supervisor, check, extend_entry, flood_supervisor, free_port, http_get,
                     json_lines, parse_prom, probe_entry, proc_cpu_seconds, proc_status_kb, prom_value, rest_port,
                     rest_put, rest_section, wait_for)


def running(p):
    return p["state"] == "running" and p["pid"] > 0


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_umask_000_does_not_open_files():
    """Started with umask 000 and an existing 0755 run_dir: nothing it creates is open to others."""
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")])
    os.makedirs(s.run_dir)
    os.chmod(s.run_dir, 0o755)
    old = os.umask(0)
    try:
        s.start()
    finally:
        os.umask(old)
    try:
        s.wait_probe("system_infos", running, 5, "running")
        children = os.path.join(s.run_dir, "children")
        wait_for(lambda: os.path.exists(children), 5, "children file")
        for name in ("data.ipc", "ctrl.ipc"):
            m = mode(os.path.join(s.run_dir, name))
            check(m == 0o600, "%s mode %04o, want 0600" % (name, m))
        check(mode(children) == 0o600, "children mode %04o, want 0600" % mode(children))
        m = mode(s.status_path())
        check(m & 0o077 in (0, 0o040), "status.json mode %04o, want 0600 or 0640" % m)
    finally:
        s.cleanup()


def test_open_run_dir_refused():
    """A run_dir or state_dir writable by group/others is refused at start, naming the key and why."""
    for key, group in (("run_dir", 0o775), ("run_dir", 0o757), ("state_dir", 0o777)):
        # the state dir is named before the supervisor's directory exists: a sibling made for the test
        state = tempfile.mkdtemp(prefix="gg-chaos-state-") if key == "state_dir" else None
        s = Supervisor(extra=rest_section(os.path.join(state, "state")) if state else "")
        try:
            target = s.run_dir
            if state:
                target = os.path.join(state, "state")
            os.makedirs(target)
            os.chmod(target, group)
            r = subprocess.run([GOPHER, "-c", s.conf], capture_output=True, text=True, timeout=10)
            check(r.returncode != 0, "%s mode %04o accepted" % (key, group))
            check(key in r.stderr and "writable" in r.stderr, "error names key and reason: %r" % r.stderr)
            check(not os.path.exists(os.path.join(s.run_dir, "data.ipc")), "no socket made")
        finally:
            s.cleanup()
            if state:
                shutil.rmtree(state, ignore_errors=True)


def _inject(s, user):
    """Publish 2,000 records as system_infos from a process the supervisor did not spawn."""
    pub = os.path.join(BUILD, "bench", "ipc_pub")
    pre = None
    if user:
        def pre():
            os.setgid(65534)
            os.setuid(65534)
    return subprocess.run([pub, "-u", "ipc://%s/data.ipc" % s.run_dir, "-n", "system_infos", "-r", "2000",
                           "-d", "1000"], capture_output=True, text=True, timeout=20, preexec_fn=pre)


def test_record_injection_refused():
    """Root and an unprivileged user (socket opened up, as under the old umask) both try to publish
    records as system_infos: nothing is taken in, and the refusals are counted."""
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")]).start()
    try:
        s.wait_probe("system_infos", lambda p: p["batches"] > 0, 10, "first real batch")
        os.chmod(os.path.join(s.run_dir, "data.ipc"), 0o777)
        os.chmod(s.run_dir, 0o755)
        for user in (False, True):
            _inject(s, user)
        # status.json is rewritten every second: wait for a rewrite after the injections
        t0 = s.status()["supervisor"]["uptime_ms"]
        wait_for(lambda: s.status()["supervisor"]["uptime_ms"] > t0 + 1000, 5, "status rewrite")
        st = s.status()
        p = [x for x in st["probes"] if x["name"] == "system_infos"][0]
        check(p["ipc_lost_batches"] == 0, "phantom lost batches: %d" % p["ipc_lost_batches"])
        check(p["rejected_total"] == 0 and p["bad_batches"] == 0, "injected records reached validation: %r" %
              p["rejected"])
        check(st["supervisor"]["ipc_refused_peers"] >= 2, "refusals counted: %r" % st["supervisor"])
        s.wait_probe("system_infos", lambda q: q["batches"] > p["batches"], 5, "real probe still delivers")
    finally:
        s.cleanup()



def _starttime(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def test_children_file_cannot_name_victims():
    """Another root process appended to `children` (as the file it is, and in a copy made 0644) is not
    killed by the restarted supervisor; the real left-behind probe still is."""
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")]).start()
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        s.wait_probe("system_infos", running, 5, "running")
        children = os.path.join(s.run_dir, "children")
        wait_for(lambda: os.path.exists(children) and os.path.getsize(children) > 0, 5, "children file")
        # A supervisor killed hard leaves its children file behind; the attacker appends a victim.
        s.proc.kill()
        s.proc.wait()
        with open(children, "a") as f:
            f.write("%d %d\n" % (victim.pid, _starttime(victim.pid)))
        s.start()
        wait_for(lambda: "not killing process %d" % victim.pid in s.sup_log(), 5, "victim refused, logged")
        check(victim.poll() is None, "victim was killed")
        s.stop()
        # The same file, but not mode 0600: nothing listed in it is trusted.
        with open(children, "w") as f:
            f.write("%d %d\n" % (victim.pid, _starttime(victim.pid)))
        os.chmod(children, 0o644)
        s.start()
        wait_for(lambda: "not reaping left-behind probes" in s.sup_log(), 5, "open children file refused")
        check(victim.poll() is None, "victim was killed")
    finally:
        victim.kill()
        victim.wait()
        s.cleanup()


SYSINFO = os.path.join(BUILD, "probes", "system_infos")


def _probe_copy(d, name="system_infos"):
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    shutil.copy(SYSINFO, path)
    os.chmod(path, 0o755)
    return path


def test_untrusted_probe_binaries_refused():
    """At configuration load: a world-writable binary, one owned by another user, one in a 0777
    folder, a symlink to a world-writable file; at spawn: a binary made writable after it was accepted;
    at REST PUT: the registered binary made writable. Each refused, naming the reason."""
    cases = []
    s = Supervisor()
    try:
        d = os.path.join(s.dir, "p1")
        os.chmod(_probe_copy(d), 0o777)
        cases.append((d, "writable by others"))
        d = os.path.join(s.dir, "p2")
        os.chown(_probe_copy(d), 65534, 65534)
        cases.append((d, "owned by uid 65534"))
        d = os.path.join(s.dir, "p3", "open")
        _probe_copy(d)
        os.chmod(d, 0o777)
        cases.append((d, "writable by others"))
        d = os.path.join(s.dir, "p4")
        os.makedirs(d)
        target = _probe_copy(os.path.join(s.dir, "p4real"), "real")
        os.chmod(target, 0o757)
        os.symlink(target, os.path.join(d, "system_infos"))
        cases.append((d, "p4real/real\" is writable by others"))
        for d, why in cases:
            t = Supervisor(probes=[probe_entry("system_infos", "-t 1")], probes_dir=d)
            try:
                r = subprocess.run([GOPHER, "--check", "-c", t.conf], capture_output=True, text=True, timeout=10)
                check(r.returncode != 0, "%s accepted: %s" % (d, r.stdout))
                check("refusing to run it as root" in r.stderr and why in r.stderr,
                      "reason %r named: %r" % (why, r.stderr))
            finally:
                t.cleanup()
    finally:
        s.cleanup()

    # at spawn: accepted, then the file is opened up and the probe dies
    d = tempfile.mkdtemp(prefix="gg-chaos-")
    try:
        path = _probe_copy(d)
        s = Supervisor(probes=[probe_entry("system_infos", "-t 1")], probes_dir=d).start()
        try:
            pid = s.wait_probe("system_infos", running, 5, "running")["pid"]
            os.chmod(path, 0o777)
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: "refusing to run it as root" in s.sup_log(), 5, "refused at spawn")
            time.sleep(1.5)
            p = s.probe("system_infos")
            check(not (p["state"] == "running" and p["pid"] > 0 and p["pid"] != pid), "restarted anyway: %r" % p)
        finally:
            s.cleanup()
    finally:
        shutil.rmtree(d, ignore_errors=True)

    # REST PUT: the registered binary is replaced by a writable one
    from test_rest import RestEnv, expect
    env = RestEnv().start()
    try:
        link = os.path.join(env.probes_dir, "system_infos")
        os.unlink(link)
        os.chmod(_probe_copy(env.probes_dir), 0o777)
        expect(env.put("baseinfo", {"state": "running"}), 400, "writable by others")
    finally:
        env.cleanup()


def test_truncated_integers_refused():
    """web_server.port = 4294985184 used to pass --check and bind 17888 (libconfig truncates to 32 bits)."""
    for extra, want in (('web_server = { port = 4294985184; };', "4294985184 does not fit"),
                        ('web_server = { port = 65536; };', "out of range"),
                        ('kafka = { batch_num_messages = -4294967297; };', "-4294967297 does not fit")):
        s = Supervisor(extra=extra)
        try:
            r = subprocess.run([GOPHER, "--check", "-c", s.conf], capture_output=True, text=True, timeout=10)
            check(r.returncode != 0 and want in r.stderr, "%s: %r %r" % (extra, r.stdout, r.stderr))
        finally:
            s.cleanup()
    s = Supervisor(extra='# 99999999999 in a comment\nweb_server = { port = 17888; bind_addr = "99999999999"; };')
    try:
        r = subprocess.run([GOPHER, "--check", "-c", s.conf], capture_output=True, text=True, timeout=10)
        check(r.returncode == 0, "comments and strings are not numbers: %r" % r.stderr)
    finally:
        s.cleanup()


def test_invalid_utf8_snooper_refused():
    """A snooper with invalid UTF-8 used to be stored and returned, so strict JSON clients rejected GET."""
    import urllib.parse
    from test_rest import RestEnv, expect
    env = RestEnv().start()
    try:
        q = urllib.parse.quote
        body = "json=" + q('{"snoopers": {"proc_name": [{"comm": "a') + "%FF%FE" + q('"}]}}')
        expect(env.call("PUT", "/baseinfo", body), 400, "not valid UTF-8")
        body = "json=" + q('{"snoopers": {"proc_name": [{"comm": "caf\u00e9"}]}}')
        expect(env.call("PUT", "/baseinfo", body), 200)
        st, doc, raw, _ = env.call("GET", "/baseinfo")
        check(st == 200 and doc is not None, "GET is strict JSON: %r" % raw[:200])
    finally:
        env.cleanup()


def test_loose_json_numbers_refused_and_null_means_default():
    """Item 10: leading zeros, '+' and bare '.' were read as numbers (cJSON); null had no documented meaning.
    Now such numbers are 400 naming the spot, and null in params means the parameter's default."""
    import urllib.parse
    from test_rest import RestEnv, expect
    env = RestEnv().start()
    try:
        q = urllib.parse.quote
        for bad in ("010", "+10", "10.", ".5", "-07", "1e", "1.2.3"):
            st, doc, raw, _ = env.call("PUT", "/baseinfo", "json=" + q('{"params": {"report_period": %s}}' % bad))
            check(st == 400 and "numbers are written as JSON has them" in raw, "%s: %d %s" % (bad, st, raw[:200]))
        for good in ("10", "1e1", "10.0", "0"):
            st, doc, raw, _ = env.call("PUT", "/baseinfo", "json=" + q('{"params": {"report_period": %s}}' % good))
            check(st != 400 or "numbers are written" not in raw, "%s refused: %s" % (good, raw[:200]))
        # a number inside a string is text, not a number
        expect(env.call("PUT", "/baseinfo", "json=" + q('{"snoopers": {"proc_name": [{"comm": "^a010$"}]}}')), 200)
        expect(env.call("PUT", "/baseinfo", "json=" + q('{"params": {"report_period": 30}}')), 200)
        expect(env.call("PUT", "/baseinfo", "json=" + q('{"params": {"report_period": null}}')), 200)
        st, doc, raw, _ = env.call("GET", "/baseinfo")
        check(st == 200 and "report_period" not in (doc.get("params") or {}),
              "null: back to the default (not stored): %r" % doc.get("params"))
    finally:
        env.cleanup()


def test_sighup_says_what_it_does():
    s = Supervisor().start()
    try:
        s.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "SIGHUP ignored" in s.sup_log(), 5, "SIGHUP logged")
        check("nothing yet" not in s.sup_log(), "unfinished-looking message")
        time.sleep(0.3)
        check(s.proc.poll() is None, "supervisor survives SIGHUP")
    finally:
        s.cleanup()


def test_hung_probe_watchdog():
    """Item 7: a probe stopped with SIGSTOP sends no batch and no heartbeat. After global.hung_timeout it is
    `hung` (status and REST), probe_up is 0, the hang is counted and an event_v2 names it; one that
    resumes within global.hung_grace recovers with the same pid; one that does not is killed and
    restarted."""
    port = free_port()
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")], metric_out="web_server",
                   extra="web_server = { port = %d; };\nevent = { out_channel = \"logs\"; timeout = 1; };" % port)
    with open(s.conf) as f:
        conf = f.read()
    with open(s.conf, "w") as f:
        f.write(conf.replace("stop_grace_ms = 1000;", "stop_grace_ms = 1000; hung_timeout = 2; hung_grace = 4;", 1))
    events = os.path.join(s.log_dir, "event", "events.log")

    def metric(name):
        _, text = http_get("http://127.0.0.1:%d/metrics" % port)
        return prom_value(parse_prom(text)[0], name, probe="system_infos")

    try:
        s.start()
        p = s.wait_probe("system_infos", lambda p: running(p) and p["batches"] > 0, 15, "running with batches")
        pid = p["pid"]
        time.sleep(3)  # longer than hung_timeout: a healthy probe's heartbeats keep it running
        check(s.probe("system_infos")["state"] == "running", "a healthy probe is not hung")
        check(metric("gala_gopher_probe_up") == 1 and metric("gala_gopher_probe_hangs_total") == 0, "up, no hang")

        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        s.wait_probe("system_infos", lambda p: p["state"] == "hung", 6, "state hung")
        check(time.monotonic() - t0 >= 1.5, "hung only after hung_timeout")
        check(metric("gala_gopher_probe_up") == 0 and metric("gala_gopher_probe_hangs_total") == 1,
              "probe_up 0 and one hang counted while hung")
        ev = wait_for(lambda: [e for e in json_lines(events) if e["Resource"]["metric"].endswith("probe_hung")],
                      5, "a probe_hung event")
        check(ev[0]["Resource"]["labels"].get("probe") == "system_infos" and ev[0]["SeverityText"] == "ERROR",
              "event names the probe: %r" % ev[0])
        # resumed within the grace: recovered, the same process
        os.kill(pid, signal.SIGCONT)
        p = s.wait_probe("system_infos", lambda p: p["state"] == "running", 5, "recovered")
        check(p["pid"] == pid and p["restarts"] == 0, "recovery keeps the process: %r" % p)
        check("recovered after" in s.sup_log(), "recovery logged")

        # stopped again and left stopped: killed after the grace, restarted
        os.kill(pid, signal.SIGSTOP)
        s.wait_probe("system_infos", lambda p: p["state"] == "hung", 6, "hung again")
        p = s.wait_probe("system_infos", lambda p: running(p) and p["pid"] != pid and p["batches"] > 0, 15,
                         "killed after hung_grace and restarted")
        check(p["restarts"] == 1 and p["last_exit_signal"] == signal.SIGKILL, "a restart after SIGKILL: %r" % p)
        check(not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z",
              "the hung process is gone")
        check(metric("gala_gopher_probe_hangs_total") == 2 and metric("gala_gopher_probe_up") == 1,
              "two hangs counted, up again")
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, UnboundLocalError):
            pass
        s.cleanup()


test_hung_probe_watchdog.timeout = 60


def test_supervisor_stall_is_not_a_probe_hang():
    """A stopped supervisor leaves batches unread; once it resumes, that silence is its own, not the
    probes': no probe is declared hung."""
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")])
    with open(s.conf) as f:
        conf = f.read()
    with open(s.conf, "w") as f:
        f.write(conf.replace("stop_grace_ms = 1000;", "stop_grace_ms = 1000; hung_timeout = 2; hung_grace = 2;", 1))
    try:
        s.start()
        s.wait_probe("system_infos", lambda p: running(p) and p["batches"] > 0, 15, "running with batches")
        s.proc.send_signal(signal.SIGSTOP)
        time.sleep(7)
        s.proc.send_signal(signal.SIGCONT)
        time.sleep(3)
        p = s.probe("system_infos")
        check(p["state"] == "running" and p["restarts"] == 0, "no hang after the supervisor's own stall: %r" % p)
        check("hung" not in s.sup_log(), "no hang logged")
    finally:
        s.proc.send_signal(signal.SIGCONT)
        s.cleanup()


def test_deleted_run_dir_is_recreated():
    """Item 6: `rm -rf run_dir` under a running agent. Before: nothing logged, status.json gone, a
    restarted probe delivered nothing while probe_up stayed 1. Now the supervisor notices within a tick,
    logs it, makes run_dir again (private), listens again, counts it, and probes deliver again, a
    probe restarted after the deletion included. A run_dir replaced by a symlink is refused, counted and
    retried."""
    port = free_port()
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")], metric_out="web_server",
                   extra="web_server = { port = %d; };" % port)

    def batches():
        return s.probe("system_infos")["batches"]

    def repairs(result):
        _, text = http_get("http://127.0.0.1:%d/metrics" % port)
        return prom_value(parse_prom(text)[0], "gala_gopher_sup_run_dir_repairs_total", result=result)

    try:
        s.start()
        s.wait_probe("system_infos", lambda p: running(p) and p["batches"] > 0, 15, "running with batches")
        shutil.rmtree(s.run_dir)
        wait_for(lambda: os.path.exists(s.status_path()), 5, "status.json back")
        check(stat.S_IMODE(os.lstat(s.run_dir).st_mode) & 0o022 == 0, "run_dir made again private")
        check(mode(os.path.join(s.run_dir, "data.ipc")) == 0o600 and mode(os.path.join(s.run_dir, "ctrl.ipc")) == 0o600,
              "sockets 0600")
        check("was deleted or replaced" in s.sup_log(), "the loss is logged")
        b0 = batches()
        wait_for(lambda: batches() >= b0 + 3, 10, "the running probe delivers again")
        check(repairs("repaired") == 1 and repairs("failed") == 0, "one repair counted")
        check(s.status()["supervisor"]["run_dir_repairs"] == 1, "status.json counts it")

        # a probe started after the deletion (its first connection is to the new socket)
        pid = s.probe("system_infos")["pid"]
        os.kill(pid, signal.SIGKILL)
        p = s.wait_probe("system_infos", lambda p: running(p) and p["pid"] != pid, 10, "restarted")
        b1 = p["batches"]
        wait_for(lambda: batches() >= b1 + 3, 10, "the restarted probe delivers")
        with open(os.path.join(s.run_dir, "children")) as f:
            check(str(p["pid"]) in f.read(), "children rewritten in the new run_dir")

        # replaced by a symlink to a directory that is not ours to trust: refused, counted, retried
        elsewhere = tempfile.mkdtemp(prefix="gg-chaos-elsewhere-")
        shutil.rmtree(s.run_dir)
        os.symlink(elsewhere, s.run_dir)
        wait_for(lambda: (repairs("failed") or 0) >= 2, 6, "failed repairs counted every tick")
        check(not os.listdir(elsewhere), "nothing written through the symlink: %r" % os.listdir(elsewhere))
        check(s.sup_log().count("probes cannot deliver until it is fixed") == 1, "logged once per episode")
        os.unlink(s.run_dir)
        wait_for(lambda: repairs("repaired") == 2, 5, "repaired once the symlink is gone")
        b2 = batches()
        wait_for(lambda: batches() >= b2 + 2, 10, "delivering again")
        shutil.rmtree(elsewhere, ignore_errors=True)
    finally:
        s.cleanup()


test_deleted_run_dir_is_recreated.timeout = 60


FLOOD_META = """version = "1.0.0";
measurements: (
  { table_name: "chaos_flood", entity_name: "chaos", fields: (
      { description: "series", type: "key", name: "k" },
      { description: "value", type: "gauge", name: "v" } ) }
);
"""

FLOOD = r"""
import sys, time
n = int(sys.argv[1])
for i in range(n):
    sys.stdout.write("|chaos_flood|k%d|%d|\n" % (i, i))
    if i % 500 == 499:
        sys.stdout.flush()
        time.sleep(0.05)
sys.stdout.flush()
go = sys.argv[2]
while True:  # a second burst of 100 once the test has made room
    try:
        open(go).close()
        break
    except OSError:
        time.sleep(0.1)
for i in range(100):
    sys.stdout.write("|chaos_flood|again%d|%d|\n" % (i, i))
sys.stdout.flush()
time.sleep(3600)
"""


def test_full_disk_log_accounting():
    """Item 8: metric logs on a 1 MiB tmpfs. Before: status said 3 million lines where the file held
    5,693, every write was an error, nothing said so, the last line was cut mid-JSON. Now: the files hold
    only whole JSON lines, log_lines is what the files hold, the rest is counted lost, the condition is
    logged once (and on stderr), and its end too."""
    import json
    tmp = tempfile.mkdtemp(prefix="gg-chaos-flood-")
    meta = os.path.join(tmp, "chaos_flood.meta")
    script = os.path.join(tmp, "flood.py")
    with open(meta, "w") as f:
        f.write(FLOOD_META)
    with open(script, "w") as f:
        f.write(FLOOD)
    total = 20000
    s = Supervisor(extend=[extend_entry("flood", "/usr/bin/python3", "%s %d %s" % (script, total, os.path.join(tmp, "go")))],
                   extra_meta=[meta])
    mdir = os.path.join(s.log_dir, "metrics")
    os.makedirs(mdir)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0750", "tmpfs", mdir], check=True)
    try:
        s.start()

        def logs():
            return s.status()["export"]["metric"]

        wait_for(lambda: logs()["log_lines"] + logs()["log_lost_lines"] >= total, 60, "every flood line accounted")
        st = logs()
        lines = []
        for name in sorted(os.listdir(mdir)):
            with open(os.path.join(mdir, name), encoding="utf-8") as f:
                text = f.read()
            check(not text or text.endswith("\n"), "%s ends with a whole line" % name)
            lines += [json.loads(l) for l in text.splitlines()]  # a cut line would not parse
        flood = [l for l in lines if "chaos_flood" in json.dumps(l)]
        check(st["log_lines"] == len(lines), "log_lines %d, the files hold %d" % (st["log_lines"], len(lines)))
        check(st["log_lost_lines"] > 0 and st["log_lines"] + st["log_lost_lines"] == total,
              "written %d + lost %d = %d flood lines" % (st["log_lines"], st["log_lost_lines"], total))
        check(len(flood) == len(lines), "only flood lines in the files")
        check(s.sup_log().count("lines are dropped (and counted)") == 1, "the full disk logged once")
        check("lines are dropped (and counted)" in s.stderr_text(), "and on stderr")
        # room again: the episode ends, and says how many lines it lost
        os.truncate(os.path.join(mdir, "metrics.log"), 0)
        with open(os.path.join(tmp, "go"), "w"):
            pass
        wait_for(lambda: logs()["log_lines"] == st["log_lines"] + 100, 10, "the second burst written")
        check(logs()["log_lost_lines"] == st["log_lost_lines"], "nothing more lost")
        check("is written again; %d lines were lost meanwhile" % st["log_lost_lines"] in s.sup_log(),
              "the end of the episode logged with its loss")
        with open(os.path.join(mdir, "metrics.log"), encoding="utf-8") as f:
            check(len([json.loads(l) for l in f]) == 100, "the second burst in the file")
    finally:
        s.cleanup()
        subprocess.run(["umount", "-l", mdir], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


test_full_disk_log_accounting.timeout = 90


def test_output_dir_symlink_swap_confined():
    """Item 1: flame_dir/svg_dir accepted by REST below output_base_dir while they did not exist, then
    made symbolic links to a folder outside. Before: stackprobe (root) wrote its folded, SVG, pprof and
    store files there. Now every write goes through directory fds opened component by component below the
    base with O_NOFOLLOW: nothing lands outside, the failures are counted (stackprobe_health.files_failed)
    and logged; once the links are gone the probe writes below the base again. A path that reaches the
    base only through a symbolic link is refused at PUT."""
    tmp = tempfile.mkdtemp(prefix="gg-chaos-swap-")
    base = os.path.join(tmp, "out")
    outside = os.path.join(tmp, "outside")
    os.makedirs(base)
    os.makedirs(outside)
    rest_port_ = free_port()
    s = Supervisor(probes=[probe_entry("stackprobe", "-t 1 --svg-period 2 --store-period 2", switch="off")],
                   extra=rest_section(os.path.join(tmp, "state"), rest_port_, 'output_base_dir = "%s";' % base))
    try:
        s.start()
        os.symlink(base, os.path.join(tmp, "via"))
        st, body = rest_put(rest_port_, "flamegraph", {"params": {"flame_dir": os.path.join(tmp, "via", "f")}})
        check(st == 403 and "spelled below" in body, "a path through a symlink to the base: %d %s" % (st, body))

        flame, svg = os.path.join(base, "f"), os.path.join(base, "s")
        st, body = rest_put(rest_port_, "flamegraph", {"cmd": {"probe": ["oncpu"]},
                                                        "params": {"flame_dir": flame, "svg_dir": svg},
                                                        "state": "running"})
        check(st == 200, "PUT accepted below the base: %d %s" % (st, body))
        # the attack: the accepted directories become links to somewhere else
        os.symlink(outside, flame)
        os.symlink(outside, svg)
        s.wait_probe("stackprobe", lambda p: running(p) and p.get("config_version_applied", 0) >= 1, 15,
                     "stackprobe running with the REST configuration")

        def failed():
            recs = s.metric_records("stackprobe_health")
            return recs and int(recs[-1]["files_failed"]) >= 2 and recs[-1]
        wait_for(failed, 20, "failed writes counted in stackprobe_health.files_failed")
        check(os.listdir(outside) == [], "nothing written outside the base: %r" % os.listdir(outside))
        check("cannot open" in s.probe_log("stackprobe") or "profile store" in s.probe_log("stackprobe"),
              "the refusal is logged")
        # the links removed: the probe makes real directories below the base and writes there
        os.unlink(flame)
        os.unlink(svg)
        wait_for(lambda: os.path.isdir(os.path.join(flame, "oncpu")) and
                 [n for n in os.listdir(os.path.join(flame, "oncpu")) if n.endswith(".folded")], 20,
                 "folded files below the base")
        check(not os.path.islink(flame) and os.listdir(outside) == [], "still nothing outside")
    finally:
        s.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


test_output_dir_symlink_swap_confined.timeout = 90


def test_flood_keeps_memory_bounded_and_rest_responsive():
    """Item 11: flood probes sending a new key in every record as fast as they can. Before: the supervisor's
    RSS rose by 300-500 MB (NNG's queue of 8,192 batches) and REST GETs took seconds. Now the queue is
    global.ipc_queue batches, the excess counted as IPC loss, and the loop serves REST between 4 ms
    slices of draining."""
    import statistics
    import urllib.request
    sanitized = "san" in os.path.basename(os.path.normpath(BUILD))  # ASan's quarantine holds freed memory
    port = free_port()
    s = flood_supervisor(2, 2000000000, 100000000, metric_out="web_server", extra="web_server = { port = %d; };" % port)

    def rss_mb():
        return proc_status_kb(s.proc.pid) / 1024

    try:
        s.start()
        wait_for(lambda: sum(p["records"] for p in s.status()["probes"]) > 100000, 20, "the flood under way")
        base = rss_mb()
        rport = rest_port(s)
        lat, peak, t_end = [], base, time.monotonic() + 12
        while time.monotonic() < t_end:
            t = time.monotonic()
            with urllib.request.urlopen("http://127.0.0.1:%d/tcp" % rport, timeout=60) as r:
                r.read()
            lat.append(time.monotonic() - t)
            peak = max(peak, rss_mb())
            time.sleep(0.1)
        st = s.status()
        lost = sum(p["ipc_lost_records"] for p in st["probes"])
        print("flood: RSS %.0f -> peak %.0f MB, %d REST GETs, median %.3f s, max %.3f s, %d records lost (counted)"
              % (base, peak, len(lat), statistics.median(lat), max(lat), lost))
        check(statistics.median(lat) < 1.0, "REST GET median %.3f s under the flood" % statistics.median(lat))
        if not sanitized:
            check(peak - base < 150, "RSS grew %.0f MB under the flood (queue bound 64 MiB)" % (peak - base))
    finally:
        s.cleanup()


test_flood_keeps_memory_bounded_and_rest_responsive.timeout = 90


def _cgroup_of(pid, ctl):
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctls, path = line.rstrip("\n").split(":", 2)
            if ctl in ctls.split(","):
                return path
    return None


def test_probe_hard_limits():
    """Hard limits per probe: each probe in a cgroup of its own. A probe that leaks is killed by its own
    memory limit (not the host's OOM killer) and restarted, counted; a spinning one gets its CPU quota; one
    that forks is stopped at pids_max; a neighbour probe and the supervisor do not notice."""
    bad = os.path.join(BUILD, "tests", "bad_probe")
    meta = os.path.join(ROOT, "tests", "schema", "test_bad.meta")
    probes = [
        '    { name = "leaky"; command = "%s"; param = "-m leak"; switch = "on"; memory_mb = 48; }' % bad,
        '    { name = "spinner"; command = "%s"; param = "-m spin"; switch = "on"; cpu_percent = 20; }' % bad,
        '    { name = "forker"; command = "%s"; param = "-m fork -n 40"; switch = "on"; pids_max = 16; }' % bad,
        probe_entry("system_infos", "-t 1"),
    ]
    port = free_port()
    s = Supervisor(probes=probes, metric_out="web_server", extra="web_server = { port = %d; };" % port,
                   extra_meta=[meta])
    cg_dirs = []
    try:
        s.start()
        sysinfo = s.wait_probe("system_infos", lambda p: running(p) and p["batches"] > 0, 15, "system_infos running")
        # each probe in its own cgroup per controller
        spin = s.wait_probe("spinner", running, 10, "spinner running")
        for ctl in ("memory", "cpu", "pids"):
            path = _cgroup_of(spin["pid"], ctl)
            check(path and path.endswith("/gala-gopher-%d/spinner" % s.proc.pid), "%s cgroup %r" % (ctl, path))
            cg_dirs.append(os.path.join("/sys/fs/cgroup", ctl, path.lstrip("/")))
        check(_cgroup_of(s.proc.pid, "memory") != _cgroup_of(spin["pid"], "memory"), "not the supervisor's")

        # memory: 4 MiB every 10 ms against 48 MB -> killed by its limit within a second or two, restarted
        p = s.wait_probe("leaky", lambda p: p["oom_kills"] >= 1 and p["restarts"] >= 1, 30, "leaky killed and restarted")
        check(p["limits"] == {"applied": True, "memory_mb": 48, "cpu_percent": 100, "pids": 256}, "limits %r" % p)
        check("leaky was killed by its memory limit (48 MB" in s.sup_log(), "the OOM kill is named")
        _, text = http_get("http://127.0.0.1:%d/metrics" % port)
        check((prom_value(parse_prom(text)[0], "gala_gopher_probe_oom_kills_total", probe="leaky") or 0) >= 1,
              "gala_gopher_probe_oom_kills_total")

        # cpu: 20 % of a CPU over 3 s, as cpu.stat and the process's own clock say
        spin = s.probe("spinner")
        t0 = time.monotonic()
        c0 = proc_cpu_seconds(spin["pid"])
        time.sleep(3)
        share = (proc_cpu_seconds(spin["pid"]) - c0) / (time.monotonic() - t0)
        check(0.10 <= share <= 0.26, "spinner used %.2f of a CPU under a 20 %% quota" % share)

        # pids: 15 children fit beside the probe's own threads at most; fork fails beyond
        wait_for(lambda: "fork: started" in s.probe_log("forker"), 10, "the forker's count")
        started = int(s.probe_log("forker").split("fork: started ")[1].split()[0])
        check(started < 16, "forks stopped by pids_max 16: %d started" % started)

        # the neighbours did not notice
        p = s.probe("system_infos")
        check(p["pid"] == sysinfo["pid"] and p["restarts"] == 0 and p["oom_kills"] == 0, "system_infos: %r" % p)
        check(s.proc.poll() is None, "supervisor alive")
    finally:
        s.cleanup()
    # a supervisor that stopped leaves no cgroups behind
    for d in cg_dirs:
        check(not os.path.exists(os.path.dirname(d)), "cgroup %s removed at exit" % os.path.dirname(d))


test_probe_hard_limits.timeout = 90


def test_slow_clients_do_not_block_rest_or_metrics():
    """Item 5: 193 sockets sending 1 byte/s made REST and /metrics time out; 70 idle sockets blocked REST
    for ~30 s. Now a connection reaches the HTTP server only with a whole request head, which must
    arrive within 5 s whatever trickles in; at most 256 wait, the longest-waiting is dropped for a
    newcomer; under pressure responses close their connection. Both servers answer within a second
    throughout, and the dropped ones are counted."""
    import socket
    import threading
    port = free_port()
    s = Supervisor(metric_out="web_server", extra="web_server = { port = %d; };" % port)
    socks, stop = [], threading.Event()
    try:
        s.start()
        rport = rest_port(s)

        def slowloris(target, n, trickle):
            for _ in range(n):
                try:
                    c = socket.create_connection(("127.0.0.1", target), timeout=2)
                    if trickle:
                        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                    socks.append((c, trickle))
                except OSError:
                    pass

        def trickler():
            while not stop.is_set():
                for c, trickle in list(socks):
                    if trickle:
                        try:
                            c.send(b"X")
                        except OSError:
                            pass
                stop.wait(1.0)
        for target in (port, rport):
            slowloris(target, 200, True)
            slowloris(target, 70, False)
        th = threading.Thread(target=trickler, daemon=True)
        th.start()
        worst = 0.0
        t_end = time.monotonic() + 12  # beyond the 5 s head deadline and the old 30 s window's start
        while time.monotonic() < t_end:
            for url in ("http://127.0.0.1:%d/metrics" % port, "http://127.0.0.1:%d/tcp" % rport):
                t = time.monotonic()
                st, _ = http_get(url, timeout=10)
                worst = max(worst, time.monotonic() - t)
                check(st == 200, "%s answered %d under the attack" % (url, st))
            time.sleep(0.2)
        check(worst < 1.0, "slowest answer under the attack: %.2f s" % worst)
        _, text = http_get("http://127.0.0.1:%d/metrics" % port)
        samples = parse_prom(text)[0]
        dropped = sum(prom_value(samples, "gala_gopher_web_server_refused_total", reason=r) or 0
                      for r in ("head_timeout", "evicted"))
        check(dropped >= 200, "slow connections dropped and counted on /metrics' server: %d" % dropped)
        rs = s.status()["rest_api_server"]
        check(rs.get("refused_head_timeout", 0) + rs.get("refused_evicted", 0) >= 200,
              "and on the REST server: %r" % rs)
    finally:
        stop.set()
        for c, _ in socks:
            c.close()
        s.cleanup()


test_slow_clients_do_not_block_rest_or_metrics.timeout = 60
