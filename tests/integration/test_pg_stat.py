"""test_pg_stat.py - pg_stat_probe (opengauss_sli): a PostgreSQL 15 cluster of the test's own (initdb into
a temporary directory, scram-sha-256 passwords, autovacuum off so that nothing but the test commits), on a
free loopback port. Ground truth: the transactions the test's psql sessions run (each statement its own
transaction, plus one per session: PostgreSQL counts a connection's start as a transaction of its
database); the probe's own queries must not count. Also: the listening postmaster as tgid, the database
oids, a server stopped and started again (counts never go back, counting resumes exactly), and through
the supervisor's REST API the gaussdb snoopers, a wrong password and a closed port counted in
pg_stat_probe_stats, and the password kept out of GET, the command line and the logs."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import (PROBES, ROOT, StandaloneProbe, check, dump_probe_log, free_port, meta_fields, put_running,
                     rest_call, rest_port, rest_supervisor, stop_proc, teardown, wait_for, wait_port)

BIN = os.path.join(PROBES, "pg_stat_probe")
FIELDS = meta_fields(os.path.join(ROOT, "schema", "pg_stat_probe.meta"))
PG_BIN = "/usr/lib/postgresql/15/bin"


class Cluster:
    """initdb (user postgres, password authentication) and postgres on 127.0.0.1:port, run as postgres."""

    def __init__(self, tmp, port, password):
        self.tmp, self.port, self.password = tmp, port, password
        self.data = os.path.join(tmp, "data")
        shutil.chown(tmp, "postgres", "postgres")
        pw = os.path.join(tmp, "pw")
        with open(pw, "w") as f:
            f.write(password + "\n")
        shutil.chown(pw, "postgres", "postgres")
        r = subprocess.run([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-A", "scram-sha-256", "--pwfile", pw,
                            "-U", "postgres", "--no-sync"], capture_output=True, text=True, user="postgres",
                           group="postgres", cwd=tmp)
        os.unlink(pw)
        check(r.returncode == 0, "initdb: %s" % (r.stdout + r.stderr)[-2000:])
        self.proc = None
        self.start()

    def start(self):
        self.log = open(os.path.join(self.tmp, "pg.log"), "a")
        self.proc = subprocess.Popen([os.path.join(PG_BIN, "postgres"), "-D", self.data, "-p", str(self.port),
                                      "-k", self.tmp, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                                      "-c", "autovacuum=off"],
                                     stdout=self.log, stderr=self.log, user="postgres", group="postgres",
                                     cwd=self.tmp, start_new_session=True)
        wait_port(self.port, self.proc, "postgres", timeout=30)

    def stop(self):
        if self.proc:
            stop_proc(self.proc, signal.SIGINT, 15, False, True)  # fast shutdown: statistics are kept
            self.proc = None
            self.log.close()

    def psql(self, db, sql):
        """Run sql (a script: each statement its own transaction) in one session; its output."""
        env = dict(os.environ, PGPASSWORD=self.password)
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", db, "-q",
                            "-At", "-v", "ON_ERROR_STOP=0", "-f", "-"], input=sql, capture_output=True, text=True,
                           env=env, timeout=60)
        check(r.returncode == 0, "psql: %s" % r.stderr[-1000:])
        return r.stdout


def load(commits, rollbacks=0, errors=0):
    """A psql script: commits single-statement transactions, rollbacks explicit ROLLBACKs and errors
    failing statements (each rolled back)."""
    return "select 1;\n" * commits + "begin; select 2; rollback;\n" * rollbacks + "select 1/0;\n" * errors


def _db_rows(probe, datname):
    return probe.rows("pg_tps", datname=datname)


def _stats_polls(probe):
    r = probe.latest("pg_stat_probe_stats")
    return int(r["polls"]) if r else 0


def _wait_polls(probe, n, timeout=30):
    start = _stats_polls(probe)
    wait_for(lambda: _stats_polls(probe) >= start + n, timeout, "%d more polls" % n)


def _latest(probe, datname):
    rows = _db_rows(probe, datname)
    return (int(rows[-1]["tps"]), int(rows[-1]["xact_rollback"])) if rows else None


def _check_monotonic(rows, what):
    last = {}
    for r in rows:
        for f in ("tps", "xact_rollback"):
            v = int(r[f])
            check(v >= last.get(f, 0), "%s: %s went back from %d to %d" % (what, f, last.get(f, 0), v))
            last[f] = v


def test_pg_stat_exact_counts():
    tmp = tempfile.mkdtemp(prefix="gg-pgs-")
    port = free_port()
    password = "pw-%s" % os.urandom(6).hex()
    pg = probe = None
    try:
        pg = Cluster(tmp, port, password)
        pg.psql("postgres", "create database appdb;\n")
        oid = int(pg.psql("postgres", "select oid from pg_database where datname = 'appdb';\n").strip())
        conf = os.path.join(tmp, "pg_stat_probe.conf")
        with open(conf, "w") as f:
            f.write('servers:\n  -\n    ip: "127.0.0.1"\n    port: "%d"\n    dbname: "postgres"\n'
                    '    user: "postgres"\n    password: "%s"\n' % (port, password))
        os.chmod(conf, 0o600)
        probe = StandaloneProbe(BIN, ["-t", "1", "--conf", conf], FIELDS)
        probe.wait_started()
        wait_for(lambda: _latest(probe, "appdb") and _latest(probe, "postgres"), 20, "rows of appdb and postgres")
        _wait_polls(probe, 2)

        # idle: the probe's own queries (one a period, in "postgres") leave the counts alone
        idle0 = {d: _latest(probe, d) for d in ("postgres", "appdb")}
        _wait_polls(probe, 4)
        idle1 = {d: _latest(probe, d) for d in ("postgres", "appdb")}
        check(idle0 == idle1, "counts moved while nothing ran: %r -> %r" % (idle0, idle1))

        row = _db_rows(probe, "appdb")[-1]
        check(row["tgid"] == str(pg.proc.pid), "tgid %s, postmaster %d" % (row["tgid"], pg.proc.pid))
        check(row["ins_id"] == str(oid), "ins_id %s, oid %d" % (row["ins_id"], oid))
        check((row["app"], row["method"], row["server_ip"], row["server_port"]) ==
              ("POSTGRE", "0", "127.0.0.1", str(port)), "labels %r" % row)

        # 37 commits, 5 rollbacks and an error in appdb; 20 commits in postgres (+1 for each session)
        pg.psql("appdb", load(37, 5, 1))
        pg.psql("postgres", load(20))
        want = {"appdb": (idle1["appdb"][0] + 38, idle1["appdb"][1] + 6),
                "postgres": (idle1["postgres"][0] + 21, idle1["postgres"][1])}
        try:
            wait_for(lambda: all(_latest(probe, d) == want[d] for d in want), 20, "the test's transactions counted")
        except Exception:
            raise AssertionError("counts %r, want %r" % ({d: _latest(probe, d) for d in want}, want))
        _wait_polls(probe, 3)
        check(all(_latest(probe, d) == want[d] for d in want), "counts moved on: %r, want %r" % (
            {d: _latest(probe, d) for d in want}, want))

        # the server goes away: up 0, connect errors counted, the probe stays
        pg.stop()
        wait_for(lambda: (probe.latest("pg_stat_probe_stats") or {}).get("up") == "0", 20, "up 0")
        wait_for(lambda: int(probe.latest("pg_stat_probe_stats")["connect_errors"]) >= 1, 20, "connect errors")
        check(probe.proc.poll() is None, "probe exited with the server down")
        # back (statistics kept by the fast shutdown): counting resumes exactly, nothing goes back
        pg.start()
        wait_for(lambda: (probe.latest("pg_stat_probe_stats") or {}).get("up") == "1", 20, "up 1 again")
        _wait_polls(probe, 2)
        before = _latest(probe, "appdb")
        pg.psql("appdb", load(10))
        wait_for(lambda: _latest(probe, "appdb") == (before[0] + 11, before[1]), 20, "+11 after the restart")
        _wait_polls(probe, 2)
        check(_latest(probe, "appdb") == (before[0] + 11, before[1]), "appdb %r, want %r" % (
            _latest(probe, "appdb"), (before[0] + 11, before[1])))
        for d in ("appdb", "postgres"):
            _check_monotonic(_db_rows(probe, d), d)
        check(_db_rows(probe, "appdb")[-1]["tgid"] == str(pg.proc.pid), "tgid after the restart")
        st = probe.latest("pg_stat_probe_stats")
        check(int(st["query_errors"]) + int(st["connect_errors"]) >= 1 and st["rows_dropped"] == "0", "stats %r" % st)
        check(not probe.bad, "malformed records: %r" % probe.bad[:3])
        rc, log = probe.stop()
        probe = None
        check(password not in log, "the password is in the probe's log")
        print("  appdb +38 commits +6 rollbacks, postgres +21, idle flat over 4 polls, +11 after a restart")
    finally:
        if probe:
            probe.stop()
        teardown(pg)
        shutil.rmtree(tmp, ignore_errors=True)


test_pg_stat_exact_counts.timeout = 180


def test_pg_stat_conf_errors():
    """A conf file that is malformed, or writable by anyone, stops the probe at its start with the line
    and the reason; a missing default file is no error (no servers until snoopers name some)."""
    tmp = tempfile.mkdtemp(prefix="gg-pgs-conf-")
    try:
        bad = os.path.join(tmp, "bad.conf")
        with open(bad, "w") as f:
            f.write("servers:\n  - ip: 127.0.0.1\n    port: 99999\n")
        os.chmod(bad, 0o600)
        r = subprocess.run([BIN, "-t", "1", "--conf", bad], capture_output=True, text=True, timeout=20)
        check(r.returncode == 1 and "line 3: port" in r.stderr, "rc %d: %s" % (r.returncode, r.stderr[-500:]))
        os.chmod(bad, 0o666)
        r = subprocess.run([BIN, "-t", "1", "--conf", bad], capture_output=True, text=True, timeout=20)
        check(r.returncode == 1 and "only its owner" in r.stderr, "rc %d: %s" % (r.returncode, r.stderr[-500:]))
        r = subprocess.run([BIN, "-t", "1", "--conf", os.path.join(tmp, "none")], capture_output=True, text=True,
                           timeout=20)
        check(r.returncode == 1 and "No such file" in r.stderr, "rc %d: %s" % (r.returncode, r.stderr[-500:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_pg_stat_rest_gaussdb():
    tmp = tempfile.mkdtemp(prefix="gg-pgs-rest-")
    pgtmp = tempfile.mkdtemp(prefix="gg-pgs-pg-")  # the postgres user's: not under tmp (root's, 0700)
    port, closed = free_port(), free_port()
    password, wrong = "pw-%s" % os.urandom(6).hex(), "wrong-%s" % os.urandom(6).hex()
    pg = s = None
    try:
        pg = Cluster(pgtmp, port, password)
        s = rest_supervisor(tmp, "pg_stat_probe")
        dbs = [{"dbip": "127.0.0.1", "dbport": port, "dbname": "postgres", "dbuser": "postgres", "dbpass": password},
               {"dbip": "localhost", "dbport": port, "dbname": "postgres", "dbuser": "postgres", "dbpass": wrong},
               {"dbip": "127.0.0.1", "dbport": closed, "dbname": "postgres", "dbuser": "postgres", "dbpass": "x"}]
        st = put_running(s, "opengauss_sli", "pg_stat_probe", {"snoopers": {"gaussdb": dbs}, "state": "running"})

        def stats():
            out = {}
            for r in s.metric_records("pg_stat_probe_stats"):
                out[(r["server_ip"], r["server_port"])] = r
            return out

        def tps():
            rows = [r for r in s.metric_records("pg_tps") if r.get("datname") == "postgres"]
            return int(rows[-1]["tps"]) if rows else None

        try:
            wait_for(lambda: len(stats()) == 3 and tps() is not None, 30, "stats of 3 servers and pg_tps rows")
        except Exception:
            dump_probe_log(s, "pg_stat_probe")
            raise
        wait_for(lambda: int(stats()[("127.0.0.1", str(port))]["polls"]) >= 3, 20, "3 polls")
        t0 = tps()
        pg.psql("postgres", load(12))
        wait_for(lambda: tps() == t0 + 13, 20, "+13 through the supervisor")
        sn = stats()
        good, bad, gone = sn[("127.0.0.1", str(port))], sn[("localhost", str(port))], sn[("127.0.0.1", str(closed))]
        check([int(x["up"]) for x in (good, bad, gone)] == [1, 0, 0], "up: %r" % sn)
        check(int(bad["connect_errors"]) >= 1 and int(gone["connect_errors"]) >= 1, "connect errors: %r" % sn)
        check(s.probe("pg_stat_probe")["rejected_total"] == 0, "records rejected by the supervisor")

        # the password: masked in GET, absent from the probe's command line and from every log
        code, doc, raw, _ = rest_call(rest_port(s), "GET", "/opengauss_sli")
        check(code == 200 and password not in raw and wrong not in raw, "GET shows a password: %s" % raw[:500])
        check([d.get("dbpass") for d in doc["snoopers"]["gaussdb"]] == ["******"] * 3, "GET: %r" % doc["snoopers"])
        with open("/proc/%d/cmdline" % st["pid"], "rb") as f:
            cmd = f.read().decode(errors="replace")
        check(password not in cmd, "password on the probe's command line")
        plog = s.probe_log("pg_stat_probe")
        check("authentication failed" in plog, "no authentication failure logged: %s" % plog[-1500:])
        check(password not in plog and wrong not in plog, "a password in the probe's log")
        check(password not in s.sup_log(), "the password in the supervisor's log")
        for root, _, files in os.walk(os.path.join(tmp, "state")):
            for fn in files:
                mode = os.stat(os.path.join(root, fn)).st_mode & 0o077
                check(mode == 0, "%s is readable by others (%o)" % (fn, mode))
        print("  PUT /opengauss_sli: +13 counted; wrong password and closed port: up 0, connect errors %s, %s" % (
            bad["connect_errors"], gone["connect_errors"]))
    finally:
        teardown(s, pg)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(pgtmp, ignore_errors=True)


test_pg_stat_rest_gaussdb.timeout = 120


def test_pg_stat_hung_server():
    """A server that takes the connection and never answers (a listening socket nobody reads): each
    period's attempt ends after query_timeout (--timeout 1) as a connect error, the probe keeps its
    period and stops at once on SIGTERM."""
    import socket
    tmp = tempfile.mkdtemp(prefix="gg-pgs-hung-")
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe = None
    try:
        lst.bind(("127.0.0.1", 0))
        lst.listen(64)  # the kernel completes the handshakes; nothing is ever read or sent
        conf = os.path.join(tmp, "pg_stat_probe.conf")
        with open(conf, "w") as f:
            f.write("servers:\n  - ip: 127.0.0.1\n    port: %d\n    user: u\n    password: p\n" % lst.getsockname()[1])
        os.chmod(conf, 0o600)
        probe = StandaloneProbe(BIN, ["-t", "1", "--timeout", "1", "--conf", conf], FIELDS)
        probe.wait_started()
        t0 = time.monotonic()
        wait_for(lambda: int((probe.latest("pg_stat_probe_stats") or {}).get("connect_errors", 0)) >= 3, 20,
                 "3 connect errors")
        took = time.monotonic() - t0
        st = probe.latest("pg_stat_probe_stats")
        check(st["up"] == "0" and st["polls"] == "0", "stats %r" % st)
        check(took < 12, "3 timed-out attempts took %.1f s" % took)
        check("no answer in 1 s" in probe.stderr(), "no timeout logged: %s" % probe.stderr()[-1000:])
        check(not probe.rows("pg_tps"), "pg_tps rows from a server that never answered")
        t1 = time.monotonic()
        rc, _ = probe.stop()
        probe = None
        check(time.monotonic() - t1 < 5, "SIGTERM took %.1f s" % (time.monotonic() - t1))
        check(rc == 0, "exit status %r" % rc)
    finally:
        if probe:
            probe.stop()
        lst.close()
        shutil.rmtree(tmp, ignore_errors=True)
