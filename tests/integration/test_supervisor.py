"""test_supervisor.py - the supervisor's probe lifecycle, validation path and configuration errors,
with the real supervisor and real child processes."""
import os
import re
import shutil
import signal
import subprocess
import time

from harness import (GOPHER, ROOT, TEST_BINS, Supervisor, TestFailure, check, extend_entry, group_members, pid_alive,
                     probe_entry, rest_port, wait_for)

BAD_META = os.path.join(ROOT, "tests", "schema", "test_bad.meta")
EXT_META = os.path.join(ROOT, "tests", "schema", "test_ext.meta")
EXT_SCRIPT = os.path.join(ROOT, "tests", "integration", "scripts", "ext_probe.sh")


def running(p):
    return p["state"] == "running" and p["pid"] > 0


def test_kill9_restarts_within_1s():
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")]).start()
    try:
        p = s.wait_probe("system_infos", running, 5, "running")
        old = p["pid"]
        s.wait_probe("system_infos", lambda p: p["batches"] > 0, 5, "first batch")
        os.kill(old, signal.SIGKILL)
        t0 = time.monotonic()
        p = s.wait_probe("system_infos", lambda p: running(p) and p["pid"] != old, 3, "restart")
        # status.json is rewritten every second, so the process itself is checked for the 1 s bound
        elapsed = time.monotonic() - t0
        check(p["restarts"] == 1, "restart counted once, got %d" % p["restarts"])
        check(p["last_exit_signal"] == signal.SIGKILL, "last exit signal %r" % p["last_exit_signal"])
        log = s.sup_log()
        m = re.search(r"probe system_infos exited unexpectedly .* restarting in (\d+) ms", log)
        check(m and int(m.group(1)) <= 1000, "restart delay <= 1000 ms: %r" % (m and m.group(0)))
        check(elapsed < 2.5, "restart visible in status after %.2fs" % elapsed)
        check(not pid_alive(old), "old pid gone")
    finally:
        s.cleanup()


def test_exiting_probe_backs_off():
    bad = os.path.join(TEST_BINS, "bad_probe")
    s = Supervisor(extend=[extend_entry("quitter", bad, "-m exit")]).start()
    try:
        s.wait_probe("quitter", lambda p: p["restarts"] >= 3, 10, "3 restarts")
        delays = [int(x) for x in re.findall(r"probe quitter exited unexpectedly .* restarting in (\d+) ms",
                                             s.sup_log())]
        check(len(delays) >= 3, "restart delays logged: %r" % delays)
        check(delays[:4] == [500, 1000, 2000, 4000][:len(delays[:4])], "delays double: %r" % delays)
        p = s.probe("quitter")
        check(p["last_exit_status"] == 3, "exit status recorded: %r" % p["last_exit_status"])
    finally:
        s.cleanup()


test_exiting_probe_backs_off.timeout = 60


def test_malformed_records_rejected_and_counted():
    bad = os.path.join(TEST_BINS, "bad_probe")
    s = Supervisor(probes=[probe_entry("bad_probe", "-m malformed")], extra_meta=[BAD_META],
                   probes_dir=TEST_BINS).start()
    try:
        reasons = ["field_count", "unknown_table", "not_numeric", "negative_counter", "empty_key", "malformed"]
        p = s.wait_probe("bad_probe", lambda p: all(p["rejected"].get(r, 0) >= 2 for r in reasons), 10,
                         "every rejection reason twice")
        check(p["accepted"] >= 2, "valid records accepted: %d" % p["accepted"])
        # exactly one of each per round: the counts stay in step with the valid ones
        for r in reasons:
            check(abs(p["rejected"][r] - p["accepted"]) <= 2, "%s=%d vs accepted=%d" % (r, p["rejected"][r],
                                                                                    p["accepted"]))
        check(p["records"] == p["accepted"] + p["rejected_total"], "every record accounted for")
        by_table = {(e["table"], e["reason"]) for e in p["rejected_by_table"]}
        check(("test_bad", "field_count") in by_table, "per-table count: %r" % by_table)
        check(("no_such_table", "unknown_table") in by_table, "per-table count: %r" % by_table)
        samples = s.probe_log("bad_probe").count("rejected record")
        check(1 <= samples <= 6, "rejections sampled to the probe log, rate-limited (%d samples)" % samples)
        check(s.proc.poll() is None, "supervisor still running")
        check(running(s.probe("bad_probe")), "probe unaffected")
        recs = s.metric_records("test_bad")
        check(len(recs) >= 2 and all(r["g"] == 1.5 and r["c"] == 7 for r in recs), "valid records exported")
    finally:
        s.cleanup()


def test_extend_probe_lines_validated():
    s = Supervisor(extend=[extend_entry("ext", EXT_SCRIPT, "3")], extra_meta=[EXT_META]).start()
    try:
        p = s.wait_probe("ext", lambda p: p["accepted"] >= 9, 10, "9 accepted records")
        check(p["rejected"]["malformed"] >= 3, "non-record stdout lines rejected: %r" % p["rejected"])
        check(p["records"] == p["accepted"] + p["rejected_total"], "every line accounted for")
        time.sleep(1.2)  # metric output is flushed every second
        recs = s.metric_records("test_ext")
        check(len(recs) >= 9, "records exported: %d" % len(recs))
        r = recs[-1]
        check(isinstance(r["g"], int) and r["c"] == 2 * r["g"], "numbers are numbers: %r" % r)
        check(r["k"].startswith("key") and r["l"] == "lbl" and r["entity_name"] == "test_ext", repr(r))
        check("diagnostic on stderr" in s.probe_log("ext"), "stderr goes to the probe log")
    finally:
        s.cleanup()


def test_check_cmd():
    bad = os.path.join(TEST_BINS, "bad_probe")
    s = Supervisor(extend=[
        extend_entry("never", bad, "-m idle", check_cmd="echo 0"),
        extend_entry("always", bad, "-m idle", check_cmd="printf '%s\\n' 2"),
        extend_entry("failing", bad, "-m idle", check_cmd="echo 5; exit 1"),
    ]).start()
    try:
        s.wait_probe("always", running, 5, "started when check prints 2")
        p = s.wait_probe("never", lambda p: p["checks"] >= 2, 5, "re-checked")
        check(p["state"] == "check_wait" and p["starts"] == 0 and p["pid"] == 0, "not started: %r" % p)
        check(p["check_value"] == 0, "check value recorded")
        p = s.wait_probe("failing", lambda p: p["checks"] >= 1, 5, "checked")
        check(p["starts"] == 0, "a failing check_cmd does not start the probe")
    finally:
        s.cleanup()


def start_with_ext():
    """A supervisor running system_infos and the extend probe ext (a script with a child): it, then the two
    probes' pids."""
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")],
                   extend=[extend_entry("ext", EXT_SCRIPT, "1")], extra_meta=[EXT_META]).start()
    try:
        p1 = s.wait_probe("system_infos", running, 5, "running")["pid"]
        p2 = s.wait_probe("ext", running, 5, "running")["pid"]
    except Exception:
        s.cleanup()
        raise
    return s, p1, p2


def test_sigterm_stops_everything():
    s, p1, p2 = start_with_ext()
    try:
        rc = s.stop(signal.SIGTERM, timeout=10)
        check(rc == 0, "exit code 0 on SIGTERM, got %r" % rc)
        check(not pid_alive(p1) and not pid_alive(p2), "probes gone")
        wait_for(lambda: not group_members(p2), 2, "extend probe's children gone")
    finally:
        s.cleanup()


def test_sigkill_leaves_no_orphans():
    s, p1, p2 = start_with_ext()
    try:
        wait_for(lambda: len(group_members(p2)) >= 2, 5, "ext probe's child")
        s.proc.kill()
        s.proc.wait()
        wait_for(lambda: not pid_alive(p1) and not pid_alive(p2), 2, "probes die with the supervisor")
        # The extend script's own child is not ours to signal directly; the next start reaps the group.
        s2 = s.start()
        wait_for(lambda: not group_members(p2), 5, "leftover process group reaped at the next start")
        s2.stop()
    finally:
        s.cleanup()


def test_config_errors_name_the_key():
    cases = [
        ("web_server = { port = 70000; };", "web_server.port"),
        ('metric = { out_channel = "stdout"; };', "metric.out_channel"),
        ('log_level = "loud";', "global.log_level"),
        ('probes = ( { name = "x"; switch = "maybe"; } );', "probes.x.switch"),
        ('extend_probes = ( { name = "e"; switch = "on"; } );', "extend_probes.e.command"),
        ('probes = ( { name = "nope"; switch = "on"; } );', "not an executable"),
        ("imdb = { max_records_num = -1; };", "imdb.max_records_num"),
        ("web_server = { port = ; };", "syntax error"),
        ('kafka = { kafka_broker = ( "a:1", "" ); };', "kafka.kafka_broker"),
    ]
    s = Supervisor()
    try:
        for text, want in cases:
            with open(s.conf, "w") as f:
                g = text if text.startswith("log_level") else ""
                rest = "" if g else text
                f.write('global = { meta_path = "%s"; run_dir = "%s"; %s };\n%s\n' % (s.meta_dir, s.run_dir, g, rest))
            r = subprocess.run([GOPHER, "-c", s.conf], capture_output=True, text=True, timeout=10)
            check(r.returncode != 0, "%r must be refused" % text)
            check(want in r.stderr, "%r: message names %r: %r" % (text, want, r.stderr))
            check(re.search(r"gala-gopher.conf:\d+", r.stderr), "message has the line: %r" % r.stderr)
        with open(s.conf, "w") as f:
            f.write('global = { meta_path = "%s"; run_dir = "%s"; frobnicate = 1; };\nmystery = { a = 1; };\n'
                    % (s.meta_dir, s.run_dir))
        r = subprocess.run([GOPHER, "-c", s.conf, "--check"], capture_output=True, text=True, timeout=10)
        check(r.returncode == 0, "unknown keys are not fatal: %r" % r.stderr)
        check("global.frobnicate" in r.stderr and "mystery" in r.stderr, "unknown keys warned: %r" % r.stderr)
    finally:
        s.cleanup()


def test_bad_meta_stops_startup():
    s = Supervisor()
    try:
        with open(os.path.join(s.meta_dir, "zz_broken.meta"), "w") as f:
            f.write('version = "1.0.0"\nmeasurements:\n(\n  { table_name: "t", entity_name: "t",\n'
                    '    fields: ( { description: "d", type: "gauge2", name: "x" } ) }\n)\n')
        r = subprocess.run([GOPHER, "-c", s.conf], capture_output=True, text=True, timeout=10)
        check(r.returncode != 0, "refused")
        check("zz_broken.meta:" in r.stderr and "gauge2" in r.stderr, "names file, line and problem: %r" % r.stderr)
    finally:
        s.cleanup()


def test_family_collision_stops_startup():
    """One name, one meaning: two tables of one entity exporting one field name with other labels, or a
    counter named like a histogram's _sum series, are refused by --check and at start-up, naming both."""
    s = Supervisor()
    try:
        ent = "clash%d" % os.getpid()
        with open(os.path.join(s.meta_dir, "zz_a.meta"), "w") as f:
            f.write('version = "1.0.0"\nmeasurements:\n(\n  { table_name: "%s_disk", entity_name: "%s",\n'
                    '    fields: ( { description: "d", type: "key", name: "disk" },\n'
                    '              { description: "d", type: "counter", name: "read_bytes" },\n'
                    '              { description: "d", type: "histogram", name: "lat" } ) }\n)\n' % (ent, ent))
        with open(os.path.join(s.meta_dir, "zz_b.meta"), "w") as f:
            f.write('version = "1.0.0"\nmeasurements:\n(\n  { table_name: "%s_proc", entity_name: "%s",\n'
                    '    fields: ( { description: "d", type: "key", name: "disk" },\n'
                    '              { description: "d", type: "key", name: "tgid" },\n'
                    '              { description: "d", type: "counter", name: "read_bytes" } ) }\n)\n' % (ent, ent))
        for args in ([GOPHER, "-c", s.conf, "--check"], [GOPHER, "-c", s.conf]):
            r = subprocess.run(args, capture_output=True, text=True, timeout=10)
            check(r.returncode != 0, "%s: refused" % args)
            check("gala_gopher_%s_read_bytes" % ent in r.stderr and "'%s_disk'" % ent in r.stderr and
                  "'%s_proc'" % ent in r.stderr, "names the family and both tables: %r" % r.stderr)
        with open(os.path.join(s.meta_dir, "zz_b.meta"), "w") as f:
            f.write('version = "1.0.0"\nmeasurements:\n(\n  { table_name: "%s_sum", entity_name: "%s",\n'
                    '    fields: ( { description: "d", type: "key", name: "disk" },\n'
                    '              { description: "d", type: "counter", name: "lat_sum" } ) }\n)\n' % (ent, ent))
        r = subprocess.run([GOPHER, "-c", s.conf, "--check"], capture_output=True, text=True, timeout=10)
        check(r.returncode != 0 and "_sum series of histogram gala_gopher_%s_lat" % ent in r.stderr and
              "'%s_disk'" % ent in r.stderr and "'%s_sum'" % ent in r.stderr, "histogram series: %r" % r.stderr)
        os.unlink(os.path.join(s.meta_dir, "zz_b.meta"))
        r = subprocess.run([GOPHER, "-c", s.conf, "--check"], capture_output=True, text=True, timeout=10)
        check(r.returncode == 0, "without the clash the schemas load: %r" % r.stderr)
    finally:
        s.cleanup()


def test_cli():
    r = subprocess.run([GOPHER, "--version"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.startswith("gala-gopher "), r.stdout)
    r = subprocess.run([GOPHER, "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "-c, --config" in r.stdout, r.stdout)
    r = subprocess.run([GOPHER], capture_output=True, text=True)
    check(r.returncode == 2, "no config: usage error")


def test_valgrind_clean():
    """The supervisor under valgrind: probes that crash, misbehave and get checked, then SIGTERM."""
    if "san" in os.path.basename(os.path.dirname(GOPHER)) or not shutil.which("valgrind"):
        return  # ASan binaries cannot run under valgrind; the sanitizer run covers them
    bad = os.path.join(TEST_BINS, "bad_probe")
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1", params={"report_period": 1}),
                           '    { name = "bad"; command = "%s"; param = "-m malformed"; switch = "on"; }' % bad,
                           '    { name = "crash"; command = "%s"; param = "-m crash"; switch = "on"; }' % bad],
                   extend=[extend_entry("ext", EXT_SCRIPT, "2"),
                           extend_entry("chk", "/bin/sleep", "100", check_cmd="echo 0")],
                   extra_meta=[BAD_META, EXT_META])
    try:
        vg = os.path.join(s.dir, "valgrind.txt")
        s.stderr = open(os.path.join(s.dir, "stderr.txt"), "w")
        s.proc = subprocess.Popen(["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
                                   "--error-exitcode=9", "--log-file=" + vg, GOPHER, "-c", s.conf],
                                  stdout=s.stderr, stderr=s.stderr, start_new_session=True)
        s.wait_probe("crash", lambda p: p["restarts"] >= 2, 30, "crash restarted twice")
        s.wait_probe("ext", lambda p: p["accepted"] >= 4, 10, "extend records")
        s.wait_probe("system_infos", lambda p: p["config_version_applied"] == 1, 10, "config applied")
        rc = s.stop(signal.SIGTERM, timeout=30)
        text = open(vg).read()
        check(rc == 0, "valgrind reported errors (exit %r):\n%s" % (rc, text[-3000:]))
        check("ERROR SUMMARY: 0 errors" in text, text[-2000:])
    finally:
        s.cleanup()


test_valgrind_clean.timeout = 90


def test_harness_supervisor_shares_nothing_with_the_machine():
    """What every test's supervisor relies on (tests/integration/harness.py): the REST API on a port of
    its own (not 9999, where an agent may listen), its REST state under its temporary root (a state file
    left in /var/lib/gala-gopher/rest by an earlier agent is not restored), its own pin directory on
    bpffs, removed afterwards, and a test's own REST section refused without a port and state_dir."""
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")]).start()
    try:
        conf = open(s.conf).read()
        check('state_dir = "%s"' % s.state_dir in conf and s.state_dir.startswith(s.dir), "state_dir: %s" % conf)
        check('pin_path = "%s"' % s.pin_dir in conf, "pin_path: %s" % conf)
        check(s.pin_dir.startswith("/sys/fs/bpf/gg-test-") and os.path.isdir(s.pin_dir), "pin dir %s" % s.pin_dir)
        port = rest_port(s)
        check(port not in (8888, 9999), "REST port %r" % port)
        check("/var/lib/gala-gopher" not in s.sup_log(), "the default state dir is not read: %s" % s.sup_log()[-2000:])
    finally:
        s.cleanup()
    check(not os.path.exists(s.pin_dir), "pin dir %s removed" % s.pin_dir)
    try:
        Supervisor(extra='rest_api_server = { port = 9999; };')
        raise AssertionError("a REST section without state_dir was accepted")
    except TestFailure:
        pass
