#!/usr/bin/env python3
"""kdiag_drop_cost.py - what kdiag's drop tracing costs at ~100k drops/s, and that no drop goes uncounted.

A network-namespace pair; nftables drops UDP to one port in the receiver's namespace; build/bench/udp_blast
sends to it from the other one.
  paced:  RATE packets/s for SECONDS, kdiag -P drop (default cap: 100 events/s) with --bpf-stats and
          --flow-max 65536 (other tests' drops on a shared machine must not push our flow into the
          overflow row: that is flow_max doing its job, not a loss). Reports
          the probe process's CPU (user+sys), the BPF program's run time per drop and in total (CPU of
          the softirqs that drop, charged to whoever runs them), and checks that kdiag's count for the
          flow equals nft's counter and that events sent + capped + lost == drops.
  max:    udp_blast as fast as it can, probe off and on alternated PAIRS times: packets/s (the
          workload's slowdown), median and spread. Both modes measure after a 2 s warm-up (the first
          event loads /proc/kallsyms into the symbolizer: a few hundred ms of CPU once).
Run as root from the checkout: python3 bench/kdiag_drop_cost.py [--rate 100000] [--seconds 5] [--pairs 5]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from harness import (BUILD, PROBES, ROOT, NetnsPair, StandaloneProbe, free_port, meta_fields,  # noqa: E402
                     proc_cpu_seconds, wait_for)

BLAST = os.path.join(BUILD, "bench", "udp_blast")
FIELDS = meta_fields(os.path.join(ROOT, "schema", "kdiag.meta"))
FIELDS["event_v2"] = ["entity_name", "entity_id", "metric", "severity", "body", "body_zh", "labels", "event_type"]


def nft_packets(pair, table):
    out = pair.run(pair.b, ["nft", "list", "table", "inet", table])
    m = re.search(r"counter packets (\d+)", out)
    return int(m.group(1))


def blast(pair, port, rate, seconds):
    out = pair.run(pair.a, [BLAST, pair.ADDR_B, str(port), str(rate), str(seconds)], timeout=seconds + 30)
    m = re.search(r"sent (\d+) in ([\d.]+) s", out)
    return int(m.group(1)), float(m.group(2))


def bpf_stats(log):
    """(runs, ns per run) of kd_kfree_skb summed over the --bpf-stats lines of log."""
    runs = ns = 0
    for m in re.finditer(r"kd_kfree_skb=(\d+)/(\d+)ns", log):
        r, n = int(m.group(1)), int(m.group(2))
        runs += r
        ns += r * n
    return runs, (ns / runs if runs else 0)


def paced(pair, table, port, rate, seconds):
    probe = StandaloneProbe(os.path.join(PROBES, "kdiag"), ["-t", "1", "-P", "drop", "--bpf-stats", "--flow-max", "65536"], FIELDS)
    probe.wait_started()
    start = nft_packets(pair, table)  # kdiag counts from here
    blast(pair, port, 1000, 0.2)  # warm-up: the first event loads /proc/kallsyms (once)
    time.sleep(2)
    before = nft_packets(pair, table)
    cpu0 = proc_cpu_seconds(probe.proc.pid)
    sent, took = blast(pair, port, rate, seconds)
    cpu1 = proc_cpu_seconds(probe.proc.pid)
    end = nft_packets(pair, table)
    drops = end - start

    def counted():
        """kdiag's drops to our port: the latest row of each flow (the warm-up is another source port)."""
        last = {}
        for r in probe.rows("kdiag_drop_flow"):
            if r["dst_port"] == str(port):
                last[r["src_port"]] = int(r["drops"])
        total = sum(last.values())
        return total if total >= drops else None
    try:
        row = wait_for(counted, 15, "kdiag's count")
    except Exception:
        row = None
    time.sleep(1.2)
    stat = probe.latest("kdiag_event_stat", kind="drop")
    # every drop on the host (not only ours) passes the cap: their sum by reason is what it saw
    seen = sum(int(probe.latest("kdiag_drop_reason", reason=r)["drops"])
               for r in set(x["reason"] for x in probe.rows("kdiag_drop_reason")))
    _, log = probe.stop()
    runs, ns_per_run = bpf_stats(log)
    return {
        "sent": sent, "took": took, "drops": drops, "rate": (end - before) / took,
        "kdiag": row,
        "ev_sent": int(stat["sent"]), "capped": int(stat["capped"]), "lost": int(stat["lost"]),
        "missed": int(stat["missed"]), "seen": seen,
        "probe_cpu_pct": 100 * (cpu1 - cpu0) / took,
        "bpf_ns": ns_per_run, "bpf_cpu_pct": 100 * runs * ns_per_run / 1e9 / took if runs else 0,
    }


def max_rate(pair, port, seconds, on):
    """udp_blast's packets/s; with on, kdiag runs with its records thrown away (stdout to /dev/null), so
    that what is measured is the probe, not a Python reader of its output competing for the 2 CPUs."""
    probe = None
    if on:
        probe = subprocess.Popen([os.path.join(PROBES, "kdiag"), "-t", "1", "-P", "drop", "--flow-max", "65536"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in probe.stderr:
            if "started:" in line:
                break
    # steady state, not start-up: the first event loads /proc/kallsyms into the symbolizer (a few hundred
    # ms of CPU once); give the probe a drop and time to settle before measuring (and the same pause off)
    blast(pair, port, 1000, 0.2)
    time.sleep(2)
    try:
        sent, took = blast(pair, port, 0, seconds)
    finally:
        if probe:
            probe.terminate()
            probe.communicate(timeout=10)
    return sent / took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=100000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--pairs", type=int, default=5)
    a = ap.parse_args()
    port = free_port()
    with NetnsPair() as pair:
        table = "ggkb%d" % os.getpid()
        r = subprocess.run(pair.cmd(pair.b, ["nft", "-f", "-"]), capture_output=True, text=True,
                           input="table inet %s {\n chain in {\n type filter hook input priority 0;\n"
                                 " udp dport %d counter drop\n }\n}\n" % (table, port))
        if r.returncode:
            sys.exit("nft: " + r.stderr)
        print("paced at %d packets/s for %.0f s, kdiag -P drop (cap 100 events/s), %d runs:" % (a.rate, a.seconds,
                                                                                               a.pairs))
        res = []
        for i in range(a.pairs):
            x = paced(pair, table, port, a.rate, a.seconds)
            res.append(x)
            # (the report of the drop table and of the event counts are one report apart at most)
            ok = x["kdiag"] == x["drops"] and abs(x["ev_sent"] + x["capped"] + x["lost"] - x["seen"]) <= 100
            print("  run %d: %.0f drops/s; nft %d, kdiag %s; all drops seen %d, events sent %d capped %d lost %d missed %d; probe "
                  "process %.2f %% CPU; BPF %.0f ns/drop = %.2f %% CPU  %s"
                  % (i + 1, x["rate"], x["drops"], x["kdiag"], x["seen"], x["ev_sent"], x["capped"], x["lost"], x["missed"],
                     x["probe_cpu_pct"], x["bpf_ns"], x["bpf_cpu_pct"], "OK" if ok else "MISMATCH"))
        for k, what in (("rate", "drops/s"), ("probe_cpu_pct", "probe process % CPU"), ("bpf_ns", "BPF ns/drop"),
                        ("bpf_cpu_pct", "BPF % CPU")):
            v = [x[k] for x in res]
            print("  median %s: %.2f (min %.2f, max %.2f)" % (what, statistics.median(v), min(v), max(v)))

        print("as fast as udp_blast goes, %.0f s each, probe off/on alternated, %d pairs:" % (a.seconds, a.pairs))
        off, on = [], []
        for i in range(a.pairs):
            for flag in ((False, True) if i % 2 == 0 else (True, False)):
                (on if flag else off).append(max_rate(pair, port, a.seconds, flag))
            print("  pair %d: off %.0f/s, on %.0f/s" % (i + 1, off[-1], on[-1]))
        ratios = [b / x for x, b in zip(off, on)]
        print("  median off %.0f/s, on %.0f/s; on/off per pair: median %.3f (min %.3f, max %.3f)"
              % (statistics.median(off), statistics.median(on), statistics.median(ratios), min(ratios),
                 max(ratios)))


if __name__ == "__main__":
    main()
