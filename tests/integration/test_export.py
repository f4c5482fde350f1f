"""test_export.py - the export channels with the real supervisor: the Prometheus endpoint (checked by
promtool and scraped by a real Prometheus server), imdb limits and aging under a unique-key flood, Kafka
through librdkafka's mock broker (consumed with kcat, outage included), events, metadata, log files, and
every channel switched off."""
import json
import os
import random
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.parse

from harness import (ROOT, TEST_BINS, KafkaMock, Supervisor, bpf_prog_ids, check, extend_entry, free_port, http_get,
                     json_lines, parse_prom, probe_entry, prom_value, stop_proc, wait_for)

BAD = os.path.join(TEST_BINS, "bad_probe")
BAD_META = os.path.join(ROOT, "tests", "schema", "test_bad.meta")
EXT_META = os.path.join(ROOT, "tests", "schema", "test_ext.meta")
HIST_META = os.path.join(ROOT, "tests", "schema", "test_hist.meta")
EMIT = os.path.join(ROOT, "tests", "integration", "scripts", "emit_lines.py")
PYTHON = shutil.which("python3") or "/usr/bin/python3"


def machine_id():
    with open("/etc/machine-id") as f:
        return f.read().strip()


def write_atomic(path, text):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def emitter(s, name, lines, period=0.5, count=0):
    """An extend probe printing `lines` every `period` s; returns (entry, path of the file it reads)."""
    path = os.path.join(s.dir, name + ".lines")
    write_atomic(path, "".join(l + "\n" for l in lines))
    param = "%s -p %s%s %s" % (EMIT, period, " -c %d" % count if count else "", path)
    return extend_entry(name, PYTHON, param), path


def new_sup(extend_fn=None, **kw):
    """Supervisor whose extend probes may need its directory (emit files): extend_fn(s) -> entries."""
    s = Supervisor(**kw)
    if extend_fn:
        entries = extend_fn(s)
        with open(s.conf) as f:
            conf = f.read()
        sep = "," if kw.get("extend") else ""
        conf = conf.replace("extend_probes = (\n", "extend_probes = (\n" + ",\n".join(entries) + sep + "\n", 1)
        with open(s.conf, "w") as f:
            f.write(conf)
    return s


def scrape(port, path="/metrics"):
    status, body = http_get("http://127.0.0.1:%d%s" % (port, path))
    check(status == 200, "GET %s: status %d" % (path, status))
    return body


def export_status(s):
    try:
        return s.status()["export"]
    except (json.JSONDecodeError, FileNotFoundError, KeyError):
        return None


def wait_export(s, pred, timeout, what):
    def ok():
        e = export_status(s)
        return e if e and pred(e) else None
    return wait_for(ok, timeout, what)


def imdb_table(e, name):
    for t in e.get("imdb", {}).get("tables", []):
        if t["table"] == name:
            return t
    return None


# ---- Prometheus endpoint --------------------------------------------------------------------------------

def test_exposition_promtool_and_self_metrics():
    port = free_port()
    hist = '|test_hist|h1|a"b\\c|3 10 1 100 4 1000 6 12345.5 9|2 0.5 1.25 0.99 7 30 20|42|'
    s = new_sup(lambda s: [emitter(s, "hist", [hist])[0]],
                extend=[extend_entry("bad", BAD, "-m malformed")], metric_out="web_server",
                extra_meta=[BAD_META, HIST_META], extra="web_server = { port = %d; };" % port)
    s.start()
    try:
        def both():
            _, b = http_get("http://127.0.0.1:%d/metrics" % port)
            return "gala_gopher_test_bad_g{" in b and "gala_gopher_test_hist_lat_bucket{" in b
        wait_for(both, 10, "test_bad and test_hist series")
        st0 = s.probe("bad")
        text1 = scrape(port)
        text2 = scrape(port)
        m1, types = parse_prom(text1)
        m2, _ = parse_prom(text2)
        # read-only scrapes: the same series twice (values of counters may move, the set does not)
        probe_series = lambda m: {k for k in m if k[0].startswith("gala_gopher_test_")}
        check(probe_series(m1) == probe_series(m2), "second scrape has other series: %r" %
              (probe_series(m1) ^ probe_series(m2)))
        check(set(m1) == set(m2), "self-metric series differ between scrapes")
        check("gala_gopher_test_bad_g{" in scrape(port, "/"), "gala-gopher's path / answers too")
        mid, host = machine_id(), socket.gethostname()
        check(prom_value(m1, "gala_gopher_test_bad_g", k="k1", l="lbl", machine_id=mid, hostname=host) == 1.5,
              "test_bad g")
        check(prom_value(m1, "gala_gopher_test_bad_c", k="k1") == 7, "test_bad c")
        check(types["gala_gopher_test_bad_c"] == "counter" and types["gala_gopher_test_bad_g"] == "gauge", "types")
        check("# HELP gala_gopher_test_bad_g a gauge (count)\n" in text1, "HELP from the meta description")
        # one series per key although the record arrives every second
        check(len([k for k in m1 if k[0] == "gala_gopher_test_bad_g"]) == 1, "one series for key k1")
        lbl = {"k": "h1", "l": 'a"b\\c'}
        check(types["gala_gopher_test_hist_lat"] == "histogram" and types["gala_gopher_test_hist_q"] == "summary",
              "histogram/summary types")
        check('l="a\\"b\\\\c"' in text1, "label value escaped")
        for le, v in (("10", 1), ("100", 4), ("1000", 6), ("+Inf", 9)):
            check(prom_value(m1, "gala_gopher_test_hist_lat_bucket", le=le, **lbl) == v, "bucket le=%s" % le)
        check(prom_value(m1, "gala_gopher_test_hist_lat_sum", **lbl) == 12345.5, "hist sum")
        check(prom_value(m1, "gala_gopher_test_hist_lat_count", **lbl) == 9, "hist count")
        check(prom_value(m1, "gala_gopher_test_hist_q", quantile="0.99", **lbl) == 7, "summary quantile")
        check(prom_value(m1, "gala_gopher_test_hist_q_count", **lbl) == 20, "summary count")
        check(prom_value(m1, "gala_gopher_test_hist_g", **lbl) == 42, "hist table gauge")

        # self-metrics agree with status.json (read before and after the scrape)
        check(prom_value(m1, "gala_gopher_probe_up", probe="bad") == 1, "probe up")
        # status.json is rewritten every second: it may lag behind the scrape, never lead it
        for reason in ("not_numeric", "field_count", "unknown_table", "negative_counter", "empty_key", "malformed"):
            v = prom_value(m1, "gala_gopher_probe_records_rejected_total", probe="bad", reason=reason)
            check(v >= 1 and v >= st0["rejected"][reason], "rejected %s: %r < %d" % (reason, v, st0["rejected"][reason]))
            s.wait_probe("bad", lambda p: p["rejected"][reason] >= v, 3, "status catching up with %s" % reason)
        v = prom_value(m1, "gala_gopher_probe_records_received_total", probe="bad")
        check(v >= st0["records"], "records received")
        s.wait_probe("bad", lambda p: p["records"] >= v, 3, "status catching up with records")
        check(prom_value(m1, "gala_gopher_imdb_rows", table="test_bad") == 1, "imdb rows")
        check(prom_value(m1, "gala_gopher_imdb_series", table="test_hist") == 3, "series per table")
        check(prom_value(m1, "gala_gopher_sup_resident_memory_bytes") > 1 << 20, "RSS")
        check(prom_value(m1, "gala_gopher_sup_scrape_duration_seconds") > 0, "previous scrape timed")
        check(prom_value(m1, "gala_gopher_sup_cpu_seconds_total", mode="user") >= 0, "cpu")
        check(prom_value(m1, "gala_gopher_ipc_lost_batches_total", probe="bad") == 0, "no IPC loss")

        # promtool: no parse error; lint remarks only about names that come from the .meta files
        r = subprocess.run(["promtool", "check", "metrics"], input=text1, capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        check(r.returncode in (0, 3) and "error while linting" not in out and "parsing error" not in out,
              "promtool (%d): %s" % (r.returncode, out[-2000:]))
        ours = [l for l in out.splitlines() if l and not l.startswith("gala_gopher_test_")]
        check(not ours, "promtool lint on the agent's own metrics: %s" % ours[:10])
        check('counter metrics should have "_total" suffix' in out, "promtool saw the counter type")
        check(http_get("http://127.0.0.1:%d/nothing" % port)[0] == 404, "404 elsewhere")
    finally:
        s.cleanup()


def test_real_prometheus_scrapes_injected_value():
    port, pport = free_port(), free_port()
    value = round(random.uniform(1000, 9999), 3)
    s = new_sup(lambda s: [emitter(s, "ext", ["|test_ext|pk|lbl|%s|7|" % value])[0]], metric_out="web_server",
                extra_meta=[EXT_META], extra="web_server = { port = %d; };" % port)
    s.start()
    pdir = tempfile.mkdtemp(prefix="gg-prom-")
    prom = None
    try:
        with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                    "  - job_name: gala\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % port)
        prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(pdir, "prometheus.yml"),
                                 "--storage.tsdb.path=" + os.path.join(pdir, "data"),
                                 "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(pdir, "log"), "w"))

        def query(q):
            st, body = http_get("http://127.0.0.1:%d/api/v1/query?query=%s" % (pport, urllib.parse.quote(q)))
            if st != 200:
                return None
            res = json.loads(body)["data"]["result"]
            return res or None

        res = wait_for(lambda: query('gala_gopher_test_ext_g{k="pk"}'), 25, "Prometheus to have our sample",
                       interval=0.5)
        check(len(res) == 1, "one series: %r" % res)
        check(float(res[0]["value"][1]) == value, "Prometheus has %r, we sent %r" % (res[0]["value"][1], value))
        check(res[0]["metric"]["machine_id"] == machine_id(), "machine_id label")
        up = query('up{job="gala"}')
        check(up and up[0]["value"][1] == "1", "target up: %r" % up)
        c = query('gala_gopher_test_ext_c{k="pk"}')
        check(c and float(c[0]["value"][1]) == 7, "counter: %r" % c)
        p = query('gala_gopher_probe_up{probe="ext"}')
        check(p and p[0]["value"][1] == "1", "self-metric through Prometheus: %r" % p)
    finally:
        if prom:
            stop_proc(prom)
        shutil.rmtree(pdir, ignore_errors=True)
        s.cleanup()


test_real_prometheus_scrapes_injected_value.timeout = 60


def test_web_server_tls_client_cert():
    port = free_port()
    d = tempfile.mkdtemp(prefix="gg-tls-")

    def ossl(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=d)

    try:
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=test-ca")
        for name, cn in (("server", "127.0.0.1"), ("client", "scraper")):
            ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj",
                 "/CN=" + cn)
            with open(os.path.join(d, name + ".ext"), "w") as f:
                f.write("subjectAltName=IP:127.0.0.1\n" if name == "server" else "extendedKeyUsage=clientAuth\n")
            ossl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", name + ".pem", "-days", "2", "-extfile", name + ".ext")
        s = Supervisor(extend=[extend_entry("bad", BAD, "-m valid")], metric_out="web_server", extra_meta=[BAD_META],
                       extra='web_server = { port = %d; ssl_auth = "on"; private_key = "%s/server.key"; '
                             'cert_file = "%s/server.pem"; ca_file = "%s/ca.pem"; };' % (port, d, d, d)).start()
        try:
            ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
            ctx.load_cert_chain(os.path.join(d, "client.pem"), os.path.join(d, "client.key"))
            url = "https://127.0.0.1:%d/metrics" % port
            st, body = wait_for(lambda: (lambda r: r if "gala_gopher_test_bad_g{" in r[1] else None)(
                http_get(url, context=ctx)), 10, "metrics over TLS")
            check(st == 200, "TLS with a client certificate: %d" % st)
            bare = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
            st, _ = http_get(url, context=bare)
            check(st != 200, "TLS without a client certificate must not get the metrics (got %d)" % st)
            if st == 403:  # refused after the handshake: counted
                m, _ = parse_prom(http_get(url, context=ctx)[1])
                check(prom_value(m, "gala_gopher_web_server_refused_total", reason="tls_client_cert") >= 1,
                      "refusal counted")
            check(http_get("http://127.0.0.1:%d/metrics" % port)[0] != 200, "plain HTTP refused")
        finally:
            s.cleanup()
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- imdb -------------------------------------------------------------------------------------------------

def imdb_flood(port, records, keys, imdb):
    """The supervisor with /metrics on port, imdb settings imdb, and test_bad's flood (records records over
    keys keys), started."""
    return Supervisor(extend=[extend_entry("bad", BAD, "-m flood -n %d -k %d" % (records, keys))],
                      metric_out="web_server", extra_meta=[BAD_META],
                      extra="web_server = { port = %d; }; imdb = { %s };" % (port, imdb)).start()


def test_imdb_limits_under_unique_key_flood():
    port = free_port()
    s = imdb_flood(port, 200000, 100000, "max_records_num = 1000;")
    try:
        s.wait_probe("bad", lambda p: p["accepted"] == 200000, 60, "200000 records accepted")
        e = wait_export(s, lambda e: e["imdb"]["stored"] + e["imdb"]["dropped"] == 200000, 5, "imdb accounting")
        t = imdb_table(e, "test_bad")
        # keys f0..f99999 twice: the first 1000 keys are stored (and updated on the second pass), the rest refused
        check(t["rows"] == 1000, "rows %d" % t["rows"])
        check(t["dropped"]["max_records"] == 198000, "dropped %r" % t["dropped"])
        check(e["imdb"]["stored"] == 2000, "stored %d" % e["imdb"]["stored"])
        m, _ = parse_prom(scrape(port))
        check(len([k for k in m if k[0] == "gala_gopher_test_bad_g"]) == 1000, "1000 series")
        check(prom_value(m, "gala_gopher_imdb_dropped_records_total", table="test_bad", reason="max_records") == 198000,
              "drops in the self-metrics")
        check(prom_value(m, "gala_gopher_test_bad_g", k="f999") == 100999, "f999 holds its latest value")
        check(prom_value(m, "gala_gopher_sup_resident_memory_bytes") < 300 << 20, "RSS bounded")
    finally:
        s.cleanup()

    # the byte bound: many rows allowed, 1 MiB of memory
    s = imdb_flood(port, 100000, 100000, "max_records_num = 10000000; max_memory_mb = 1;")
    try:
        s.wait_probe("bad", lambda p: p["accepted"] == 100000, 60, "100000 records accepted")
        e = wait_export(s, lambda e: e["imdb"]["stored"] + e["imdb"]["dropped"] == 100000, 5, "imdb accounting")
        t = imdb_table(e, "test_bad")
        check(e["imdb"]["bytes"] <= 1 << 20, "imdb bytes %d over 1 MiB" % e["imdb"]["bytes"])
        check(t["rows"] > 1000 and t["rows"] + t["dropped"]["memory"] == 100000,
              "rows %d + dropped(memory) %d" % (t["rows"], t["dropped"]["memory"]))
    finally:
        s.cleanup()


test_imdb_limits_under_unique_key_flood.timeout = 120


def test_record_timeout_ages_rows():
    port = free_port()
    s = imdb_flood(port, 50, 50, "record_timeout = 2;")
    try:
        s.wait_probe("bad", lambda p: p["accepted"] == 50, 10, "50 records")
        m, _ = parse_prom(scrape(port))
        t0 = time.monotonic()
        n = len([k for k in m if k[0] == "gala_gopher_test_bad_g"])
        check(n == 50, "50 series before the timeout, got %d" % n)
        wait_for(lambda: "gala_gopher_test_bad_g{" not in scrape(port), 5, "series to age out")
        check(time.monotonic() - t0 > 0.5, "aged out too early")
        m, _ = parse_prom(scrape(port))
        check(prom_value(m, "gala_gopher_imdb_expired_records_total", table="test_bad") == 50, "expired counted")
        check(prom_value(m, "gala_gopher_imdb_rows", table="test_bad") == 0, "no rows left")
    finally:
        s.cleanup()


# ---- Kafka ------------------------------------------------------------------------------------------------

def test_kafka_metrics_events_metadata_json():
    km = KafkaMock()
    try:
        t0 = int(time.time() * 1000)
        extra = ('event = { out_channel = "kafka"; timeout = 600; }; meta = { out_channel = "kafka"; };'
                 ' kafka = { kafka_broker = "%s"; };' % km.bootstrap)
        s = new_sup(lambda s: [emitter(s, "evt", ["|event|test_bad|f1|g|WARN|13|gauge too high|"], 0.2, 3)[0]],
                    extend=[extend_entry("bad", BAD, "-m flood -n 500 -k 50")], metric_out="kafka",
                    extra_meta=[BAD_META], extra=extra)
        s.start()
        try:
            e = wait_export(s, lambda e: e["metric"]["kafka_delivered"] == 500 and e["event"]["kafka_delivered"] == 1,
                            20, "500 records and 1 event delivered")
            check(e["metric"]["kafka_failed"] == 0 and e["metric"]["kafka_dropped_queue_full"] == 0, "no loss")
            check(e["event"]["records"] == 3 and e["events"]["deduplicated"] == 2, "events: %r" % e["events"])
            msgs = km.consume("gala_gopher")
            t1 = int(time.time() * 1000)
            check(len(msgs) == 500, "kcat got %d metric messages" % len(msgs))
            mid, host = machine_id(), socket.gethostname()
            for i, raw in enumerate(msgs):
                r = json.loads(raw)
                check(set(r) == {"timestamp", "machine_id", "hostname", "entity_name", "table_name", "k", "l", "g",
                                 "c"}, "fields of %s" % raw)
                check(isinstance(r["timestamp"], int) and t0 - 1000 <= r["timestamp"] <= t1, "timestamp %r" % r)
                check(r["machine_id"] == mid and r["hostname"] == host, "machine_id/hostname %r" % r)
                check(r["entity_name"] == "test_bad" and r["table_name"] == "test_bad", "names %r" % r)
                check(r["k"] == "f%d" % (i % 50) and r["l"] == "lbl", "key/label of record %d: %r" % (i, r))
                check(type(r["g"]) in (int, float) and r["g"] == i, "g is the number %d: %r" % (i, r["g"]))
                check(type(r["c"]) is int and r["c"] == i, "c is the number %d: %r" % (i, r["c"]))
            meta = [json.loads(x) for x in km.consume("gala_gopher_metadata")]
            mine = [x for x in meta if x["meta_name"] == "test_bad"]
            check(len(mine) == 1, "one metadata message for test_bad: %r" % mine)
            check(mine[0]["keys"] == ["machine_id", "k"] and mine[0]["labels"] == ["hostname", "l"] and
                  mine[0]["metrics"] == ["g", "c"] and mine[0]["entity_name"] == "test_bad" and
                  mine[0]["version"] == "1.0.0", "metadata %r" % mine[0])
            check(not [x for x in meta if x["meta_name"].startswith("event")], "no metadata for the event tables")
            ev = [json.loads(x) for x in km.consume("gala_gopher_event")]
            check(len(ev) == 1, "one event (de-duplicated): %r" % ev)
            ev = ev[0]
            check(ev["Resource"]["metric"] == "gala_gopher_test_bad_g" and ev["SeverityNumber"] == 13 and
                  ev["SeverityText"] == "WARN" and ev["Body"] == "gauge too high", "event %r" % ev)
            check(ev["Attributes"]["entity_id"] == "%s_test_bad_f1" % mid, "entity_id %r" % ev["Attributes"])
            check(ev["event_id"] == "%d_%s_test_bad_f1" % (ev["Timestamp"], mid), "event_id %r" % ev["event_id"])
        finally:
            s.cleanup()
    finally:
        km.stop()


test_kafka_metrics_events_metadata_json.timeout = 60


def test_kafka_outage_queued_then_delivered():
    km = KafkaMock(topics=("gala_gopher",))
    try:
        # 1: broker down, 300 records within the queue bound, broker back: all 300 delivered
        # 2: broker down, 300 records with a bound of 100: 100 delivered after the outage, 200 counted as dropped
        total = 0
        for bound, delivered in ((1000, 300), (100, 100)):
            km.down()
            extra = ('event = { out_channel = ""; }; meta = { out_channel = ""; };'
                     ' kafka = { kafka_broker = "%s"; queue_buffering_max_messages = %d;'
                     ' properties = ("reconnect.backoff.ms=100", "reconnect.backoff.max.ms=500"); };'
                     % (km.bootstrap, bound))
            s = Supervisor(extend=[extend_entry("bad", BAD, "-m flood -n 300 -k 300")], metric_out="kafka",
                           extra_meta=[BAD_META], extra=extra).start()
            try:
                s.wait_probe("bad", lambda p: p["accepted"] == 300, 10, "300 records")
                e = wait_export(s, lambda e: e["metric"]["records"] == 300, 5, "300 records exported")
                time.sleep(1.5)
                e = export_status(s)
                m = e["metric"]
                check(m["kafka_produced"] == delivered and m["kafka_dropped_queue_full"] == 300 - delivered,
                      "bound %d: produced %d dropped %d" % (bound, m["kafka_produced"], m["kafka_dropped_queue_full"]))
                check(m["kafka_delivered"] == 0, "nothing delivered while the broker is down")
                check(e["kafka_queue"] >= delivered, "queue holds them: %d" % e["kafka_queue"])
                km.up()
                e = wait_export(s, lambda e: e["metric"]["kafka_delivered"] == delivered, 20,
                                "%d delivered after the outage" % delivered)
                check(e["metric"]["kafka_failed"] == 0, "no delivery errors")
                total += delivered
                msgs = [json.loads(x) for x in km.consume("gala_gopher")]
                check(len(msgs) == total, "kcat got %d messages in all, want %d" % (len(msgs), total))
                check([r["g"] for r in msgs[-delivered:]] == list(range(delivered)),
                      "the first %d records, in order" % delivered)
            finally:
                s.cleanup()
    finally:
        km.stop()


test_kafka_outage_queued_then_delivered.timeout = 90


# ---- events, metadata, logs, channels off -----------------------------------------------------------------

def test_events_dedup_timeout_language():
    lines = ["|event|tcp_link|1_2_/x|tcp_oom|WARN|13|v1 body|",
             "|event_v2|proc|42|fork_count|ERROR|fork storm|进程频繁创建|comm=nginx&cmd=%2Fusr%2Fbin%2Fx|app|",
             "|event|tcp_link|1_2_/x|tcp_oom|BOGUS|3|invalid|"]
    s = new_sup(lambda s: [emitter(s, "evt", lines, 0.3)[0]],
                extra='event = { out_channel = "logs"; timeout = 2; desc_language = "zh_CN"; };')
    s.start()
    path = os.path.join(s.log_dir, "event", "events.log")
    try:
        wait_for(lambda: len(json_lines(path)) >= 2, 10, "first two events")
        time.sleep(1.0)
        evs = json_lines(path)
        check(len(evs) == 2, "within the 2 s timeout each event once: %d" % len(evs))
        wait_export(s, lambda e: e["events"]["deduplicated"] >= 4 and e["events"]["invalid"] >= 2, 5,
                    "repeats and invalid events counted")
        mid = machine_id()
        v1 = [x for x in evs if x["Resource"]["metric"] == "gala_gopher_tcp_link_tcp_oom"][0]
        check(v1["Attributes"]["entity_id"] == "%s_tcp_link_1_2_:x" % mid, "entity_id %r" % v1["Attributes"])
        check(v1["SeverityText"] == "WARN" and v1["SeverityNumber"] == 13 and v1["Body"] == "v1 body", "v1 %r" % v1)
        check(v1["Resource"]["labels"]["machine_id"] == mid, "machine_id label")
        v2 = [x for x in evs if x["Resource"]["metric"] == "gala_gopher_proc_fork_count"][0]
        check(v2["Body"] == "进程频繁创建", "zh_CN body: %r" % v2["Body"])
        check(v2["SeverityNumber"] == 17 and v2["Attributes"]["event_type"] == "app", "v2 %r" % v2)
        check(v2["Resource"]["labels"]["comm"] == "nginx" and v2["Resource"]["labels"]["cmd"] == "/usr/bin/x",
              "labels %r" % v2["Resource"]["labels"])
        # after the timeout: reported again, at least 2 s after the first
        wait_for(lambda: len(json_lines(path)) >= 4, 5, "events again after the timeout")
        evs = json_lines(path)
        first = {x["Resource"]["metric"]: x["Timestamp"] for x in evs[:2]}
        for x in evs[2:4]:
            gap = x["Timestamp"] - first[x["Resource"]["metric"]]
            check(2000 <= gap < 4000, "re-reported %d ms after the first" % gap)
    finally:
        s.cleanup()


def test_metadata_at_start_and_periodically():
    s = Supervisor(extra_meta=[BAD_META, HIST_META], extra='meta = { out_channel = "logs"; report_interval = 2; };')
    s.start()
    path = os.path.join(s.log_dir, "meta", "metadata.log")
    try:
        tables = sorted(f[:-5] for f in os.listdir(s.meta_dir))
        check(tables, "meta files")
        wait_for(lambda: len([m for m in json_lines(path) if m["meta_name"] == "test_hist"]) >= 2, 6,
                 "a second round of metadata")
        msgs = json_lines(path)
        hist = [m for m in msgs if m["meta_name"] == "test_hist"]
        check(1500 <= hist[1]["timestamp"] - hist[0]["timestamp"] <= 3500, "interval %d ms" %
              (hist[1]["timestamp"] - hist[0]["timestamp"]))
        check(hist[0] == dict(hist[0], entity_name="test_hist", version="1.0.0", keys=["machine_id", "k"],
                              labels=["hostname", "l"], metrics=["lat", "q", "g"]), "test_hist metadata %r" % hist[0])
        first_round = [m["meta_name"] for m in msgs if m["timestamp"] == hist[0]["timestamp"]]
        check("test_bad" in first_round and not [n for n in first_round if n.startswith("event")],
              "every table at start, no event tables: %r" % first_round)
    finally:
        s.cleanup()


def test_channels_off_and_log_rotation():
    port = free_port()
    s = Supervisor(extend=[extend_entry("bad", BAD, "-m valid")], metric_out="", extra_meta=[BAD_META],
                   extra='event = { out_channel = ""; }; meta = { out_channel = ""; }; web_server = { port = %d; };'
                   % port).start()
    try:
        s.wait_probe("bad", lambda p: p["accepted"] >= 2, 10, "records accepted")
        e = export_status(s)
        check([e[x]["channel"] for x in ("metric", "event", "meta")] == ["off"] * 3, "channels %r" % e)
        for sub, name in (("metrics", "metrics.log"), ("event", "events.log"), ("meta", "metadata.log")):
            check(not os.path.exists(os.path.join(s.log_dir, sub, name)), "%s written with the channel off" % name)
        check(http_get("http://127.0.0.1:%d/metrics" % port)[0] == 0, "no web_server with metric off")
    finally:
        s.cleanup()

    s = Supervisor(extend=[extend_entry("bad", BAD, "-m flood -n 30000 -k 30000")], metric_out="logs",
                   extra_meta=[BAD_META], logs_extra="metric_total_size = 1;").start()
    try:
        s.wait_probe("bad", lambda p: p["accepted"] == 30000, 30, "30000 records")
        wait_export(s, lambda e: e["metric"]["log_lines"] == 30000, 5, "30000 lines written")
        time.sleep(1.5)  # the 1 s flush
        cur = os.path.join(s.log_dir, "metrics", "metrics.log")
        sizes = [os.path.getsize(cur), os.path.getsize(cur + ".1")]
        check(all(0 < x <= 512 * 1024 for x in sizes), "each file within half of 1 MiB: %r" % sizes)
        check(not os.path.exists(cur + ".2"), "one rotated file kept")
        recs = json_lines(cur + ".1") + json_lines(cur)
        check(recs and all(r["table_name"] == "test_bad" for r in recs), "whole JSON lines")
        gs = [r["g"] for r in recs]
        check(gs == list(range(30000 - len(gs), 30000)), "the newest records, in order, none missing")
    finally:
        s.cleanup()


# ---- BPF run-time self-metrics --------------------------------------------------------------------------

def bpftool_progs_of(pid):
    """(programs, run_cnt, run_time_ns) of the process's BPF programs; the counters as bpftool reads them
    (BPF_OBJ_GET_INFO_BY_ID), Debian's bpftool has no pid column."""
    ids = bpf_prog_ids(pid)
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, timeout=20)
    check(r.returncode == 0, "bpftool prog show: %s" % r.stderr[-300:])
    progs = [p for p in json.loads(r.stdout or "[]") if p.get("id") in ids]
    return (len(progs), sum(p.get("run_cnt", 0) for p in progs), sum(p.get("run_time_ns", 0) for p in progs))


def test_bpf_runtime_self_metrics_match_bpftool():
    """gala_gopher_probe_bpf_* come from the probe's BPF program fds; with kernel.bpf_stats_enabled=1 they
    must lie between two bpftool readings taken around the scrape."""
    port = free_port()
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    with open(stats) as f:
        saved = f.read().strip()
    s = Supervisor(probes=[probe_entry("taskprobe", "-t 1 -P base_metrics")], metric_out="web_server",
                   extra="web_server = { port = %d; };" % port)
    try:
        with open(stats, "w") as f:
            f.write("1")
        s.start()
        pid = s.wait_probe("taskprobe", lambda p: p["state"] == "running" and p["pid"], 15, "taskprobe running")["pid"]
        wait_for(lambda: bpftool_progs_of(pid)[1] > 0, 10, "taskprobe's programs running")
        for _ in range(200):  # context switches for sched_switch
            time.sleep(0.001)
        before = bpftool_progs_of(pid)
        m, types = parse_prom(scrape(port))
        after = bpftool_progs_of(pid)
        n = prom_value(m, "gala_gopher_probe_bpf_programs", probe="taskprobe")
        cnt = prom_value(m, "gala_gopher_probe_bpf_run_count_total", probe="taskprobe")
        sec = prom_value(m, "gala_gopher_probe_bpf_run_time_seconds_total", probe="taskprobe")
        check(n == before[0] == after[0] and n >= 1, "programs: metric %r, bpftool %r/%r" % (n, before[0], after[0]))
        check(before[1] <= cnt <= after[1] and cnt > 0, "run count %r not within bpftool's %r..%r" %
              (cnt, before[1], after[1]))
        check(before[2] / 1e9 <= sec <= after[2] / 1e9 and sec > 0, "run time %r s not within %r..%r ns" %
              (sec, before[2], after[2]))
        check(types["gala_gopher_probe_bpf_run_count_total"] == "counter", "counter type")
        check(prom_value(m, "gala_gopher_bpf_stats_enabled") == 1, "bpf_stats_enabled gauge")
    finally:
        with open(stats, "w") as f:
            f.write(saved)
        s.cleanup()
