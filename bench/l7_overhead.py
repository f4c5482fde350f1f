#!/usr/bin/env python3
"""l7_overhead.py - what l7probe costs: nginx (Debian, one worker on CPU 0) serving a small file to wrk
(one thread, 32 keep-alive connections, CPU 1) over plain HTTP and HTTPS, with l7probe off and on
(nginx in scope, -p http, -s 1 for HTTPS), runs alternating off/on/off...; each on run is compared with
the mean of its two neighbours and the medians (and spread) of those ratios are reported: throughput
loss, CPU per request of nginx + wrk, and the probe's own CPU per request. Then the cost per system
call for a process out of scope (dd bs=1, a read and a write per byte) and the BPF ns per event of
each program (the probe's --bpf-stats, BPF_ENABLE_STATS: no global sysctl changed).

Usage: bench/l7_overhead.py [RUNS [SECONDS]]   (defaults 5 and 8; run as root)
       bench/l7_overhead.py dd [PAIRS]         (only the out-of-scope dd pairs, default 11)
       bench/l7_overhead.py https|http [PAIRS [SECONDS]]   (only the HTTPS or HTTP pairs; with
                                                       L7_AB=BUILD_A,BUILD_B: off and each build's
                                                       l7probe in turn; L7_WRK_CLOSE=1: one
                                                       connection per request)
       bench/l7_overhead.py gotls [PAIRS [SECONDS]]   (wrk against the Go HTTPS server of
                                                       tests/integration/scripts/gotls, probe on it)"""
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402
from harness import free_port, proc_cpu_seconds as cpu_seconds  # noqa: E402

BUILD = os.path.join(ROOT, os.environ.get("GG_BUILD", "build"))
L7PROBE = os.path.join(BUILD, "probes", "l7probe")
PIN_SERVER = ["taskset", "-c", "0"] if os.cpu_count() >= 2 else []
PIN_CLIENT = ["taskset", "-c", "1"] if os.cpu_count() >= 2 else []
# L7_WRK_CLOSE=1: a new connection per request (wrk sends "Connection: close"), what short connections cost
WRK_EXTRA = ["-H", "Connection: close"] if os.environ.get("L7_WRK_CLOSE") == "1" else []



def start_nginx(tmp, port, sport):
    return harness.start_nginx(tmp, port, sport, keepalive_requests=1000000, prefix=PIN_SERVER)


@contextlib.contextmanager
def nginx_bench(start=start_nginx):
    """nginx (start(tmp, port, sport)) on two free ports in a temporary directory: yields (tmp, port, sport,
    nginx, its worker's pid, the scope "nginx,worker"); stopped and removed after."""
    tmp = tempfile.mkdtemp(prefix="gg-bench-l7-")
    try:
        port, sport = free_port(), free_port()
        nginx, worker = start(tmp, port, sport)
        try:
            yield tmp, port, sport, nginx, worker, "%d,%d" % (nginx.pid, worker)
        finally:
            stop(nginx)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Probe:
    def __init__(self, args, log, binary=None):
        self.log = log
        env = {k: v for k, v in os.environ.items() if not k.startswith("GALA_GOPHER_")}
        self.proc = harness.start_logged([binary or L7PROBE] + args, log, timeout=10, env=env)
        if "-s" in args:
            time.sleep(1.5)  # the libssl scan

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def stop(self):
        stop(self.proc)
        with open(self.log) as f:
            return f.read()


def run_load(argv, worker, probe=None):
    """Run a load generator (on the client CPU) to its end: (its output, the CPU seconds of the server's
    worker, of the generator, of the probe) over the run."""
    c0 = cpu_seconds(worker)
    p0 = probe.cpu() if probe else 0.0
    p = subprocess.Popen(PIN_CLIENT + argv, stdout=subprocess.PIPE, text=True)
    load_cpu = 0.0
    while p.poll() is None:
        try:
            load_cpu = cpu_seconds(p.pid)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
        time.sleep(0.05)
    out = p.stdout.read()
    probe_cpu = (probe.cpu() - p0) if probe else 0.0
    return out, cpu_seconds(worker) - c0, load_cpu, probe_cpu


class Run:
    """One wrk run: requests/s, CPU of nginx's worker + wrk per request, the probe's CPU per request."""

    def __init__(self, url, seconds, worker, probe=None):
        out, nginx_cpu, wrk_cpu, self.probe_cpu = run_load(
            ["wrk", "-t1", "-c32", "-d%ds" % seconds] + WRK_EXTRA + [url], worker, probe)
        m = re.search(r"Requests/sec:\s+([0-9.]+)", out)
        n = re.search(r"(\d+) requests in", out)
        if not m or not n:
            raise SystemExit("no result in wrk output:\n" + out)
        self.rps = float(m.group(1))
        self.requests = int(n.group(1))
        self.us_per_req = (nginx_cpu + wrk_cpu) * 1e6 / self.requests
        self.probe_us_per_req = self.probe_cpu * 1e6 / self.requests


def spread(xs):
    return "median %.2f, min %.2f, max %.2f" % (statistics.median(xs), min(xs), max(xs))


def compare(name, run, runs, probe_args, tmp, load="wrk"):
    """runs on/off pairs of run(probe) (a load run: rps, us_per_req, probe_us_per_req), each on run
    between two off runs: the medians of requests/s, the throughput loss, the CPU per request added to the
    server + load, and the probe's own CPU per request."""
    off, on = [run(None)], []
    for i in range(runs):
        probe = Probe(probe_args, os.path.join(tmp, "probe-%s-%d.log" % (name, i)))
        try:
            time.sleep(0.5)
            on.append(run(probe))
        finally:
            probe.stop()
        off.append(run(None))
        print("  %s run %d: off %.0f, on %.0f, off %.0f req/s; CPU/request %.2f, %.2f (+probe %.2f), %.2f us"
              % (name, i + 1, off[-2].rps, on[-1].rps, off[-1].rps, off[-2].us_per_req, on[-1].us_per_req,
                 on[-1].probe_us_per_req, off[-1].us_per_req), flush=True)
    loss = [100 * (1 - on[i].rps / ((off[i].rps + off[i + 1].rps) / 2)) for i in range(runs)]
    added = [on[i].us_per_req - (off[i].us_per_req + off[i + 1].us_per_req) / 2 for i in range(runs)]
    probe_us = [r.probe_us_per_req for r in on]
    print("%s: off %.0f req/s, on %.0f req/s (medians)" % (name, statistics.median(r.rps for r in off),
                                                          statistics.median(r.rps for r in on)))
    print("  throughput loss %%: %s" % spread(loss))
    print("  CPU per request added to nginx + %s, us: %s" % (load, spread(added)))
    print("  l7probe's own CPU per request, us: %s" % spread(probe_us), flush=True)


def compare_builds(name, run, runs, probe_args, tmp, builds, load="wrk", after=None, report=None):
    """L7_AB: off, then the l7probe of each build in turn, repeated: per build the medians (min, max) of
    the CPU per request added to the server + load and of the throughput loss, against the mean of the
    off runs around, and the probe's own CPU per request. after(build, run, probe log) is called after
    each run with a probe, report(build) before a build's figures are printed."""
    added = {b: [] for b in builds}
    loss = {b: [] for b in builds}
    own = {b: [] for b in builds}
    off = run(None)
    for i in range(runs):
        for b in builds:
            probe = Probe(probe_args, os.path.join(tmp, "probe-ab.log"), os.path.join(b, "probes", "l7probe"))
            try:
                time.sleep(0.5)
                on = run(probe)
            finally:
                log = probe.stop()
            if after:
                after(b, on, log)
            off2 = run(None)
            added[b].append(on.us_per_req - (off.us_per_req + off2.us_per_req) / 2)
            loss[b].append(100 * (1 - on.rps / ((off.rps + off2.rps) / 2)))
            own[b].append(on.probe_us_per_req)
            print("  %s %s run %d: off %.0f, on %.0f, off %.0f req/s; CPU/request added %.2f us, probe %.2f us"
                  % (name, b, i + 1, off.rps, on.rps, off2.rps, added[b][-1], own[b][-1]), flush=True)
            off = off2
    for b in builds:
        if report:
            report(b)
        print("%s %s: CPU per request added to nginx + %s, us: %s" % (name, b, load, spread(added[b])))
        print("%s %s: l7probe's own CPU per request, us: %s" % (name, b, spread(own[b])))
        print("%s %s: throughput loss %%: %s" % (name, b, spread(loss[b])), flush=True)


def wrk(url, seconds, worker):
    """A run of compare: wrk on url for seconds against the server's worker."""
    return lambda probe: Run(url, seconds, worker, probe)


def dd_seconds(count):
    """CPU seconds (user + system) of dd copying count bytes one at a time: CPU time, not wall time, so
    that other load on the shared machine only counts through what it does to dd's own calls."""
    p = subprocess.Popen(PIN_CLIENT + ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=%d" % count],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit("dd failed")
    return ru.ru_utime + ru.ru_stime


def foreign_syscall_tps(own_pid=None):
    """Syscall tracepoints with a BPF program of another process (they slow every system call of the
    host whatever l7probe does): their count, from bpftool's perf list."""
    try:
        out = subprocess.run(["bpftool", "-j", "perf", "list"], capture_output=True, text=True).stdout
        import json
        return sum(1 for e in json.loads(out or "[]")
                   if e.get("tracepoint", "").startswith("sys_") and e.get("pid") != own_pid)
    except (OSError, ValueError):
        return -1


def out_of_scope(runs, scope, tmp):
    """dd makes a read and a write per byte; the probe follows nginx only."""
    count = 1000000
    offs, ons, clean = [dd_seconds(count)], [], []
    for i in range(runs):
        f0 = foreign_syscall_tps()
        probe = Probe(["-t", "5", "-p", "http", "--pid", scope], os.path.join(tmp, "probe-dd-%d.log" % i))
        try:
            own = foreign_syscall_tps() - f0  # the probe's own syscall tracepoints (0 since 2026-11-24)
            ons.append(dd_seconds(count))
        finally:
            probe.stop()
        offs.append(dd_seconds(count))
        f1 = foreign_syscall_tps()
        clean.append(f0 == 0 and f1 == 0)
        print("  dd pair %d: off %.0f, on %.0f ns per call; l7probe's syscall tracepoints %d, others' %d/%d"
              % (i + 1, offs[-2] * 1e9 / (2 * count), ons[-1] * 1e9 / (2 * count), own, f0, f1), flush=True)
    per_call = [(ons[i] - (offs[i] + offs[i + 1]) / 2) * 1e9 / (2 * count) for i in range(runs)]
    rel = [100 * (ons[i] / ((offs[i] + offs[i + 1]) / 2) - 1) for i in range(runs)]
    if any(clean) and not all(clean):
        rc = [r for r, c in zip(rel, clean) if c]
        print("  added %% over the %d pairs without another process's syscall tracepoints: %s" % (len(rc), spread(rc)))
    print("out of scope (dd bs=1, %d reads + %d writes): off %.0f ns, on %.0f ns per call (medians)"
          % (count, count, statistics.median(offs) * 1e9 / (2 * count), statistics.median(ons) * 1e9 / (2 * count)))
    print("  added ns per system call: %s" % spread(per_call))
    print("  added %%: %s" % spread(rel), flush=True)


def gotls(runs, seconds, tmp):
    """The Go HTTPS server (HTTP/1.1 over crypto/tls) on CPU 0, wrk on CPU 1; l7probe -s 1 on the server."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "GOCACHE": os.path.join(tmp, "gocache"),
           "GOPATH": os.path.join(tmp, "gopath"), "GO111MODULE": "off", "GOFLAGS": "", "GOPROXY": "off",
           "CGO_ENABLED": "0"}
    binary = os.path.join(tmp, "gotls")
    subprocess.run(["go", "build", "-o", binary,
                    os.path.join(ROOT, "tests", "integration", "scripts", "gotls", "main.go")], env=env, check=True)
    key, crt = harness.make_cert(tmp)
    port = free_port()
    # GOMAXPROCS=1: the server on one CPU, like nginx's one worker
    srv = subprocess.Popen(PIN_SERVER + [binary, "server", crt, key, str(port)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=dict(os.environ, GOMAXPROCS="1"), start_new_session=True)
    try:
        harness.wait_port(port, srv, "gotls server")
        url = "https://127.0.0.1:%d/" % port
        subprocess.run(PIN_CLIENT + ["wrk", "-t1", "-c32", "-d2s", url], capture_output=True)
        compare("gotls", wrk(url, seconds, srv.pid), runs, ["-t", "5", "-p", "http", "-s", "1", "--pid", str(srv.pid)],
                tmp)
    finally:
        stop(srv)


def main():
    args = sys.argv[1:]
    if args and args[0] == "gotls":
        args.pop(0)
        runs = int(args[0]) if args else 7
        seconds = int(args[1]) if len(args) > 1 else 4
        tmp = tempfile.mkdtemp(prefix="gg-bench-l7-")
        try:
            gotls(runs, seconds, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if args and args[0] in ("dd", "https", "http"):
        mode = args.pop(0)
        runs = int(args[0]) if args else 11
        seconds = int(args[1]) if len(args) > 1 else 5
        tmp = tempfile.mkdtemp(prefix="gg-bench-l7-")
        try:
            if mode == "dd":
                out_of_scope(runs, "1", tmp)
                return
            port, sport = free_port(), free_port()
            nginx, worker = start_nginx(tmp, port, sport)
            try:
                if mode == "https":
                    url, extra = "https://127.0.0.1:%d/small.html" % sport, ["-s", "1"]
                else:
                    url, extra = "http://127.0.0.1:%d/small.html" % port, []
                subprocess.run(PIN_CLIENT + ["wrk", "-t1", "-c32", "-d2s", url], capture_output=True)
                probe_args = ["-t", "5", "-p", "http"] + extra + ["--pid", "%d,%d" % (nginx.pid, worker)]
                if os.environ.get("L7_AB"):
                    compare_builds(mode, wrk(url, seconds, worker), runs, probe_args, tmp,
                                   os.environ["L7_AB"].split(","))
                else:
                    compare(mode, wrk(url, seconds, worker), runs, probe_args, tmp)
            finally:
                stop(nginx)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    runs = int(args[0]) if args else 5
    seconds = int(args[1]) if len(args) > 1 else 8
    with nginx_bench() as (tmp, port, sport, nginx, worker, scope):
        subprocess.run(PIN_CLIENT + ["wrk", "-t1", "-c32", "-d2s", "http://127.0.0.1:%d/small.html" % port],
                       capture_output=True)
        compare("http", wrk("http://127.0.0.1:%d/small.html" % port, seconds, worker), runs,
                ["-t", "5", "-p", "http", "--pid", scope], tmp)
        compare("https", wrk("https://127.0.0.1:%d/small.html" % sport, seconds, worker), runs,
                ["-t", "5", "-p", "http", "-s", "1", "--pid", scope], tmp)

        out_of_scope(runs, scope, tmp)

        # BPF time per event (BPF_ENABLE_STATS for as long as the probe runs)
        for name, url, extra in (("http", "http://127.0.0.1:%d/small.html" % port, []),
                                 ("https", "https://127.0.0.1:%d/small.html" % sport, ["-s", "1"])):
            probe = Probe(["-t", "%d" % seconds, "-p", "http", "--bpf-stats", "--pid", scope] + extra,
                          os.path.join(tmp, "probe-stats-%s.log" % name))
            try:
                time.sleep(seconds - 1.0)  # the first report: its figures start from the load
                r = Run(url, seconds + 2, worker, probe)
            finally:
                log = probe.stop()
            lines = [l for l in log.splitlines() if "bpf stats" in l]
            print("%s bpf_stats (%.0f req/s): %s" % (name, r.rps, lines[-1].split(": ", 2)[-1] if lines else "none"))


if __name__ == "__main__":
    main()
