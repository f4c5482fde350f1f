#!/usr/bin/env python3
"""l7_h2_overhead.py - what l7probe costs on HTTP/2: nginx (Debian, one worker on CPU 0, http2 in
cleartext and over TLS) serving a small file to h2load (nghttp2-client; one thread, C connections,
M concurrent streams each, CPU 1), with l7probe off and on (nginx in scope, -p http, -s 1 for TLS),
alternating off/on/off...; each on run is compared with the mean of its two neighbours and the medians
(and min, max) of those ratios are reported: throughput loss, CPU per request of nginx + h2load, and
the probe's own CPU per request.

First, accuracy under load: 100,000 requests (h2c, then TLS) with the probe on nginx's side, its
req_count against h2load's count (H2_ACCURACY=0 skips it; RUNS 0 runs only it).

Usage: bench/l7_h2_overhead.py [RUNS [SECONDS [CONNS [STREAMS]]]]   (defaults 7 6 8 10; run as root)
H2_AB=BUILD_A,BUILD_B (with H2_ACCURACY=0): off and each build's l7probe in turn, h2c only; with H2_STATS=1
also each l7 program's runs and ns per run (--bpf-stats, BPF_ENABLE_STATS while the probe runs: the
programs then pay the statistics' clock reads, so CPU and throughput of that mode are not the plain ones)."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l7_overhead import PIN_CLIENT, PIN_SERVER, Probe, compare, nginx_bench, run_load, spread, stop  # noqa: E402
from l7_overhead import compare_builds as l7_compare_builds  # noqa: E402
import harness  # noqa: E402  (on the path l7_overhead set)


def start_nginx(tmp, port, sport):
    return harness.start_nginx(tmp, port, sport, keepalive_requests=100000000, http2=True, prefix=PIN_SERVER)


class Run:
    """One h2load run: requests/s, CPU of nginx's worker + h2load per request, the probe's CPU per request."""

    def __init__(self, url, seconds, worker, conns, streams, probe=None):
        out, nginx_cpu, h2_cpu, self.probe_cpu = run_load(
            ["h2load", "-t1", "-c%d" % conns, "-m%d" % streams, "-D%d" % seconds, "--warm-up-time=1", url], worker,
            probe)
        m = re.search(r"finished in [0-9.]+s, ([0-9.]+) req/s", out)
        n = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
        if not m or not n:
            raise SystemExit("no result in h2load output:\n" + out)
        self.rps = float(m.group(1))
        # CPU over the warm-up too: per request of the whole run (h2load counts the measured part only)
        self.requests = max(int(n.group(1)) * (seconds + 1) / seconds, 1)
        self.us_per_req = (nginx_cpu + h2_cpu) * 1e6 / self.requests
        self.probe_us_per_req = self.probe_cpu * 1e6 / self.requests


def compare_builds(name, url, runs, seconds, worker, conns, streams, probe_args, tmp, builds):
    """H2_AB: l7_overhead.compare_builds with h2load; H2_STATS=1 adds each l7 program's BPF ns per run and
    the BPF ns per request (the busiest 2 s window of the probe's --bpf-stats)."""
    stats = {b: {} for b in builds}
    after = report = None
    if os.environ.get("H2_STATS") == "1":
        probe_args = list(probe_args) + ["--bpf-stats"]
        probe_args[probe_args.index("-t") + 1] = "2"

        def after(b, on, log):
            busiest = bpf_stats_busiest(log)
            for prog, (cnt, ns) in busiest.items():
                stats[b].setdefault(prog, []).append((cnt, ns))
            stats[b].setdefault("_per_request", []).append(
                sum(c * n for c, n in busiest.values()) / max(on.rps * 2, 1))

        def report(b):
            for prog in sorted(k for k in stats[b] if not k.startswith("_")):
                xs = stats[b][prog]
                print("%s %s: bpf %s: ns per run %s; runs per 2 s window %s" % (
                    name, b, prog, spread([n for _, n in xs]), spread([c for c, _ in xs])))
            print("%s %s: bpf ns per request (all l7 programs, busiest 2 s window / h2load's req/s x 2): %s" % (
                name, b, spread(stats[b]["_per_request"])))
    l7_compare_builds(name, h2load(url, seconds, worker, conns, streams), runs, probe_args, tmp, builds,
                      load="h2load", after=after, report=report)


def bpf_stats_busiest(log):
    """The probe's --bpf-stats report (2 s windows) with the most l7_sock_send runs: {program: (runs, ns per
    run)} of the programs that ran."""
    best, best_n = {}, -1
    for line in log.splitlines():
        if "bpf stats" not in line:
            continue
        cur = {m.group(1): (int(m.group(2)), int(m.group(3)))
               for m in re.finditer(r"(l7_\w+)=(\d+)/(\d+)ns", line)}
        n = cur.get("l7_sock_send", (0, 0))[0]
        if n > best_n:
            best, best_n = {k: v for k, v in cur.items() if v[0]}, n
    return best


def h2load(url, seconds, worker, conns, streams):
    """A run of compare: h2load on url for seconds (conns connections, streams at once on each)."""
    return lambda probe: Run(url, seconds, worker, conns, streams, probe)


def accuracy(name, url, worker, scope, conns, streams, n, extra, tmp):
    """A fixed number of requests under load: what the probe counted on nginx's side against h2load."""
    fields = harness.meta_fields(os.path.join(harness.ROOT, "schema", "l7probe.meta"))
    rpc, stats = fields["l7_rpc"], fields["l7_stats"]
    out_path = os.path.join(tmp, "acc-%s.out" % name.split()[0])
    with open(out_path, "w") as out:
        p = subprocess.Popen([os.path.join(os.path.dirname(Probe.__init__.__code__.co_filename), "..",
                                           os.environ.get("GG_BUILD", "build"), "probes", "l7probe"),
                              "-t", "1", "-p", "http", "--pid", scope] + extra, stdout=out,
                             stderr=subprocess.DEVNULL)
        time.sleep(2.5 if extra else 1.0)
        r = subprocess.run(PIN_CLIENT + ["h2load", "-t1", "-c%d" % conns, "-m%d" % streams, "-n%d" % n, url],
                           capture_output=True, text=True)
        time.sleep(2.5)
        stop(p)
    m = re.search(r"status codes: (\d+) 2xx", r.stdout)
    last_rpc, last_stats = None, None
    with open(out_path) as f:
        for line in f:
            parts = line.rstrip("\n").split("|")
            if len(parts) > 2 and parts[1] == "l7_rpc":
                rec = dict(zip(rpc, parts[2:-1]))
                if rec.get("tgid") == str(worker) and rec.get("l7_role") == "server":
                    last_rpc = rec
            elif len(parts) > 2 and parts[1] == "l7_stats":
                last_stats = dict(zip(stats, parts[2:-1]))
    print("%s accuracy: h2load %s requests with 2xx; probe, nginx side: req_count %s, err_count %s; l7_stats %s"
          % (name, m.group(1) if m else "?", last_rpc and last_rpc["req_count"], last_rpc and last_rpc["err_count"],
             {k: v for k, v in (last_stats or {}).items() if k in ("truncated", "unparsable", "resp_unmatched",
                                                                 "req_lost", "hpack_unresolved")}), flush=True)


def main():
    args = sys.argv[1:]
    runs = int(args[0]) if args else 7
    seconds = int(args[1]) if len(args) > 1 else 6
    conns = int(args[2]) if len(args) > 2 else 8
    streams = int(args[3]) if len(args) > 3 else 10
    with nginx_bench(start_nginx) as (tmp, port, sport, nginx, worker, scope):
        subprocess.run(PIN_CLIENT + ["h2load", "-t1", "-c8", "-m10", "-D2", "http://127.0.0.1:%d/small.html" % port],
                       capture_output=True)
        if os.environ.get("H2_ACCURACY", "1") == "1":
            accuracy("h2c", "http://127.0.0.1:%d/small.html" % port, worker, scope, conns, streams, 100000, [], tmp)
            accuracy("h2 (TLS)", "https://127.0.0.1:%d/small.html" % sport, worker, scope, conns, streams, 100000,
                     ["-s", "1"], tmp)
        if runs == 0:
            return
        if os.environ.get("H2_AB"):
            # H2_AB=BUILD_A,BUILD_B: two builds of l7probe against each other, h2c
            compare_builds("h2c", "http://127.0.0.1:%d/small.html" % port, runs, seconds, worker, conns, streams,
                           ["-t", "5", "-p", "http", "--pid", scope], tmp, os.environ["H2_AB"].split(","))
            return
        # H2_PROTO=redis: the same capture with the HTTP/2 parser off (what the parsing costs apart)
        compare("h2c", h2load("http://127.0.0.1:%d/small.html" % port, seconds, worker, conns, streams), runs,
                ["-t", "5", "-p", os.environ.get("H2_PROTO", "http"), "--pid", scope], tmp, "h2load")
        if os.environ.get("H2_TLS", "1") == "1":
            compare("h2 (TLS)", h2load("https://127.0.0.1:%d/small.html" % sport, seconds, worker, conns, streams),
                    runs, ["-t", "5", "-p", "http", "-s", "1", "--pid", scope], tmp, "h2load")


if __name__ == "__main__":
    main()
