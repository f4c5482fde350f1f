"""test_l7api.py - l7probe's reporting side on real servers (nginx, redis-server, PostgreSQL from
Debian) driven by clients of ours with a known request mix: l7_rpc_api rows with exact per-api counts
on both sides, a random-URL scan held to api_limit by one __other__ row, trace spans (with a sampling
rate of 0 exactly the errors and the slow requests, with 1000 per mille all of them; through the
supervisor as OpenTelemetry JSON in events.log), and the SLI probes built on the same capture
(ksliprobe's redis_sli, pgsliprobe's pg_sli and pg_max_sli, ksli through PUT /ksli)."""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import test_l7 as l7
from harness import (PROBES, LinePeer, check, events, free_port, put_running, rest_supervisor, teardown,
                     wait_for)

API_CLIENT = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "l7api_client.py")]
# the supervisor's reserved trace table, as l7probe prints it standalone (supervisor/export/otel.h)
l7.FIELDS["trace_span"] = ["trace_id", "span_id", "parent_span_id", "kind", "start_unix_ns", "end_unix_ns", "tgid", "protocol", "api",
                           "raw_api", "status", "error", "client_ip", "client_port", "server_ip", "server_port",
                           "l4_role", "l7_role", "ssl", "req_bytes", "resp_bytes"]
# ksliprobe's latency_thr events, printed standalone
l7.FIELDS["event_v2"] = ["entity_name", "entity_id", "metric", "severity", "body", "body_zh", "labels", "event_type"]


class ApiClient(LinePeer):
    def __init__(self, mode, port):
        super().__init__(API_CLIENT + [mode, str(port)])

    def send(self, reqs):
        return self.ask(json.dumps(reqs))


def probe_of(binary, args):
    """test_l7's Probe on another binary of l7probe's program (ksliprobe, pgsliprobe)."""
    saved = l7.L7PROBE
    l7.L7PROBE = os.path.join(PROBES, binary)
    try:
        return l7.Probe(args)
    finally:
        l7.L7PROBE = saved


# A known mix: (method, path) -> (how many, expected api, expected status)
HTTP_MIX = [
    ("GET", "/small.html", 12, "GET /small.html", 200),
    ("GET", "/small.html?x=%d", 3, "GET /small.html", 200),
    ("GET", "/users/%d/orders", 9, "GET /users/{id}/orders", 404),
    ("GET", "/blob/%032x", 5, "GET /blob/{id}", 404),
    ("POST", "/small.html", 4, "POST /small.html", 405),
    ("HEAD", "/small.html", 2, "HEAD /small.html", 200),
]


def http_mix():
    reqs, want = [], {}
    for method, path, n, api, status in HTTP_MIX:
        for i in range(n):
            reqs.append([method, path % (1000 + i * 7919) if "%" in path else path])
        w = want.setdefault(api, {"n": 0, "err": 0, "cerr": 0})
        w["n"] += n
        w["err"] += n if status >= 400 else 0
        w["cerr"] += n if 400 <= status < 500 else 0
    random.Random(7).shuffle(reqs)
    return reqs, want


def api_rows(probe, tgid, port, role):
    """api -> latest l7_rpc_api row of tgid, port and l7 role."""
    got = {}
    for r in probe.rows("l7_rpc_api", tgid=tgid, server_port=port, l7_role=role):
        got[r["api"]] = r
    return got


def wait_api_total(probe, tgid, port, role, total, what):
    def ok():
        rows = api_rows(probe, tgid, port, role)
        return rows if sum(int(r["req_count"]) for r in rows.values()) >= total else None
    return l7.wait_or_dump(probe, ok, 20, what, tables=("l7_rpc_api",), last=10)


def check_api_rows(rows, want, side):
    check(set(rows) == set(want), "%s side apis %s, expected %s" % (side, sorted(rows), sorted(want)))
    for api, w in want.items():
        r = rows[api]
        got = (int(r["req_count"]), int(r["err_count"]), int(r["client_err_count"]), int(r["server_err_count"]))
        check(got == (w["n"], w["err"], w["cerr"], w["err"] - w["cerr"]),
              "%s side %r: req/err/client_err/server_err %r, expected %r" % (
                  side, api, got, (w["n"], w["err"], w["cerr"], w["err"] - w["cerr"])))
        check(l7.hist_count(r["latency"]) == w["n"], "%s side %r latency histogram %s" % (side, api, r["latency"]))


def test_l7api_http_counts_and_cap():
    """A known HTTP mix against nginx: exact rows per api on the server and client sides; then a
    scan of 300 random URLs: each side keeps api_limit (20) rows and puts the rest in __other__."""
    with l7.l7_run("api-http", l7.plain(l7.Nginx), "http", "http", ["--api-limit", "20"],
                   client_of=ApiClient) as (nginx, client, probe, port):
        time.sleep(0.5)
        reqs, want = http_mix()
        done = client.send(reqs)
        statuses = {}
        for (m, p, *_), st in zip(reqs, done["status"]):
            statuses.setdefault((m, p.split("/")[1].split("?")[0]), set()).add(st)
        check(all(len(v) == 1 for v in statuses.values()), "nginx answered unexpectedly: %r" % statuses)
        total = len(reqs)
        srv = wait_api_total(probe, nginx.worker, port, "server", total, "server-side api rows")
        cli = wait_api_total(probe, client.pid, port, "client", total, "client-side api rows")
        check_api_rows(srv, want, "server")
        check_api_rows(cli, want, "client")
        rpc = probe.latest("l7_rpc", tgid=nginx.worker, server_port=port, l7_role="server")
        check(int(rpc["req_count"]) == total, "l7_rpc counts %s, the api rows %d" % (rpc["req_count"], total))
        print("  %d requests in %d apis, both sides exact: %s" % (total, len(want), sorted(want)))

        # the scan: letters only, so no segment is an id
        rnd = random.Random(11)
        scan = [["GET", "/scan/" + "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))]
                for _ in range(300)]
        check(len(set(p for _, p in scan)) == 300, "scan paths not distinct")
        client.send(scan)
        other = 300 - (20 - len(want))
        for tgid, role in ((nginx.worker, "server"), (client.pid, "client")):
            rows = wait_api_total(probe, tgid, port, role, total + 300, "%s-side rows after the scan" % role)
            named = [a for a in rows if a != "__other__"]
            check(len(named) == 20, "%s side: %d named apis, api_limit is 20" % (role, len(named)))
            check("__other__" in rows and int(rows["__other__"]["req_count"]) == other,
                  "%s side __other__: %r, expected %d requests" % (role, rows.get("__other__"), other))
            check(int(rows["__other__"]["err_count"]) == other, "%s side __other__ errors" % role)
            check(all(a in rows and int(rows[a]["req_count"]) == w["n"] for a, w in want.items()),
                  "%s side: the mix's rows changed" % role)
        time.sleep(1.2)
        st = probe.latest("l7_stats")
        check(int(st["api_overflow"]) == 2 * other, "l7_stats api_overflow %s, expected %d" % (st["api_overflow"],
                                                                                                2 * other))
        keys = {(r["tgid"], r["client_ip"], r["server_ip"], r["server_port"], r["l4_role"], r["l7_role"], r["api"])
                for r in probe.rows("l7_rpc_api")}
        keys = {}
        for r in probe.rows("l7_rpc_api"):
            keys.setdefault(r["api"], set()).add((r["tgid"], r["client_ip"], r["server_ip"], r["server_port"],
                                                 r["l4_role"], r["l7_role"], r["ssl"]))
        split = {a: sorted(k) for a, k in keys.items() if len(k) > 2}
        # every row the probe counts is reported, and no api is split over more keys than its two sides
        check(int(st["apis"]) == sum(len(k) for k in keys.values()), "l7_stats apis %s, %d rows reported" % (
            st["apis"], sum(len(k) for k in keys.values())))
        check(not split and int(st["apis"]) == 2 * 21, "l7_stats apis %s, expected 42; apis on more keys: %r" % (
            st["apis"], split))
        print("  scan of 300 URLs: 20 apis a side, __other__ %d a side, api_overflow %s" % (other,
                                                                                           st["api_overflow"]))


test_l7api_http_counts_and_cap.timeout = 120

# Redis mix for traces: fast ones, errors, slow ones (BLPOP on an empty list times out after 0.15 s).
FAST, ERRS, SLOW = 30, 5, 4


def redis_mix():
    reqs = []
    for i in range(FAST):
        reqs.append(["SET", "k%d" % i, "v"] if i % 2 else ["GET", "k%d" % i])
    reqs += [["NOSUCHCMD", "x"]] * ERRS
    reqs += [["BLPOP", "nolist", "0.15"]] * SLOW
    random.Random(3).shuffle(reqs)
    return reqs


def spans_of(probe, tgid):
    return [r for r in probe.rows("trace_span", tgid=tgid)]


def check_spans(spans, want_n, side, all_kept):
    check(len(spans) == want_n, "%s side: %d spans, expected %d" % (side, len(spans), want_n))
    ids = set()
    for s in spans:
        check(len(s["trace_id"]) == 32 and len(s["span_id"]) == 16, "ids %r" % s)
        ids.add(s["trace_id"])
        dur = int(s["end_unix_ns"]) - int(s["start_unix_ns"])
        check(dur >= 0 and abs(int(s["start_unix_ns"]) / 1e9 - time.time()) < 120, "times %r" % s)
        check(s["protocol"] == "redis" and s["kind"] == side, "span %r" % s)
        if s["api"] == "BLPOP":
            check(dur >= 140e6, "BLPOP span of %d ns, it waited 150 ms" % dur)
    check(len(ids) == len(spans), "trace ids repeat")
    errs = [s for s in spans if s["error"] == "1"]
    slow = [s for s in spans if s["api"] == "BLPOP"]
    check(len(errs) == ERRS and all(s["api"] == "NOSUCHCMD" for s in errs), "%s side error spans %r" % (side, errs))
    check(len(slow) == SLOW, "%s side slow spans: %d" % (side, len(slow)))
    if not all_kept:
        check(len(errs) + len(slow) == len(spans), "%s side: spans other than errors and slow ones" % side)


def run_trace(permille, want_n):
    args = ["-P", "l7_rpc_metrics,l7_rpc_trace", "--trace-sample", str(permille), "--trace-slow", "100"]
    with l7.l7_run("api-trace", l7.plain(l7.Redis), "redis", "redis", args,
                   client_of=ApiClient) as (redis, client, probe, port):
        time.sleep(0.5)
        done = client.send(redis_mix())
        check(sum(done["errors"]) == ERRS, "client saw %d errors" % sum(done["errors"]))
        n = FAST + ERRS + SLOW
        wait_for(lambda: len(spans_of(probe, redis.proc.pid)) >= want_n and len(spans_of(probe, client.pid)) >= want_n
                 and (probe.latest("l7_rpc", tgid=client.pid) or {}).get("req_count") == str(n), 15, "spans")
        time.sleep(2.2)  # two more reports: nothing more may come
        check_spans(spans_of(probe, redis.proc.pid), want_n, "server", permille == 1000)
        check_spans(spans_of(probe, client.pid), want_n, "client", permille == 1000)
        st = probe.latest("l7_stats")
        check(int(st["spans"]) == 2 * want_n and int(st["spans_sampled_out"]) == 2 * (n - want_n)
              and int(st["spans_dropped"]) == 0, "l7_stats spans: %r" % st)
        print("  trace_sample_permille %d: %d spans a side of %d requests (%d errors, %d slow); stats spans %s, "
              "sampled out %s" % (permille, want_n, n, ERRS, SLOW, st["spans"], st["spans_sampled_out"]))


def test_l7api_traces_sampling():
    """Rate 0: exactly the error spans and the slow ones on each side; rate 1000 per mille: all."""
    run_trace(0, ERRS + SLOW)
    run_trace(1000, FAST + ERRS + SLOW)


test_l7api_traces_sampling.timeout = 120


def test_l7api_traces_otel_events():
    """PUT /l7 with l7_rpc_trace at 1000 per mille: every request of the client becomes an OTel JSON
    span line in events.log (resourceSpans/scopeSpans/spans), client and server side."""
    tmp = tempfile.mkdtemp(prefix="gg-l7api-otel-")
    port = free_port()
    redis = l7.Redis(tmp, port)
    client = None
    s = rest_supervisor(tmp, "l7probe")
    try:
        client = ApiClient("redis", port)
        conf = {"cmd": {"probe": ["l7_rpc_metrics", "l7_rpc_trace"]},
                "snoopers": {"proc_id": [redis.proc.pid, client.pid]},
                "params": {"l7_protocol": ["redis"], "trace_sample_permille": 1000, "trace_slow_ms": 100},
                "state": "running"}
        put_running(s, "l7", "l7probe", conf)
        time.sleep(0.5)
        reqs = redis_mix()
        client.send(reqs)

        def spans():
            out = [j for j in events(s) if "resourceSpans" in j]
            return out if len(out) >= 2 * len(reqs) else None
        got = wait_for(spans, 20, "%d spans in events.log" % (2 * len(reqs)))
        time.sleep(1.5)
        got = spans()
        check(len(got) == 2 * len(reqs), "%d spans, expected %d" % (len(got), 2 * len(reqs)))
        by_pid = {}
        for j in got:
            rs = j["resourceSpans"][0]
            res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
            sp = rs["scopeSpans"][0]["spans"][0]
            attrs = {a["key"]: list(a["value"].values())[0] for a in sp["attributes"]}
            check(len(sp["traceId"]) == 32 and len(sp["spanId"]) == 16, "ids: %r" % sp)
            check(int(sp["endTimeUnixNano"]) >= int(sp["startTimeUnixNano"]), "times: %r" % sp)
            check(attrs["db.system.name"] == "redis" and attrs["server.port"] == str(port), "attributes %r" % attrs)
            check(sp["kind"] in (2, 3), "kind %r" % sp["kind"])
            pid = int(res["process.pid"]["intValue"])
            by_pid.setdefault(pid, []).append((sp, attrs))
        check(set(by_pid) == {redis.proc.pid, client.pid}, "spans of processes %r" % sorted(by_pid))
        for pid, kind in ((redis.proc.pid, 2), (client.pid, 3)):
            lst = by_pid[pid]
            check(len(lst) == len(reqs) and all(sp["kind"] == kind for sp, _ in lst), "process %d spans" % pid)
            errs = [sp for sp, _ in lst if sp["status"]["code"] == 2]
            check(len(errs) == ERRS and all(sp["name"] == "NOSUCHCMD" for sp in errs), "error spans %r" % errs)
        traces = s.status()["export"]["traces"]
        check(traces["spans"] == 2 * len(reqs) and traces["invalid"] == 0, "status export.traces %r" % traces)
        check(s.probe("l7probe")["rejected_total"] == 0, "records rejected by the supervisor")
        print("  %d OTel spans in events.log, %d errors a side, status %r" % (len(got), ERRS, traces))
    finally:
        teardown(client, s, redis, tmp)


test_l7api_traces_otel_events.timeout = 90


def test_l7api_ksli():
    """ksliprobe on redis-server: one redis_sli row per connection, the slowest request's command and
    latency; latency_thr gives an event_v2. Then PUT /ksli through the supervisor: its rows validated."""
    tmp = tempfile.mkdtemp(prefix="gg-l7api-ksli-")
    port = free_port()
    redis = l7.Redis(tmp, port)
    client = probe = None
    try:
        client = ApiClient("redis", port)
        probe = probe_of("ksliprobe", ["-t", "1", "-T", "100", "--pid", "%d,%d" % (redis.proc.pid, client.pid)])
        probe.wait_started()
        time.sleep(0.5)
        client.send([["SET", "a", "b"]] * 20 + [["BLPOP", "nolist", "0.2"]] + [["GET", "a"]] * 5)
        row = wait_for(lambda: probe.latest("redis_sli", tgid=redis.proc.pid), 10, "a redis_sli row")
        check(row["max_command"] == "BLPOP" and int(row["max_rtt_nsec"]) >= 190e6, "slowest: %r" % row)
        check(0 < int(row["rtt_nsec"]) < int(row["max_rtt_nsec"]) and row["command"] == "GET", "row %r" % row)
        check(row["protocol"] == "redis" and row["server_port"] == str(port) and row["server_ip"] == "127.0.0.1",
              "row %r" % row)
        check(not probe.rows("redis_sli", tgid=client.pid), "the client's view is not an SLI row")
        ev = wait_for(lambda: probe.latest("event_v2", metric="max_rtt_nsec"), 5, "latency_thr event")
        check("BLPOP" in ev["body"] and ev["entity_name"] == "sli", "event %r" % ev)
        check(not probe.rows("l7_rpc") and not probe.rows("l7_link"), "ksliprobe sends no l7 tables")
        print("  redis_sli: %r" % {k: row[k] for k in ("command", "rtt_nsec", "max_command", "max_rtt_nsec")})
    finally:
        teardown(client, probe)
    s = rest_supervisor(tmp, "ksliprobe")
    client = None
    try:
        client = ApiClient("redis", port)
        conf = {"snoopers": {"proc_id": [redis.proc.pid]}, "params": {"latency_thr": 100, "report_period": 5,
                                                                      "continuous_sampling": 1}, "state": "running"}
        put_running(s, "ksli", "ksliprobe", conf)
        time.sleep(0.5)
        client.send([["SET", "a", "b"]] * 5 + [["BLPOP", "nolist", "0.2"]])
        recs = wait_for(lambda: s.metric_records("redis_sli"), 15, "redis_sli through the supervisor")
        check(recs[-1]["max_command"] == "BLPOP", "record %r" % recs[-1])
        check(s.probe("ksliprobe")["rejected_total"] == 0, "records rejected by the supervisor")
    finally:
        teardown(client, s, redis, tmp)


test_l7api_ksli.timeout = 120


def test_l7api_pgsql_api_and_pgsli():
    """PostgreSQL: l7probe's l7_rpc_api rows per statement type and table (exact counts), and
    pgsliprobe on the same traffic: pg_sli / pg_max_sli rows per statement type of the backend."""
    tmp = tempfile.mkdtemp(prefix="gg-l7api-pg-")
    port = free_port()
    pg = l7.Postgres(tmp, port)
    client = probe = sli = None
    try:
        client = l7.Client("pgsql", port)
        backend = client.ready["backend"]
        scope = "%d,%d,%d" % (pg.proc.pid, backend, client.pid)
        probe = l7.Probe(["-t", "1", "-p", "pgsql", "--pid", scope])
        sli = probe_of("pgsliprobe", ["-t", "1", "--pid", scope])
        probe.wait_started()
        sli.wait_started()
        time.sleep(0.5)
        done = client.go()
        check(done["requests"] == 50 and done["errors"] == 9, "client did %r" % done)
        # l7_client's pgsql mix: 8 "SELEC 1", 32 + 9 SELECT without a table, 1 from no_such_table
        want = {"SELEC": {"n": 8, "err": 8, "cerr": 0}, "SELECT": {"n": 41, "err": 0, "cerr": 0},
                "SELECT no_such_table": {"n": 1, "err": 1, "cerr": 0}}
        for tgid, role in ((backend, "server"), (client.pid, "client")):
            rows = wait_api_total(probe, tgid, port, role, 50, "%s-side pgsql api rows" % role)
            check_api_rows(rows, want, role)
        rows = wait_for(lambda: {r["method"] for r in sli.rows("pg_sli", tgid=backend)} >= {"SELECT", "SELEC"}
                        and sli.rows("pg_sli", tgid=backend), 10, "pg_sli rows of SELECT and SELEC")
        for r in rows:
            check(r["app"] == "pgsql" and int(r["rtt_nsec"]) > 0 and r["server_port"] == str(port), "pg_sli %r" % r)
            m = sli.latest("pg_max_sli", tgid=backend, ins_id=r["ins_id"], method=r["method"])
            check(m is not None and int(m["max_rtt_nsec"]) >= int(r["rtt_nsec"]), "pg_max_sli %r for %r" % (m, r))
        check(not sli.rows("pg_sli", tgid=client.pid), "the client's view is not an SLI row")
        print("  pgsql apis exact on both sides; pg_sli methods %s" % sorted({r["method"] for r in rows}))
    finally:
        teardown(client, probe, sli, pg, tmp)


test_l7api_pgsql_api_and_pgsli.timeout = 150


class Waiting:
    """A command started once the test says go: a python process prints its pid, waits for a line,
    then execs the command (same pid), so that the probe has it in scope before it sends anything."""

    def __init__(self, argv):
        code = ("import os, sys; print(os.getpid(), flush=True); sys.stdin.readline(); "
                "os.execvp(sys.argv[1], sys.argv[1:])")
        self.proc = subprocess.Popen([sys.executable, "-c", code] + argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = int(self.proc.stdout.readline())

    def go(self, timeout=60):
        out, err = self.proc.communicate("go\n", timeout=timeout)
        check(self.proc.returncode == 0, "%r exited %s: %s" % (self.proc.args, self.proc.returncode, err[-1000:]))
        return out

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_l7api_kafka():
    """librdkafka's mock cluster with kcat: N messages produced one per request (batch.num.messages=1)
    are N "Produce <topic>" requests on the broker's side and on the producer's; the consumer reads
    the N messages back with Fetch requests, none of them errors."""
    from harness import KafkaMock
    n, topic = 25, "l7api_%d" % os.getpid()
    tmp = tempfile.mkdtemp(prefix="gg-l7api-kafka-")
    msgs = os.path.join(tmp, "msgs.txt")
    with open(msgs, "w") as f:
        f.write("".join("message-%d\n" % i for i in range(n)))
    broker = KafkaMock(topics=(topic,))
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    prod = cons = probe = None
    try:
        prod = Waiting(["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-X", "linger.ms=0", "-X",
                        "batch.num.messages=1", "-l", msgs])
        cons = Waiting(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q"])
        probe = l7.Probe(["-t", "1", "-p", "kafka", "--pid", "%d,%d,%d" % (broker.proc.pid, prod.pid, cons.pid)])
        probe.wait_started()
        time.sleep(0.5)
        prod.go()
        got = cons.go().splitlines()
        check(got == ["message-%d" % i for i in range(n)], "consumer read %r" % got[:5])
        api = "Produce " + topic
        for tgid, role in ((broker.proc.pid, "server"), (prod.pid, "client")):
            r = wait_for(lambda: (probe.latest("l7_rpc_api", tgid=tgid, l7_role=role, server_port=port, api=api)
                                  or {}).get("req_count") == str(n) and
                         probe.latest("l7_rpc_api", tgid=tgid, l7_role=role, server_port=port, api=api),
                         15, "%s side %d %r requests" % (role, n, api))
            check(r["err_count"] == "0" and r["protocol"] == "kafka", "%s side %r" % (role, r))
        time.sleep(1.2)
        for tgid, role in ((broker.proc.pid, "server"), (prod.pid, "client")):
            r = probe.latest("l7_rpc_api", tgid=tgid, l7_role=role, server_port=port, api=api)
            check(r["req_count"] == str(n), "%s side: %s Produce requests after all, expected %d" % (
                role, r["req_count"], n))
        fetch = [probe.latest("l7_rpc_api", tgid=t, l7_role=role, server_port=port, api="Fetch " + topic)
                 for t, role in ((broker.proc.pid, "server"), (cons.pid, "client"))]
        check(all(f and int(f["req_count"]) >= 1 and f["err_count"] == "0" for f in fetch), "Fetch rows %r" % fetch)
        check(fetch[0]["req_count"] == fetch[1]["req_count"], "Fetch: broker %s, consumer %s" % (
            fetch[0]["req_count"], fetch[1]["req_count"]))
        apis = {r["api"] for r in probe.rows("l7_rpc_api", tgid=broker.proc.pid)}
        check({"ApiVersions", "Metadata"} <= apis, "broker apis %r" % apis)
        print("  %d messages: %d Produce requests a side, %s Fetch; broker apis %s" % (
            n, n, fetch[0]["req_count"], sorted(apis)))
    finally:
        teardown(prod, cons, probe, broker, tmp)


test_l7api_kafka.timeout = 120


WIRE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "%s_wire.py")


class WireServer(l7.Server):
    """scripts/<mode>_wire.py's server (no Debian package speaks the protocol: a wire-exact peer of ours)."""
    stop_sig = signal.SIGKILL

    def __init__(self, mode, port):
        self.proc = subprocess.Popen([sys.executable, WIRE % mode, "server", str(port)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        if not self.proc.stdout.readline().startswith('{"ready"'):
            self.stop()
            check(False, "%s_wire server did not start" % mode)


def wire(mode):
    """start(tmp) for l7.l7_run: the WireServer of mode on a free port."""
    def start(tmp):
        port = free_port()
        return WireServer(mode, port), port
    return start


class WireClient(LinePeer):
    """scripts/<mode>_wire.py's client: one JSON line of requests in, one JSON object of answers out; it
    ends at the end of its input."""

    def __init__(self, mode, port):
        super().__init__([sys.executable, WIRE % mode, "client", str(port)])

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(5)


def test_l7api_mongo():
    """MongoDB (no Debian package: a wire-exact server and client of ours, scripts/mongo_wire.py):
    a known mix of hello, find, insert and finds of a missing collection (ok: 0, code 26) counted
    exactly per command and collection on both sides, the missing ones as errors."""
    with l7.l7_run("mongo", wire("mongo"), "mongo", "mongo", client_of=WireClient) as (server, client, probe, port):
        time.sleep(0.5)
        reqs = [["hello", ""]] + [["find", "coll"]] * 12 + [["insert", "coll"]] * 7 + [["find", "missing"]] * 3
        oks = client.ask(json.dumps(reqs))["ok"]
        check(oks.count(0) == 3, "the server answered %r" % oks)
        want = {"hello": {"n": 1, "err": 0, "cerr": 0}, "find coll": {"n": 12, "err": 0, "cerr": 0},
                "insert coll": {"n": 7, "err": 0, "cerr": 0}, "find missing": {"n": 3, "err": 3, "cerr": 0}}
        for tgid, role in ((server.proc.pid, "server"), (client.pid, "client")):
            rows = wait_api_total(probe, tgid, port, role, len(reqs), "%s-side mongo api rows" % role)
            check_api_rows(rows, want, role)
        r = probe.latest("l7_rpc", tgid=server.proc.pid, l7_role="server")
        check(r["protocol"] == "mongo" and r["req_count"] == str(len(reqs)) and r["err_count"] == "3", "l7_rpc %r" % r)
        print("  mongo: %d requests, exact per command on both sides: %s" % (len(reqs), sorted(want)))


test_l7api_mongo.timeout = 60


def test_l7api_rocketmq():
    """RocketMQ (no Debian package: a wire-exact name server/broker and client of ours,
    scripts/rocketmq_wire.py), one connection per header encoding (binary, fastjson's JSON, the Go
    client's JSON): a known mix of sends, pulls, route queries, heartbeats (each followed by the broker's
    own request, which the client answers), oneway offset updates and unsupported codes, counted
    exactly per request code and topic on both sides, with their errors (TOPIC_NOT_EXIST 17,
    REQUEST_CODE_NOT_SUPPORTED 3; PULL_NOT_FOUND is no error); sends answered 100 ms late while later
    ones are answered at once (out of order, paired by opaque) carry their 100 ms; one span per request."""
    args = ["-P", "l7_rpc_metrics,l7_rpc_trace", "--trace-sample", "1000"]
    with l7.l7_run("rocketmq", wire("rocketmq"), "rocketmq", "rocketmq", args,
                   client_of=WireClient) as (server, client, probe, port):
        time.sleep(0.5)

        def reqs(name, topic, n, oneway=False):
            return [[name, topic, oneway]] * n
        lines = [
            {"enc": "binary", "reqs": reqs("HEART_BEAT", "", 2) + reqs("SEND_MESSAGE_V2", "tb", 10) +
             reqs("SEND_MESSAGE_V2", "missing", 3) + reqs("PULL_MESSAGE", "tb", 4) +
             reqs("UPDATE_CONSUMER_OFFSET", "tb", 2, True) + reqs("QUERY_MESSAGE", "tb", 2)},
            {"enc": "json", "pipeline": True, "reqs": reqs("SEND_MESSAGE", "slowj", 3) + reqs("SEND_MESSAGE", "tj", 6) +
             reqs("GET_ROUTEINFO_BY_TOPIC", "tj", 2) + reqs("GET_ROUTEINFO_BY_TOPIC", "missing", 2)},
            {"enc": "json-go", "reqs": reqs("SEND_MESSAGE_V2", "tg", 5) + reqs("SEND_MESSAGE_V2", "slowg", 2) +
             reqs("HEART_BEAT", "", 1)},
        ]
        want_codes = [[0] * 12 + [17] * 3 + [0, 19, 19, 19] + [None] * 2 + [3] * 2, [0] * 11 + [17] * 2, [0] * 8]
        for line, codes in zip(lines, want_codes):
            got = client.ask(json.dumps(line))["codes"]
            check(got == codes, "the server answered %r, expected %r" % (got, codes))
        want = {"HEART_BEAT": (3, 0), "SEND_MESSAGE_V2 tb": (10, 0), "SEND_MESSAGE_V2 missing": (3, 3),
                "PULL_MESSAGE tb": (4, 0), "QUERY_MESSAGE tb": (2, 2), "SEND_MESSAGE slowj": (3, 0),
                "SEND_MESSAGE tj": (6, 0), "GET_ROUTEINFO_BY_TOPIC tj": (2, 0),
                "GET_ROUTEINFO_BY_TOPIC missing": (2, 2), "SEND_MESSAGE_V2 tg": (5, 0), "SEND_MESSAGE_V2 slowg": (2, 0)}
        want = {api: {"n": n, "err": e, "cerr": 0} for api, (n, e) in want.items()}
        total, errs = sum(w["n"] for w in want.values()), sum(w["err"] for w in want.values())
        for tgid, role in ((server.proc.pid, "server"), (client.pid, "client")):
            wait_api_total(probe, tgid, port, role, total, "%s-side rocketmq api rows" % role)
            time.sleep(1.2)  # one more report: nothing more may come
            rows = api_rows(probe, tgid, port, role)
            check_api_rows(rows, want, role)
            for api, n in (("SEND_MESSAGE slowj", 3), ("SEND_MESSAGE_V2 slowg", 2)):
                s = l7.hist_sum(rows[api]["latency"])
                check(n * 100e6 <= s < n * 600e6, "%s side %r: %d ns for %d answered 100 ms late" % (role, api, s, n))
            fast = l7.hist_sum(rows["SEND_MESSAGE tj"]["latency"]) / 6
            check(fast < 50e6, "%s side: the sends answered at once took %d ns on average (paired in order?)" % (
                role, fast))
            r = probe.latest("l7_rpc", tgid=tgid, l7_role=role)
            check(r["protocol"] == "rocketmq" and r["req_count"] == str(total) and r["err_count"] == str(errs),
                  "%s side l7_rpc %r" % (role, r))
            spans = spans_of(probe, tgid)
            check(len(spans) == total and all(s["protocol"] == "rocketmq" for s in spans),
                  "%s side: %d spans, expected %d" % (role, len(spans), total))
            err_apis = sorted(s["api"] for s in spans if s["error"] == "1")
            want_err = sorted(a for a, w in want.items() for _ in range(w["err"]))
            check(err_apis == want_err, "%s side error spans %r, expected %r" % (role, err_apis, want_err))
        print("  rocketmq: %d requests (%d errors) over binary, fastjson and Go JSON headers, exact per api on both "
              "sides: %s" % (total, errs, sorted(want)))


test_l7api_rocketmq.timeout = 60


def test_l7api_traceparent():
    """HTTP requests carrying a W3C traceparent: their spans (both sides) take its trace id and its
    parent id; requests without one get a trace of their own."""
    args = ["-P", "l7_rpc_metrics,l7_rpc_trace", "--trace-sample", "1000"]
    with l7.l7_run("api-tp", l7.plain(l7.Nginx), "http", "http", args, client_of=ApiClient) as (nginx, client, probe,
                                                                                               port):
        time.sleep(0.5)
        ctx = [("%032x" % random.getrandbits(128), "%016x" % random.getrandbits(64)) for _ in range(3)]
        reqs = [["GET", "/small.html", {"traceparent": "00-%s-%s-01" % c}] for c in ctx]
        reqs += [["GET", "/small.html"], ["GET", "/missing"]]
        client.send(reqs)
        for tgid in (nginx.worker, client.pid):
            wait_for(lambda: len(spans_of(probe, tgid)) >= len(reqs), 15, "spans of %d" % tgid)
        time.sleep(1.2)
        for tgid in (nginx.worker, client.pid):
            spans = spans_of(probe, tgid)
            check(len(spans) == len(reqs), "%d spans of %d, expected %d" % (len(spans), tgid, len(reqs)))
            got = sorted((s["trace_id"], s["parent_span_id"]) for s in spans if s["parent_span_id"])
            check(got == sorted(ctx), "spans of %d joined %r, expected %r" % (tgid, got, ctx))
            own = [s for s in spans if not s["parent_span_id"]]
            check(len(own) == 2 and all(s["trace_id"] not in dict(ctx) for s in own), "own traces %r" % own)
        print("  3 requests with traceparent joined their traces on both sides, 2 without started their own")


test_l7api_traceparent.timeout = 60


def test_l7api_scope_from_the_start():
    """Processes outside --pid that are busy while the probe attaches its programs leave no row: the
    scope is written before the hooks (until then every process was in scope)."""
    tmp = tempfile.mkdtemp(prefix="gg-l7api-scope-")
    port, fport = free_port(), free_port()
    os.makedirs(os.path.join(tmp, "a"))
    os.makedirs(os.path.join(tmp, "b"))
    nginx, foreign = l7.Nginx(os.path.join(tmp, "a"), port), l7.Nginx(os.path.join(tmp, "b"), fport)
    # keeps sending over a keep-alive connection, a new one when nginx closes it (keepalive_requests)
    code = ("import socket, sys\n"
            "while True:\n"
            "    try:\n"
            "        s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
            "        while True:\n"
            "            s.sendall(b'GET /small.html HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
            "            d = b''\n"
            "            while b'</html>' not in d:\n"
            "                r = s.recv(65536)\n"
            "                if not r:\n"
            "                    raise OSError\n"
            "                d += r\n"
            "    except OSError:\n"
            "        pass\n")
    hammer = subprocess.Popen([sys.executable, "-c", code, str(fport)])
    client = probe = None
    try:
        client = ApiClient("http", port)
        time.sleep(0.3)
        probe = l7.Probe(["-t", "1", "-p", "http", "--pid", ",".join(str(p) for p in nginx.pids + [client.pid])])
        probe.wait_started()
        client.send([["GET", "/small.html"]] * 5)
        wait_api_total(probe, nginx.worker, port, "server", 5, "in-scope rows")
        time.sleep(1.2)
        check(hammer.poll() is None, "the foreign client stopped")
        outside = {str(p) for p in foreign.pids + [hammer.pid]}
        leaked = [r for r in probe.recs if r.get("tgid") in outside]
        check(not leaked, "%d rows of processes outside the scope, e.g. %r" % (len(leaked), leaked[:1]))
        print("  a foreign nginx under load while the probe started: no row of it")
    finally:
        teardown(hammer, client, probe, nginx, foreign, tmp)


test_l7api_scope_from_the_start.timeout = 60
