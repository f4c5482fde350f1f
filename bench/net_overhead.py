#!/usr/bin/env python3
"""net_overhead.py - what tcpprobe + endpoint + ioprobe cost a busy web server: nginx (Debian) serving
a small file on loopback, wrk (Debian) as the client; runs alternate between agent off and agent on
(the real supervisor running the three probes), medians compared. Then one more run with
kernel.bpf_stats_enabled=1 gives each BPF program's run time per event.

usage: bench/net_overhead.py [--lean|--all] [--close] [RUNS [SECONDS [BUILD]]]   (defaults 5, 10, $GG_BUILD or build)
  (no flag)  the probes' default sub-probes (no -P)
  --lean     no RTT/window tables either: nothing but per-connection and rare hooks
  --all      every sub-probe named explicitly: per-segment RTT samples, tcp_delay, udp_socket, page_cache
  --close    every request on a new connection (wrk -H "Connection: close"): the per-connection hooks'
             worst case instead of keep-alive
"""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROGS = ("tcpprobe", "endpoint", "ioprobe")
# nginx (one worker) on CPU 0, wrk (one thread) on CPU 1: each has a core of its own.
PIN_SERVER = ["taskset", "-c", "0"] if os.cpu_count() >= 2 else []
PIN_CLIENT = ["taskset", "-c", "1"] if os.cpu_count() >= 2 else []
WRK_ARGS = ["-t1", "-c32"]  # --close adds a header that makes every request a new connection


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(tmp, port):
    root = os.path.join(tmp, "www")
    os.makedirs(root)
    with open(os.path.join(root, "small.html"), "w") as f:
        f.write("<html><body>" + "x" * 600 + "</body></html>\n")
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""
worker_processes 1;
daemon off;
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    client_body_temp_path %(tmp)s/body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    server { listen 127.0.0.1:%(port)d; root %(root)s; }
}
""" % {"tmp": tmp, "port": port, "root": root})
    p = subprocess.Popen(PIN_SERVER + ["nginx", "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start: " + open(os.path.join(tmp, "error.log")).read())


def cpu_seconds(pid):
    """utime + stime of a process (children not included)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def nginx_worker(master):
    with open("/proc/%d/task/%d/children" % (master.pid, master.pid)) as f:
        kids = [int(x) for x in f.read().split()]
    if len(kids) != 1:
        raise SystemExit("expected one nginx worker, found %r" % kids)
    return kids[0]


class Run:
    """One wrk run: requests per second, and the CPU time nginx's worker and wrk used per request
    (softirq work on loopback is charged to them too). The CPU cost does not depend on what else
    the machine runs the way throughput does."""

    def __init__(self, port, seconds, worker):
        c0 = cpu_seconds(worker)
        p = subprocess.Popen(PIN_CLIENT + ["wrk"] + WRK_ARGS + ["-d%ds" % seconds,
                                           "http://127.0.0.1:%d/small.html" % port], stdout=subprocess.PIPE,
                             text=True)
        wrk_pid = p.pid
        out = ""
        wrk_cpu = 0.0
        # wrk's own CPU time, read just before it exits (taskset execs wrk in the same process)
        while p.poll() is None:
            try:
                wrk_cpu = cpu_seconds(wrk_pid)
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
            time.sleep(0.05)
        out = p.stdout.read()
        self.nginx_cpu = cpu_seconds(worker) - c0
        self.wrk_cpu = wrk_cpu
        self.rps = None
        self.requests = None
        for line in out.splitlines():
            if line.startswith("Requests/sec:"):
                self.rps = float(line.split()[1])
            if "requests in" in line:
                self.requests = int(line.split()[0])
        if self.rps is None or not self.requests:
            raise SystemExit("no result in wrk output:\n" + out)
        self.us_per_req = (self.nginx_cpu + self.wrk_cpu) * 1e6 / self.requests


def wrk(port, seconds):
    out = subprocess.run(PIN_CLIENT + ["wrk"] + WRK_ARGS + ["-d%ds" % seconds, "http://127.0.0.1:%d/small.html" % port],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise SystemExit("no Requests/sec in wrk output:\n" + out)


# Probe parameters of the agent: the defaults (no -P), --lean (tcpprobe without tcp_rtt and tcp_windows,
# endpoint tcp_socket, ioprobe without page_cache), or --all (every sub-probe named: per-segment and
# per-send/receive hooks, page cache hooks).
PARAMS = {"tcpprobe": "-t 5", "endpoint": "-t 5", "ioprobe": "-t 5"}
LEAN = {"tcpprobe": "-t 5 -P tcp_stats,tcp_abnormal,tcp_rate,tcp_srtt,tcp_sockbuf", "endpoint": "-t 5 -P tcp_socket",
        "ioprobe": "-t 5 -P io_trace,io_err,io_count"}
ALL = {"tcpprobe": "-t 5 -P tcp_abnormal,tcp_rtt,tcp_windows,tcp_rate,tcp_srtt,tcp_sockbuf,tcp_stats,tcp_delay",
       "endpoint": "-t 5 -P tcp_socket,udp_socket", "ioprobe": "-t 5 -P io_trace,io_err,io_count,page_cache"}


def start_agent(tmp, build):
    d = os.path.join(tmp, "agent")
    meta = os.path.join(d, "meta")
    os.makedirs(meta)
    for f in os.listdir(os.path.join(ROOT, "schema")):
        if f.endswith(".meta"):
            shutil.copy(os.path.join(ROOT, "schema", f), meta)
    conf = os.path.join(d, "gala-gopher.conf")
    with open(conf, "w") as f:
        f.write("""
global = { log_level = "info"; run_dir = "%(d)s/run"; meta_path = "%(meta)s"; probes_dir = "%(probes)s"; };
metric = { out_channel = "logs"; };
logs = { metric_dir = "%(d)s/metrics"; event_dir = "%(d)s/event"; meta_dir = "%(d)s/meta"; debug_dir = "%(d)s/debug"; };
probes = (
    { name = "tcpprobe"; param = "%(tcpprobe)s"; switch = "on"; },
    { name = "endpoint"; param = "%(endpoint)s"; switch = "on"; },
    { name = "ioprobe"; param = "%(ioprobe)s"; switch = "on"; }
);
""" % dict(PARAMS, d=d, meta=meta, probes=os.path.join(build, "probes")))
    p = subprocess.Popen([os.path.join(build, "gala-gopher"), "-c", conf], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    # Running once every probe has attached (each has sent a batch).
    status = os.path.join(d, "run", "status.json")
    for _ in range(300):
        try:
            with open(status) as f:
                st = json.load(f)
            if all(any(q["name"] == n and q["state"] == "running" and q["batches"] > 0 for q in st["probes"])
                   for n in PROGS):
                return p
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    p.kill()
    raise SystemExit("the agent did not start its probes")


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


PREFIXES = ("tcp_", "ep_", "io_")  # program names of tcpprobe, endpoint and ioprobe


def our_programs(since):
    """{prog name: (run_time_ns, run_cnt)} of our probes' BPF programs loaded at or after `since`."""
    out = {}
    progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                                      check=True).stdout)
    for prog in progs:
        name = prog.get("name", "")
        if name.startswith(PREFIXES) and prog.get("loaded_at", 0) >= since:
            out[name] = (prog.get("run_time_ns", 0), prog.get("run_cnt", 0))
    return out


def main():
    args = [a for a in sys.argv[1:] if a not in ("--lean", "--all", "--close")]
    if "--close" in sys.argv[1:]:
        WRK_ARGS.extend(["-H", "Connection: close"])
    if "--lean" in sys.argv[1:]:
        PARAMS.update(LEAN)
    if "--all" in sys.argv[1:]:
        PARAMS.update(ALL)
    runs = int(args[0]) if len(args) > 0 else 5
    seconds = int(args[1]) if len(args) > 1 else 10
    build = os.path.join(ROOT, args[2] if len(args) > 2 else os.environ.get("GG_BUILD", "build"))
    print("agent: " + "; ".join("%s %s" % kv for kv in sorted(PARAMS.items())), flush=True)
    tmp = tempfile.mkdtemp(prefix="gg-bench-net-")
    port = free_port()
    nginx = start_nginx(tmp, port)
    off, on = [], []
    try:
        worker = nginx_worker(nginx)
        wrk(port, 2)  # warm up
        # off, on, off, on, ..., off: each "on" run is compared with the mean of its two neighbours,
        # which cancels the slow drift of a shared machine; the medians of those ratios are the result.
        off.append(Run(port, seconds, worker))
        for i in range(runs):
            agent = start_agent(os.path.join(tmp, "on%d" % i), build)
            try:
                time.sleep(1)
                on.append(Run(port, seconds, worker))
            finally:
                stop(agent)
            off.append(Run(port, seconds, worker))
            print("run %d: off %.0f, on %.0f, off %.0f req/s; CPU per request %.2f, %.2f, %.2f us"
                  % (i + 1, off[-2].rps, on[-1].rps, off[-1].rps, off[-2].us_per_req, on[-1].us_per_req,
                     off[-1].us_per_req), flush=True)
        loss = [1 - on[i].rps / ((off[i].rps + off[i + 1].rps) / 2) for i in range(runs)]
        cost = [on[i].us_per_req / ((off[i].us_per_req + off[i + 1].us_per_req) / 2) - 1 for i in range(runs)]
        print("median: off %.0f req/s, on %.0f req/s; paired throughput loss %.2f %% (per run: %s)"
              % (statistics.median(r.rps for r in off), statistics.median(r.rps for r in on),
                 100.0 * statistics.median(loss), ", ".join("%.1f" % (100.0 * x) for x in loss)))
        print("median CPU per request (nginx worker + wrk): off %.2f us, on %.2f us; paired increase %.2f %% "
              "(per run: %s)" % (statistics.median(r.us_per_req for r in off),
                                 statistics.median(r.us_per_req for r in on), 100.0 * statistics.median(cost),
                                 ", ".join("%.1f" % (100.0 * x) for x in cost)))
        # Other load on a shared machine only ever slows a run down: the best runs of each side are the
        # least disturbed estimate of what the agent itself costs.
        best_off, best_on = max(r.rps for r in off), max(r.rps for r in on)
        low_off, low_on = min(r.us_per_req for r in off), min(r.us_per_req for r in on)
        print("best runs: off %.0f req/s, on %.0f req/s (loss %.2f %%); lowest CPU per request off %.2f us, on %.2f us "
              "(increase %.2f %%)" % (best_off, best_on, 100.0 * (1 - best_on / best_off), low_off, low_on,
                                      100.0 * (low_on / low_off - 1)))

        # BPF cost per event, measured in a separate run (the statistics cost time themselves).
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            old = f.read().strip()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        since = int(time.time()) - 1
        agent = start_agent(os.path.join(tmp, "stats"), build)
        try:
            time.sleep(1)
            before = our_programs(since)
            rps = wrk(port, seconds)
            after = our_programs(since)
        finally:
            stop(agent)
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(old)
        print("bpf_stats run: %.0f req/s; per program: runs, runs per request, ns per run" % rps)
        for name in sorted(after):
            ns = after[name][0] - before.get(name, (0, 0))[0]
            cnt = after[name][1] - before.get(name, (0, 0))[1]
            if cnt:
                print("  %-28s %10d %8.2f %8.0f" % (name, cnt, cnt / (rps * seconds), ns / cnt))
    finally:
        stop(nginx)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
