#!/usr/bin/env python3
"""pg_stat_cost.py - what pg_stat_probe (opengauss_sli) costs per poll, in the probe and in the server.

Two PostgreSQL 15 clusters of the bench's own on loopback (tests/integration/test_pg_stat.py's Cluster:
scram-sha-256, autovacuum off): one with its default databases (postgres: 1 row of pg_stat_database
after the template ones are left out), one with 99 more (100 rows). Rounds alternate between them; in
each, pg_stat_probe polls the cluster every second (-t 1) for SECONDS after 3 warm-up polls, and the
round reports per poll: the probe's CPU time (/proc/<pid>/schedstat), the CPU time of the server
backend serving its connection (application_name gala-gopher), and whether the counts stayed exact
(no other session runs: tps must not move). Prints each round and the median [min..max] per cluster.
Run as root from the checkout: python3 bench/pg_stat_cost.py [--rounds 4] [--seconds 15] [--binary B]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from harness import PROBES, ROOT, StandaloneProbe, free_port, meta_fields, proc_oncpu_ns, wait_for  # noqa: E402
from test_pg_stat import Cluster  # noqa: E402

FIELDS = meta_fields(os.path.join(ROOT, "schema", "pg_stat_probe.meta"))


def polls(probe):
    r = probe.latest("pg_stat_probe_stats")
    return int(r["polls"]) if r else 0


def backend_pid(pg):
    out = pg.psql("postgres", "select pid from pg_stat_activity where application_name = 'gala-gopher';\n")
    return int(out.split()[0])


def one_round(binary, pg, seconds, tmp):
    conf = os.path.join(tmp, "pgs-%d.conf" % pg.port)
    with open(conf, "w") as f:
        f.write("servers:\n  - ip: 127.0.0.1\n    port: %d\n    dbname: postgres\n    user: postgres\n"
                "    password: \"%s\"\n" % (pg.port, pg.password))
    os.chmod(conf, 0o600)
    probe = StandaloneProbe(binary, ["-t", "1", "--conf", conf], FIELDS)
    try:
        probe.wait_started()
        wait_for(lambda: polls(probe) >= 3, 30, "3 polls")
        bpid = backend_pid(pg)  # a psql session: its commits land in postgres, let two polls see them first
        wait_for(lambda: polls(probe) >= 6, 30, "6 polls")
        p0, c0, b0 = polls(probe), proc_oncpu_ns(probe.proc.pid), proc_oncpu_ns(bpid)
        t0 = {r["datname"]: r["tps"] for r in probe.rows("pg_tps")}
        time.sleep(seconds)
        p1, c1, b1 = polls(probe), proc_oncpu_ns(probe.proc.pid), proc_oncpu_ns(bpid)
        rows = probe.rows("pg_tps")
        t1 = {r["datname"]: r["tps"] for r in rows}
        ndb = len(t1)
        exact = t0 == t1
    finally:
        probe.stop()
    n = max(p1 - p0, 1)
    return {"dbs": ndb, "polls": p1 - p0, "probe_us": (c1 - c0) / n / 1e3, "backend_us": (b1 - b0) / n / 1e3,
            "exact": exact}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--binary", default=os.path.join(PROBES, "pg_stat_probe"))
    a = ap.parse_args()
    tmps = [tempfile.mkdtemp(prefix="gg-pgsb-") for _ in range(3)]
    small = big = None
    try:
        small = Cluster(tmps[0], free_port(), "pw-" + os.urandom(6).hex())
        big = Cluster(tmps[1], free_port(), "pw-" + os.urandom(6).hex())
        big.psql("postgres", "".join("create database d%d;\n" % i for i in range(99)))
        res = {"small": [], "big": []}
        for i in range(a.rounds):
            for name, pg in (("small", small), ("big", big)) if i % 2 == 0 else (("big", big), ("small", small)):
                r = one_round(a.binary, pg, a.seconds, tmps[2])
                res[name].append(r)
                print("round %d %-5s: %3d databases, %2d polls, probe %6.1f us/poll, backend %6.1f us/poll, "
                      "counts exact: %s" % (i + 1, name, r["dbs"], r["polls"], r["probe_us"], r["backend_us"],
                                            r["exact"]), flush=True)
        for name, rs in res.items():
            for k in ("probe_us", "backend_us"):
                v = [r[k] for r in rs]
                print("%-5s (%d databases) %-10s median %.1f us [%.1f .. %.1f]" % (
                    name, rs[0]["dbs"], k, statistics.median(v), min(v), max(v)))
            print("%-5s counts exact in %d of %d rounds" % (name, sum(r["exact"] for r in rs), len(rs)))
    finally:
        for pg in (small, big):
            if pg:
                pg.stop()
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    main()
