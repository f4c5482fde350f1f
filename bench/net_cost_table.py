#!/usr/bin/env python3
"""net_cost_table.py - issue 17's cost table in one run, side by side on this machine: what tcpprobe +
endpoint + ioprobe (default sub-probes) cost nginx + wrk with keep-alive and with a connection per
request (paired A/B windows, median and 95 % interval), the agent's own CPU and wake-ups when idle,
and the BPF run time per event of every program (per workload, BPF statistics on).

usage: bench/net_cost_table.py [--base BUILD] [--rounds N] [PAIRS [SECONDS [BUILD]]]
       (defaults 20 pairs of 3 s, $GG_BUILD or build)
  --base BUILD  the BPF time per run is measured in N (default 5) alternating rounds of BUILD and this
                base build (e.g. the previous commit built elsewhere): medians side by side; without it,
                one run of BUILD
Every BPF statistics run also has empty programs on the same tracepoints (empty_*): what any program
run costs on this machine with statistics on; the summary gives each per-event program's time with and
without that floor.
Run alone (flock /tmp/gg-bench.lock ...): about (PAIRS x 2 x (SECONDS + 4) + 60) seconds, plus
N x 2 x 30 s with --base.
"""
import argparse
import glob
import statistics
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import net_overhead as no  # noqa: E402

GOAL_KEEPALIVE = 1.0  # % throughput loss
GOAL_CLOSE = 3.0
GOAL_NS = 100  # per run of a per-packet / per-request / per-state-change program


def idle_cost(build, tmp, probes, seconds=10.0):
    """CPU ms/s and sleeps/s (voluntary context switches: real wake-ups, not preemptions) per process of
    the agent with nothing to observe but the host's background."""
    agent = no.start_agent(os.path.join(tmp, "idle"), build, dict(no.DEFAULTS), probes)

    def sample(pids):
        out = {}
        for pid in pids:
            try:
                with open("/proc/%d/comm" % pid) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            ns = sleeps = 0
            for t in glob.glob("/proc/%d/task/*" % pid):
                try:
                    with open(t + "/schedstat") as f:
                        ns += int(f.read().split()[0])
                    with open(t + "/status") as f:
                        sleeps += int([x for x in f if x.startswith("voluntary_ctxt_switches")][0].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
            out[comm] = (ns, sleeps)
        return out

    try:
        time.sleep(3)
        pids = no.process_tree(agent.pid)
        a = sample(pids)
        time.sleep(seconds)
        b = sample(pids)
    finally:
        no.stop(agent)
    return {k: ((b[k][0] - a[k][0]) / 1e6 / seconds, (b[k][1] - a[k][1]) / seconds) for k in b if k in a}


def main():
    # stopped by a signal (a background job ignores SIGINT): the finally blocks stop nginx and the agent
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bpf-seconds", type=int, default=8)
    ap.add_argument("pairs", nargs="?", type=int, default=20)
    ap.add_argument("seconds", nargs="?", type=int, default=3)
    ap.add_argument("build", nargs="?", default=os.environ.get("GG_BUILD", "build"))
    a = ap.parse_args()
    pairs, seconds = a.pairs, a.seconds
    build = os.path.join(no.ROOT, a.build)
    bpf = {}
    probes = list(no.PROGS)
    params = dict(no.DEFAULTS)
    tmp = tempfile.mkdtemp(prefix="gg-bench-table-")
    port = no.free_port()
    nginx = no.start_nginx(tmp, port)
    rows = []
    try:
        worker = no.nginx_worker(nginx)
        print("== agent idle (10 s): CPU and wake-ups per process", flush=True)
        for comm, (ms, wakes) in sorted(idle_cost(build, tmp, probes).items()):
            print("  %-12s %6.3f ms/s (%.3f %% of one CPU), %5.1f wake-ups/s" % (comm, ms, ms / 10, wakes))
        for close, goal in ((False, GOAL_KEEPALIVE), (True, GOAL_CLOSE)):
            name = "connection per request" if close else "keep-alive"
            no.Window(port, 2, worker, close=close)  # warm-up
            print("== %s: %d pairs of %d s" % (name, pairs, seconds), flush=True)
            off, on, loss, cost = no.ab_series(port, worker, build, tmp, params, probes, pairs, seconds, 2.0, close,
                                               False, label="c" if close else "k")
            no.summarize(off, on, loss, cost, seconds)
            med, lo, hi = no.median_ci(loss)
            cmed, clo, chi = no.median_ci(cost)
            rows.append((name + " throughput loss", med, lo, hi, goal))
            rows.append((name + " CPU per request", cmed, clo, chi, goal))
        print("== TCP round trip on loopback, two threads on one CPU (best of 10 rounds), agent off / on",
              flush=True)
        pp = no.pingpong_series(build, tmp, params, probes, max(6, pairs // 2))
        print(no.fmt_ci("paired round trip increase", pp))
        med, lo, hi = no.median_ci(pp)
        rows.append(("round trip (hooks on the path)", med, lo, hi, GOAL_KEEPALIVE))
        if a.base:
            print("== BPF run time per event (BPF statistics on, %d s per workload, %d rounds alternating with %s)"
                  % (a.bpf_seconds, a.rounds, a.base), flush=True)
            got = no.bpf_ab(port, worker, [a.base, a.build], tmp, params, probes, a.bpf_seconds, a.rounds)
            for (wl, name), per in got.items():
                if a.build in per:
                    bpf.setdefault(wl, {})[name] = statistics.median(per[a.build])
        else:
            print("== BPF run time per event (BPF statistics on, %d s per workload)" % a.bpf_seconds, flush=True)
            for wl, rows in no.bpf_costs(port, worker, build, tmp, params, probes, a.bpf_seconds).items():
                for name, (runs, _, ns) in rows.items():
                    if runs >= 5000:
                        bpf.setdefault(wl, {})[name] = ns
    finally:
        no.stop(nginx)
        shutil.rmtree(tmp, ignore_errors=True)
    print("== summary (median [95 % interval] of the paired differences; goal)")
    for name, med, lo, hi, goal in rows:
        if med is None:
            continue
        verdict = "met" if hi is not None and 100 * hi <= goal else \
            "not met" if lo is not None and 100 * lo > goal else "not resolved by this run"
        print("  %-45s %+6.2f %% [%s]  goal <= %.0f %%: %s" % (
            name, 100 * med, "%+.2f .. %+.2f" % (100 * lo, 100 * hi) if lo is not None else "-", goal, verdict))
    floor = {"connection per request": "empty_sk_state", "4 KiB direct IO": "empty_io_start"}
    for wl, want in (("connection per request", ("tcp_state", "ep_state", "tcp_drop4", "ep_drop4")),
                     ("4 KiB direct IO", ("io_start", "io_issue", "io_complete"))):
        rows = bpf.get(wl, {})
        fl = rows.get(floor[wl])
        for name in want:
            if name not in rows:
                continue
            ns = rows[name]
            print("  %-45s %6.0f ns per run%s  goal <= %d ns: %s" % (
                "%s (%s)" % (name, wl), ns,
                " (%.0f above an empty program's %.0f)" % (ns - fl, fl) if fl else "", GOAL_NS,
                "met" if ns <= GOAL_NS else "not met"))


if __name__ == "__main__":
    main()
