"""test_rules.py - the Prometheus alerting rules pass `promtool check rules` and their unit tests
(`promtool test rules`, every alert firing on synthetic series), and every metric a rule or a Grafana
dashboard names is one the agent exports (.meta families and README's self-metrics), with labels it has,
rate() only on counters and histogram_quantile() only on histogram buckets."""
import glob
import json
import os
import re
import subprocess

from harness import ROOT, TestFailure, check, stop_proc

PROM_DIR = os.path.join(ROOT, "scripts/deploy/prometheus")
RULES = os.path.join(PROM_DIR, "gala-gopher.rules.yml")
RULE_TESTS = os.path.join(PROM_DIR, "gala-gopher.rules.test.yml")
GRAFANA_DIR = os.path.join(ROOT, "scripts/deploy/grafana")
TARGET_LABELS = {"instance", "job"}  # added by Prometheus to every scraped series
# Series Prometheus makes itself for every target (the only non-gala_gopher name allowed).
SYNTHETIC = {"up": {"type": "gauge", "labels": set()}}


def meta_families():
    """{family name: {"type", "labels"}} of every metric field of schema/*.meta, as /metrics names them:
    gala_gopher_<entity_name>_<field>, labels = the table's keys and labels + machine_id, hostname.
    Tables of one entity that share a field share the family (their label sets are merged)."""
    fams = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "schema", "*.meta"))):
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r'table_name:\s*"(\w+)",\s*entity_name:\s*"(\w+)",\s*fields:\s*\((.*?)\n\s*\)\s*\n',
                             text, re.S):
            _, entity, body = m.groups()
            fields = re.findall(r'type:\s*"(\w+)",\s*name:\s*"(\w+)"', body)
            check(fields, "%s: no fields parsed for entity %s" % (path, entity))
            labels = {n for t, n in fields if t in ("key", "label")} | {"machine_id", "hostname"}
            for t, n in fields:
                if t in ("key", "label"):
                    continue
                fam = fams.setdefault("gala_gopher_%s_%s" % (entity, n), {"type": t, "labels": set()})
                fam["labels"] |= labels
    check(len(fams) > 100, "only %d families parsed from the .meta files" % len(fams))
    return fams


def self_metric_families():
    """{family: {"type", "labels"}} from README's "Self-metrics" table (`_x_total` continues the name
    before it: `gala_gopher_kafka_messages_produced_total`, `_delivered_total`)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    sec = re.search(r"^### Self-metrics\n(.*?)^### ", text, re.S | re.M)
    check(sec, "README has no Self-metrics section")
    fams = {}
    for line in sec.group(1).splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        labels = {w.strip() for w in re.sub(r"\([^)]*\)", "", cells[1]).split(",") if w.strip()}
        prev = None
        for name in re.findall(r"`([^`]+)`", cells[0]):
            extra = set(re.findall(r"\{(\w+)\}", name))
            name = re.sub(r"\{.*\}", "", name)
            if name.startswith("_"):
                check(prev, "README self-metric %s continues nothing" % name)
                parts = prev.split("_")
                name = "_".join(parts[:len(parts) - (len(name.split("_")) - 1)]) + name
            prev = name
            fams[name] = {"type": "counter" if name.endswith("_total") else "gauge", "labels": labels | extra}
        # families named in the meaning column (`gala_gopher_bpf_stats_enabled`): no labels
        for name in re.findall(r"`(gala_gopher_\w+)`", cells[2]):
            fams.setdefault(name, {"type": "counter" if name.endswith("_total") else "gauge", "labels": set()})
    check(len(fams) > 30, "only %d self-metrics parsed from README" % len(fams))
    return fams


def sample_names(fams):
    """{sample name: [families producing it]}: a histogram or summary family makes _bucket, _sum, _count."""
    out = {}
    for name, fam in fams.items():
        parts = [name]
        if fam["type"] == "histogram":
            parts = [name + "_bucket", name + "_sum", name + "_count"]
        elif fam["type"] == "summary":
            parts = [name, name + "_sum", name + "_count"]
        for n in parts:
            out.setdefault(n, []).append(name)
    return out


def test_no_two_families_make_one_series():
    fams = dict(meta_families())
    fams.update(self_metric_families())
    clashes = {n: f for n, f in sample_names(fams).items() if len(f) > 1}
    # the schema loader refuses these too (a counter named like a histogram's _sum, ...)
    check(not clashes, "sample names produced by two families (a series twice on /metrics): %s" % clashes)


def exported():
    """{sample name: (family type, labels)}: every name a query may use, histogram parts included."""
    fams = dict(meta_families())
    for name, fam in self_metric_families().items():
        check(name not in fams, "self-metric %s shadows a .meta family" % name)
        fams[name] = fam
    fams.update(SYNTHETIC)
    names = {}
    for name, fam in fams.items():
        labels = fam["labels"] | TARGET_LABELS
        if fam["type"] == "histogram":
            names[name + "_bucket"] = ("histogram_bucket", labels | {"le"})
            names[name + "_sum"] = ("counter", labels)
            names[name + "_count"] = ("counter", labels)
        elif fam["type"] == "summary":
            names[name] = ("summary", labels | {"quantile"})
            names[name + "_sum"] = ("counter", labels)
            names[name + "_count"] = ("counter", labels)
        else:
            names[name] = (fam["type"], labels)
    return names


KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}


def selectors(expr):
    """[(metric name, {label: matcher text}, function applied to it or None)] of a PromQL expression."""
    out = []
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    pos = 0
    tok = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
    while True:
        m = tok.search(e, pos)
        if not m:
            break
        name, pos = m.group(0), m.end()
        if name in KEYWORDS or (m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] in ".$")):
            continue
        rest = e[pos:].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        labels = {}
        if rest.startswith("{"):
            end = e.index("}", pos)
            for lm in re.finditer(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', e[e.index("{", pos):end]):
                labels[lm.group(1)] = lm.group(2) + lm.group(3)
            pos = end + 1
        # the innermost function whose parenthesis encloses this selector
        depth, i, func = 0, m.start() - 1, None
        while i >= 0:
            c = e[i]
            if c == ")":
                depth += 1
            elif c == "(":
                if depth == 0:
                    fm = re.search(r"([A-Za-z_]+)\s*$", e[:i])
                    func = fm.group(1) if fm else None
                    break
                depth -= 1
            i -= 1
        out.append((name, labels, func))
    return out


def check_expr(expr, where, names):
    used = selectors(expr)
    check(used, "%s: no metric in %r" % (where, expr))
    for name, labels, func in used:
        check(name in names, "%s: %s is not a metric gala-gopher exports (%r)" % (where, name, expr))
        typ, have = names[name]
        unknown = set(labels) - have
        check(not unknown, "%s: %s has no label %s (%r)" % (where, name, sorted(unknown), expr))
        if func in ("rate", "irate", "increase"):
            check(typ in ("counter", "histogram_bucket"), "%s: %s() of %s, a %s (%r)" % (where, func, name, typ, expr))
        if func in ("deriv", "delta"):
            check(typ == "gauge", "%s: %s() of %s, a %s" % (where, func, name, typ))
        if typ == "histogram_bucket":
            check("histogram_quantile" in expr, "%s: %s outside histogram_quantile (%r)" % (where, name, expr))
    return {n for n, _, _ in used}


def test_selector_parser():
    """The expression reader the name checks rely on finds names, labels and the function around them."""
    got = selectors('sum by (instance, probe) (rate(gala_gopher_a_total{probe="x", reason=~"a|b"}[5m])) > 0 '
                    'and on (instance) gala_gopher_b / 1e9 or histogram_quantile(0.9, sum by (le) '
                    '(rate(gala_gopher_c_bucket[5m])))')
    check(got == [("gala_gopher_a_total", {"probe": "=x", "reason": "=~a|b"}, "rate"), ("gala_gopher_b", {}, None),
                  ("gala_gopher_c_bucket", {}, "rate")], "selectors: %r" % got)
    names = {"gala_gopher_g": ("gauge", {"instance"}), "gala_gopher_c": ("counter", {"instance"})}
    for bad in ("rate(gala_gopher_g[5m])", "gala_gopher_nope", 'gala_gopher_c{nolabel="1"}'):
        try:
            check_expr(bad, "t", names)
        except TestFailure:
            continue
        raise TestFailure("check_expr accepted %r" % bad)


def test_readme_self_metrics_are_the_supervisor_s():
    src = ""
    for path in glob.glob(os.path.join(ROOT, "supervisor", "**", "*.c"), recursive=True):
        with open(path) as f:
            src += f.read()
    check("gala_gopher_probe_up" in src, "no supervisor sources found")
    missing = [n for n in self_metric_families() if '"%s"' % n not in src]
    check(not missing, "README self-metrics not named in the supervisor's sources: %s" % missing)


def test_promtool_check_and_unit_test_rules():
    r = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and "SUCCESS" in r.stdout, "promtool check rules: %s%s" % (r.stdout, r.stderr))
    r = subprocess.run(["promtool", "test", "rules", os.path.basename(RULE_TESTS)], cwd=PROM_DIR, capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0 and "SUCCESS" in r.stdout, "promtool test rules: %s%s" % (r.stdout, r.stderr[-4000:]))

    import yaml
    with open(RULES) as f:
        groups = yaml.safe_load(f)["groups"]
    with open(RULE_TESTS) as f:
        tests = yaml.safe_load(f)["tests"]
    fired = {t["alertname"] for case in tests for t in case.get("alert_rule_test", []) if t.get("exp_alerts")}
    names = exported()
    alerts = []
    for g in groups:
        for rule in g["rules"]:
            alert = rule["alert"]
            alerts.append(alert)
            check(rule.get("labels", {}).get("severity") in ("warning", "critical"), "%s: severity" % alert)
            check(rule.get("annotations", {}).get("summary"), "%s: no summary" % alert)
            check_expr(rule["expr"], "rule " + alert, names)
    check(len(alerts) == len(set(alerts)), "duplicate alert names")
    untested = sorted(set(alerts) - fired)
    check(not untested, "alerts no promtool test makes fire: %s" % untested)
    for want in ("GalaGopherProbeRestarting", "GalaGopherRecordsRejected", "GalaGopherRecordsLost",
                 "GalaGopherKafkaQueueGrowing", "GalaGopherScrapeSlow"):
        check(want in alerts, "no %s alert" % want)


def test_dashboards_use_exported_metrics():
    names = exported()
    paths = sorted(glob.glob(os.path.join(GRAFANA_DIR, "*.json")))
    check({os.path.basename(p) for p in paths} >= {"gala-gopher-%s.json" % d for d in
                                                  ("agent", "host", "tcp", "io", "proc", "l7", "profiling")},
          "dashboards: %s" % [os.path.basename(p) for p in paths])
    uids, used = set(), set()
    for path in paths:
        with open(path) as f:
            board = json.load(f)
        where = os.path.basename(path)
        check(board["uid"] not in uids and len(board["uid"]) <= 40, "%s: uid %r" % (where, board["uid"]))
        uids.add(board["uid"])
        variables = {v["name"]: v for v in board["templating"]["list"]}
        check(variables.get("datasource", {}).get("query") == "prometheus",
              "%s: no Prometheus data source variable" % where)
        for v in variables.values():
            if v["type"] == "query":
                q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
                m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", q)
                check(m, "%s: variable %s: %r" % (where, v["name"], q))
                used |= check_expr(m.group(1), "%s variable %s" % (where, v["name"]), names)
                metric = selectors(m.group(1))[0][0]
                check(m.group(2) in names[metric][1], "%s: %s has no label %s" % (where, metric, m.group(2)))
        ids = [p["id"] for p in board["panels"]]
        check(len(ids) == len(set(ids)), "%s: duplicate panel ids" % where)
        cells = {}
        for p in board["panels"]:
            g = p["gridPos"]
            check(g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24,
                  "%s: panel %r outside the grid" % (where, p["title"]))
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    check((x, y) not in cells, "%s: panels %r and %r overlap" % (where, cells.get((x, y)), p["title"]))
                    cells[(x, y)] = p["title"]
        targets = 0
        for p in board["panels"]:
            for t in p.get("targets", []):
                targets += 1
                expr = t["expr"]
                for var in re.findall(r"\$(\w+)", expr):
                    check(var in variables, "%s: panel %r uses undefined $%s" % (where, p["title"], var))
                used |= check_expr(re.sub(r"\$\w+", "x", expr), "%s panel %r" % (where, p["title"]), names)
                check(t["datasource"]["uid"] == "${datasource}", "%s: panel %r data source" % (where, p["title"]))
        check(targets >= 5, "%s: only %d queries" % (where, targets))
    # The dashboards together show every probe's data and the agent's health.
    for prefix in ("gala_gopher_cpu_", "gala_gopher_mem_", "gala_gopher_disk_", "gala_gopher_nic_",
                   "gala_gopher_file_system_", "gala_gopher_tcp_link_", "gala_gopher_endpoint_", "gala_gopher_block_",
                   "gala_gopher_proc_", "gala_gopher_stackprobe_", "gala_gopher_probe_", "gala_gopher_kafka_",
                   "gala_gopher_imdb_", "gala_gopher_l7_", "gala_gopher_l7_stats_"):
        check(any(n.startswith(prefix) for n in used), "no dashboard shows %s*" % prefix)


def test_dashboards_and_rules_on_a_live_agent():
    """Every dashboard query, run by a real Prometheus scraping the real agent with every probe on,
    returns data whenever the families it reads are on /metrics; every rule evaluates without error."""
    import shutil
    import tempfile
    import urllib.parse

    from harness import Supervisor, TestFailure, free_port, http_get, probe_entry, rest_section, wait_for

    names = exported()

    port, pport = free_port(), free_port()
    state = tempfile.mkdtemp(prefix="gg-rules-state-")
    s = Supervisor(metric_out="web_server", extra="web_server = { port = %d; };\n%s" % (port, rest_section(state)))
    params = {"stackprobe": "-t 2 -P oncpu --svg-dir %s/svg --flame-dir %s/flame" % (s.dir, s.dir),
              "endpoint": "-t 1 -P tcp_socket,udp_socket", "l7probe": "-t 1 -p http"}
    # the Supervisor wrote its configuration with no probes: add them
    with open(s.conf) as f:
        conf = f.read()
    entries = ",\n".join(probe_entry(p, params.get(p, "-t 1")) for p in
                         ("system_infos", "tcpprobe", "endpoint", "ioprobe", "taskprobe", "stackprobe", "l7probe"))
    with open(s.conf, "w") as f:
        f.write(conf.replace("probes = (\n", "probes = (\n" + entries, 1))
    pdir = tempfile.mkdtemp(prefix="gg-prom-rules-")
    prom = None
    # an HTTP server of our own for l7probe to see: requests that succeed (200) and fail (404)
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=pdir, **kw)

        def log_message(self, *a):
            pass
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    with open(os.path.join(pdir, "ok.txt"), "w") as f:
        f.write("ok\n" * 100)
    try:
        s.start()
        shutil.copy(RULES, pdir)
        with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    "rule_files: ['%s']\nscrape_configs:\n  - job_name: gala-gopher\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % (os.path.basename(RULES), port))
        prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(pdir, "prometheus.yml"),
                                 "--storage.tsdb.path=" + os.path.join(pdir, "data"),
                                 "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(pdir, "log"), "w"))

        def api(path, **q):
            st, body = http_get("http://127.0.0.1:%d/api/v1/%s?%s" % (pport, path, urllib.parse.urlencode(q)),
                                timeout=20)
            return json.loads(body) if st == 200 else None

        def retry_until(pred, seconds):
            try:
                return wait_for(pred, seconds, "a query result", interval=1)
            except TestFailure:
                return None

        def query(q, strict=True):
            r = api("query", query=q)
            check(r is not None or not strict, "Prometheus refused %r" % q)
            return r["data"]["result"] if r else None

        # Traffic and IO so that tcp links, sockets and disks have rates. l7probe sees every process of
        # the machine (other tests' HTTP too): the l7 checks select the test's server by its port.
        ours = 'protocol="http", server_port="%d"' % web.server_address[1]
        def busy():
            with open(os.path.join(s.dir, "io.bin"), "wb") as f:
                f.write(os.urandom(1 << 20))
                f.flush()
                os.fsync(f.fileno())
            http_get("http://127.0.0.1:%d/metrics" % port)
            for i in range(20):
                http_get("http://127.0.0.1:%d/%s" % (web.server_address[1], "ok.txt" if i % 4 else "missing"))
            return query("sum(rate(gala_gopher_tcp_link_rx_bytes[5m])) > 0", strict=False) and \
                query("sum(rate(gala_gopher_block_count_latency_req[5m])) > 0", strict=False) and \
                query('sum(rate(gala_gopher_l7_err_count{%s}[5m])) > 0' % ours, strict=False) and \
                query('sum(rate(gala_gopher_l7_latency_bucket{%s}[5m])) > 0' % ours, strict=False)
        wait_for(busy, 90, "Prometheus to have rates of tcp, block and l7 (http, with errors) series", interval=1)

        present = {r["metric"]["__name__"] for r in query('{job="gala-gopher"}')}
        # what the agent really exports is what this test derives from the .meta files and README
        undocumented = sorted(n for n in present if n.startswith("gala_gopher_") and n not in names)
        check(not undocumented, "exported but neither in a .meta file nor in README's self-metrics: %s" % undocumented)
        empty, total = [], 0
        for path in sorted(glob.glob(os.path.join(GRAFANA_DIR, "*.json"))):
            with open(path) as f:
                board = json.load(f)
            for p in board["panels"]:
                for t in p.get("targets", []):
                    total += 1
                    expr = re.sub(r"\$\w+", ".*", t["expr"])
                    if query(expr):
                        continue
                    absent = [n for n, _, _ in selectors(expr) if n not in present]
                    # a series that appeared a scrape ago has one sample, and rate() needs two: give it a
                    # few scrapes before calling the panel empty
                    if not absent and retry_until(lambda: query(expr), 8):
                        continue
                    check(absent, "%s panel %r: %r returns nothing although its series exist"
                          % (os.path.basename(path), p["title"], expr))
                    empty.append("%s/%s" % (board["uid"], p["title"]))
        print("dashboard queries: %d, %d with no data here (series absent: sub-probe off, Kafka off, no loss): %s"
              % (total, len(empty), sorted(set(empty))))
        # l7probe is on with real HTTP traffic: every query of the l7 dashboard has data
        check(not [e for e in empty if e.startswith("gala-gopher-l7/")], "l7 dashboard queries without data: %s"
              % [e for e in empty if e.startswith("gala-gopher-l7/")])
        ratio = query('sum(rate(gala_gopher_l7_err_count{%s}[5m])) / sum(rate(gala_gopher_l7_req_count{%s}[5m]))'
                      % (ours, ours))
        check(ratio and 0.1 <= float(ratio[0]["value"][1]) <= 0.4,
              "http error ratio of the test's server (1 request in 4 is a 404): %r" % ratio)
        check(total - len(empty) >= total * 0.6,
              "only %d of %d dashboard queries have data" % (total - len(empty), total))

        def rules_evaluated():
            r = api("rules")
            rules = [x for g in (r or {}).get("data", {}).get("groups", []) for x in g["rules"]]
            return rules if rules and all(x.get("lastEvaluation", "").startswith("2") and
                                          not x["lastEvaluation"].startswith("0001") for x in rules) else None
        rules = wait_for(rules_evaluated, 30, "every rule evaluated", interval=1)
        bad = [(x["name"], x.get("lastError")) for x in rules if x.get("health") != "ok"]
        check(not bad, "rules failing on the live agent: %s" % bad)
        # the agent is healthy here: none of its own alerts may fire
        firing = [a["labels"]["alertname"] for a in api("alerts")["data"]["alerts"]
                  if a["labels"]["alertname"].startswith("GalaGopher") and a["state"] == "firing"]
        check(not firing, "agent alerts firing on a healthy agent: %s" % firing)
    finally:
        if prom:
            stop_proc(prom)
        web.shutdown()
        web.server_close()
        shutil.rmtree(pdir, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        s.cleanup()


test_dashboards_and_rules_on_a_live_agent.timeout = 240


def test_readme_metric_table_current():
    """README's metric-name table is scripts/metric_table.py's output for schema/*.meta, lists every
    family this test derives from the .meta files, and --check notices a stale table."""
    import sys
    import tempfile
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import metric_table
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    table = metric_table.render(os.path.join(ROOT, "schema"))
    check(metric_table.splice(readme, table) == readme, "README.md's metric-name table is stale: run `make readme`")
    listed = set(re.findall(r"^\| `(gala_gopher_\w+)` \|", table, re.M))
    check(listed == set(meta_families()), "table and .meta families differ: %s"
          % sorted(listed ^ set(meta_families())))
    with tempfile.TemporaryDirectory() as d:
        stale = os.path.join(d, "README.md")
        with open(stale, "w") as f:
            f.write(readme.replace("| `gala_gopher_block_issued_read_bytes` |", "| `gala_gopher_block_x` |", 1))
        script = os.path.join(ROOT, "scripts", "metric_table.py")
        r = subprocess.run([sys.executable, script, "--check", stale], capture_output=True, text=True)
        check(r.returncode == 1 and "stale" in r.stdout, "a stale table is noticed: %r" % r.stdout)
        r = subprocess.run([sys.executable, script, stale], capture_output=True, text=True)
        with open(stale) as f:
            check(r.returncode == 0 and f.read() == readme, "rewriting restores it")
