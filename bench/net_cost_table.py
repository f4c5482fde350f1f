#!/usr/bin/env python3
"""net_cost_table.py - issue 17's cost table in one run, side by side on this machine: what tcpprobe +
endpoint + ioprobe (default sub-probes) cost nginx + wrk with keep-alive and with a connection per
request (paired A/B windows, median and 95 % interval), the agent's own CPU and wake-ups when idle,
and the BPF run time per event of every program (per workload, BPF statistics on).

usage: bench/net_cost_table.py [PAIRS [SECONDS [BUILD]]]   (defaults 20 pairs of 3 s, $GG_BUILD or build)
Run alone (flock /tmp/gg-bench.lock ...): about (PAIRS x 2 x (SECONDS + 4) + 60) seconds.
"""
import glob
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
    args = sys.argv[1:]
    pairs = int(args[0]) if len(args) > 0 else 20
    seconds = int(args[1]) if len(args) > 1 else 3
    build = os.path.join(no.ROOT, args[2] if len(args) > 2 else os.environ.get("GG_BUILD", "build"))
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
        print("== BPF run time per event (BPF statistics on, 8 s per workload)", flush=True)
        no.bpf_costs(port, worker, build, tmp, params, probes, 8)
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
    print("  per-event programs: goal <= %d ns per run (see the bpf_stats lines above)" % GOAL_NS)


if __name__ == "__main__":
    main()
