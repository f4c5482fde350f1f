#!/usr/bin/env python3
"""net_overhead.py - what tcpprobe + endpoint + ioprobe cost a busy web server: nginx (Debian) serving a
small file on loopback, wrk (Debian) as the client, short windows alternating between agent off and agent
on (the real supervisor running the probes); the result is the median of the paired differences with a
95 % confidence interval. Optionally one more phase with BPF statistics on gives each BPF program's run
time per event.

usage: bench/net_overhead.py [options] [PAIRS [SECONDS [BUILD]]]   (defaults 20 pairs of 3 s, $GG_BUILD or build)
  (no flag)      the probes' default sub-probes (no -P)
  --lean         no RTT/window tables either: nothing but per-connection and rare hooks
  --all          every sub-probe named explicitly: per-segment RTT samples, tcp_delay, udp_socket, page_cache
  --close        every request on a new connection (wrk -H "Connection: close"): the per-connection hooks'
                 worst case instead of keep-alive
  --probes LIST  run only these probes (comma separated; default tcpprobe,endpoint,ioprobe): bisection
  --param P=ARGS replace probe P's parameters (e.g. --param 'tcpprobe=-t 5 -P tcp_stats'); repeatable
  --stopped      agent started and warmed up, then every agent process SIGSTOPped for the window: the BPF
                 hooks stay attached, no user-space work runs (what the hooks alone cost)
  --warmup S     seconds between the probes' first batch and an "on" window (default 2)
  --bpf-stats S  afterwards, S seconds of BPF statistics per workload (keep-alive, connection per
                 request, 4 KiB direct IO); 0 = skip (the default)
  --bpf-workloads LIST  which of them (keep-alive,close,io; default all)
  --bpf-ab BUILDS  with --bpf-stats: BPF statistics of these builds (comma separated) and BUILD in
                 alternating rounds (--bpf-rounds N, default 5), median ns per run side by side; each
                 run also has empty programs on the same tracepoints (empty_*: the per-run floor)
  --quiet CPUS   before each window wait until the rest of the machine uses less than CPUS (default 0.5)
  --quiet-wait S ... for at most S seconds (default 2), then measure anyway

Method (the machine is shared, so every choice is about noise):
- nginx (one worker) is pinned to CPU 0, wrk (one thread, 32 connections) to CPU 1; the agent is not
  pinned: on a 2-core host whatever CPU it uses is taken from one of the two, as in production.
- Each window waits (bounded) for a calm moment of the rest of the machine and for any other wrk to end.
- Windows go off, on, off, on, ..., off; each "on" window is compared with the mean of the two "off"
  windows beside it, which cancels slow drifts of the other load. The agent is started before each "on"
  window and stopped after it (the hooks must be detached to measure "off"), and measured only after a
  warm-up; after a stop the kernel gets a second to tear the programs down before the next "off" window.
- Figures per window: requests/s (wrk), CPU time per request of nginx's worker and wrk (scheduler
  nanoseconds, /proc/<pid>/task/*/schedstat, and wait4's rusage), the agent's CPU time (every thread
  of the supervisor and its probes), and the rest of the machine's busy time (/proc/stat: other load).
- Result: median of the paired ratios with a distribution-free 95 % interval (order statistics of
  the binomial sign test: the true median lies between them with >= 95 % probability whatever the
  distribution of the noise), and how many pairs were positive. CPU per request is the least noisy
  figure (other load takes CPU away from the workload but does not make its requests cost more);
  throughput also loses what other processes take.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import free_port, nginx_conf  # noqa: E402
PROGS = ("tcpprobe", "endpoint", "ioprobe")
# nginx (one worker) on CPU 0, wrk (one thread) on CPU 1: each has a core of its own.
PIN_SERVER = ["taskset", "-c", "0"] if os.cpu_count() >= 2 else []
PIN_CLIENT = ["taskset", "-c", "1"] if os.cpu_count() >= 2 else []
WRK_ARGS = ["-t1", "-c32"]
CLOSE_ARGS = ["-H", "Connection: close"]
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Probe parameters of the agent: the defaults (no -P), --lean (tcpprobe without tcp_rtt and tcp_windows,
# endpoint tcp_socket, ioprobe without page_cache), or --all (every sub-probe named: per-segment and
# per-send/receive hooks, page cache hooks).
DEFAULTS = {"tcpprobe": "-t 5", "endpoint": "-t 5", "ioprobe": "-t 5"}
LEAN = {"tcpprobe": "-t 5 -P tcp_stats,tcp_abnormal,tcp_rate,tcp_srtt,tcp_sockbuf", "endpoint": "-t 5 -P tcp_socket",
        "ioprobe": "-t 5 -P io_trace,io_err,io_count"}
ALL = {"tcpprobe": "-t 5 -P tcp_abnormal,tcp_rtt,tcp_windows,tcp_rate,tcp_srtt,tcp_sockbuf,tcp_stats,tcp_delay",
       "endpoint": "-t 5 -P tcp_socket,udp_socket", "ioprobe": "-t 5 -P io_trace,io_err,io_count,page_cache"}



def start_nginx(tmp, port):
    conf = nginx_conf(tmp, port, keepalive_requests=1000000)
    p = subprocess.Popen(PIN_SERVER + ["nginx", "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start: " + open(os.path.join(tmp, "error.log")).read())


def nginx_worker(master):
    with open("/proc/%d/task/%d/children" % (master.pid, master.pid)) as f:
        kids = [int(x) for x in f.read().split()]
    if len(kids) != 1:
        raise SystemExit("expected one nginx worker, found %r" % kids)
    return kids[0]


def task_ns(pid):
    """CPU nanoseconds of every thread of a process (scheduler accounting, not clock ticks)."""
    total = 0
    for path in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return total


def process_tree(pid):
    out = [pid]
    for path in glob.glob("/proc/%d/task/*/children" % pid):
        try:
            with open(path) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        for k in kids:
            out += process_tree(k)
    return out


def machine_busy_ns():
    """Busy CPU time of the whole machine (every CPU, everything but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) * 1e9 / CLK_TCK


QUIET = {"max_other": 0.5, "max_wait": 2.0}  # --quiet CPUS, --quiet-wait S


def wait_for_quiet():
    """Wait (bounded) until the rest of the machine uses less than QUIET["max_other"] CPUs over a second:
    windows then start in the calmer moments of a shared machine instead of anywhere."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < QUIET["max_wait"]:
        b0 = machine_busy_ns()
        time.sleep(1)
        if (machine_busy_ns() - b0) / 1e9 < QUIET["max_other"]:
            return
    print("  (the machine stayed busy for %.0f s: measuring anyway)" % QUIET["max_wait"], flush=True)


def wait_for_other_benchmarks(limit_s=120.0):
    """Another engineer's wrk on this shared machine would be measured with ours: wait for it to end
    (bounded) before a window starts."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        busy = False
        for path in glob.glob("/proc/[0-9]*/comm"):
            try:
                with open(path) as f:
                    busy = busy or f.read().strip() == "wrk"
            except OSError:
                pass
        if not busy:
            return
        time.sleep(0.5)


# Tracepoints a keep-alive request of nginx + wrk crosses (system calls, context switches, segments,
# sends and receives, skb frees): another engineer's program attached to one of them changes what every
# request costs while it is attached.
HOT_TRACEPOINTS = {"sys_enter", "sys_exit", "sched_switch", "sched_wakeup", "sched_waking", "tcp_probe",
                   "sock_send_length", "sock_recv_length", "kfree_skb", "consume_skb", "net_dev_queue",
                   "net_dev_xmit", "netif_receive_skb", "napi_gro_receive_entry", "tcp_rcv_space_adjust",
                   "tcp_cwnd_reduction_tp", "softirq_entry", "softirq_exit", "irq_handler_entry",
                   "sys_enter_read", "sys_enter_write", "sys_enter_sendfile64", "sys_enter_epoll_wait",
                   "mm_filemap_add_to_page_cache", "block_dirty_buffer", "writeback_dirty_folio"}


def foreign_hooks(own_pids=()):
    """Tracepoints on this workload's path to which processes other than our agent have a BPF program
    attached (from /proc/<pid>/fdinfo of their BPF links), as 'tracepoint (comm)'."""
    own = set(own_pids)
    out = set()
    for fdinfo in glob.glob("/proc/[0-9]*/fdinfo"):
        pid = int(fdinfo.split("/")[2])
        if pid in own:
            continue
        try:
            fds = os.listdir(fdinfo)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf_link":
                    continue
                with open("%s/%s" % (fdinfo, fd)) as f:
                    tp = [x.split(":", 1)[1].strip() for x in f if x.startswith("tp_name:")]
                with open("/proc/%d/comm" % pid) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if tp and tp[0] in HOT_TRACEPOINTS:
                out.add("%s (%s)" % (tp[0], comm))
    return out


class Window:
    """One wrk run: requests/s, CPU per request of nginx's worker + wrk, the agent's CPU, other load."""

    def __init__(self, port, seconds, worker, agent_pids=(), close=False):
        agent_pids = list(agent_pids)
        wait_for_other_benchmarks()
        self.foreign = foreign_hooks(agent_pids)
        a0 = sum(task_ns(p) for p in agent_pids)
        n0 = task_ns(worker)
        b0 = machine_busy_ns()
        t0 = time.monotonic()
        args = PIN_CLIENT + ["wrk"] + WRK_ARGS + (CLOSE_ARGS if close else []) + \
            ["-d%ds" % seconds, "http://127.0.0.1:%d/small.html" % port]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        out = p.stdout.read()
        # wait4: wrk's exact CPU time, all threads (taskset execs wrk in the same process)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        b1 = machine_busy_ns()
        self.foreign |= foreign_hooks(agent_pids)
        self.nginx_ns = task_ns(worker) - n0
        self.agent_ns = sum(task_ns(p) for p in agent_pids) - a0
        self.wrk_ns = (ru.ru_utime + ru.ru_stime) * 1e9
        self.rps = None
        self.requests = None
        for line in out.splitlines():
            if line.startswith("Requests/sec:"):
                self.rps = float(line.split()[1])
            if "requests in" in line:
                self.requests = int(line.split()[0])
        if p.returncode != 0 or self.rps is None or not self.requests:
            raise SystemExit("no result in wrk output:\n" + out)
        self.us_per_req = (self.nginx_ns + self.wrk_ns) / 1e3 / self.requests
        # other load, in CPUs (0..2): everything busy but the workload and the agent
        self.other = max(0.0, (b1 - b0 - self.nginx_ns - self.wrk_ns - self.agent_ns) / 1e9 / wall)
        self.agent_pct = 100.0 * self.agent_ns / 1e9 / wall  # % of one CPU


def write_agent_conf(d, build, params, probes):
    meta = os.path.join(d, "meta")
    os.makedirs(meta)
    for f in os.listdir(os.path.join(ROOT, "schema")):
        if f.endswith(".meta"):
            shutil.copy(os.path.join(ROOT, "schema", f), meta)
    conf = os.path.join(d, "gala-gopher.conf")
    entries = ",\n".join('    { name = "%s"; param = "%s"; switch = "on"; }' % (n, params[n]) for n in probes)
    with open(conf, "w") as f:
        f.write("""
global = { log_level = "info"; run_dir = "%(d)s/run"; meta_path = "%(meta)s"; probes_dir = "%(probes)s"; };
metric = { out_channel = "logs"; };
rest_api_server = { port = 0; state_dir = "%(d)s/state"; };
logs = { metric_dir = "%(d)s/metrics"; event_dir = "%(d)s/event"; meta_dir = "%(d)s/meta"; debug_dir = "%(d)s/debug"; };
probes = (
%(entries)s
);
""" % dict(d=d, meta=meta, probes=os.path.join(build, "probes"), entries=entries))
    return conf


def start_agent(d, build, params, probes):
    """The real supervisor running `probes`; returns once every probe has attached (sent a batch)."""
    os.makedirs(d)
    conf = write_agent_conf(d, build, params, probes)
    p = subprocess.Popen([os.path.join(build, "gala-gopher"), "-c", conf], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    status = os.path.join(d, "run", "status.json")
    for _ in range(300):
        try:
            with open(status) as f:
                st = json.load(f)
            running = {q["name"]: q["pid"] for q in st["probes"] if q["state"] == "running" and q["batches"] > 0}
            if all(n in running for n in probes) and st.get("supervisor") is not None:
                p.probe_pids = {n: running[n] for n in probes}
                return p
        except (OSError, ValueError, KeyError):
            pass
        if p.poll() is not None:
            break
        time.sleep(0.1)
    stop(p)
    raise SystemExit("the agent did not start its probes (see %s/debug)" % d)


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def signal_tree(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def binom_cdf(k, n):
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n


def median_ci(xs, conf=0.95):
    """Median and a distribution-free confidence interval for it (sign test order statistics);
    (median, lo, hi), lo/hi None when there are too few values for that confidence (all None: none)."""
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None, None, None
    k = 0  # the interval is [x_(k+1), x_(n-k)] (1-based) with P(B <= k) <= (1 - conf) / 2
    while k + 1 < n and binom_cdf(k, n) <= (1 - conf) / 2:
        k += 1
    if k == 0:
        return statistics.median(xs), None, None
    return statistics.median(xs), xs[k - 1], xs[n - k]


def fmt_ci(label, xs, unit="%", scale=100.0):
    med, lo, hi = median_ci(xs)
    if med is None:
        return "%s: no pairs" % label
    pos = sum(1 for x in xs if x > 0)
    ci = "[95 %% CI %+.2f .. %+.2f]" % (scale * lo, scale * hi) if lo is not None else "[too few pairs for a 95 % CI]"
    return "%s %+.2f %s %s, positive in %d of %d pairs" % (label, scale * med, unit, ci, pos, len(xs))


def agent_window(port, worker, build, d, params, probes, seconds, warmup, close, stopped):
    """Start the agent (the supervisor with `probes`, possibly none), let it warm up, measure one window,
    stop it and let the kernel tear its programs and maps down. "Off" windows run the same sequence with
    the supervisor alone, so that both sides follow a start and a stop the same way (without it, the
    windows right after a stop measured 2-5 % slower than those after a start, with the supervisor
    alone on both sides)."""
    wait_for_quiet()
    agent = start_agent(d, build, params, probes)
    try:
        time.sleep(warmup)
        pids = process_tree(agent.pid)
        if stopped and probes:
            signal_tree(pids, signal.SIGSTOP)
        try:
            w = Window(port, seconds, worker, pids, close=close)
        finally:
            if stopped and probes:
                signal_tree(pids, signal.SIGCONT)
    finally:
        stop(agent)
        time.sleep(1)
    # A probe that lost events did less than its job: its window would flatter it.
    for log in glob.glob(os.path.join(d, "debug", "probes", "*.log")):
        with open(log, errors="replace") as f:
            for line in f:
                if " lost" in line:
                    print("  warning: %s: %s" % (os.path.basename(log), line.strip()), flush=True)
    return w


def ab_series(port, worker, build, tmp, params, probes, pairs, seconds, warmup, close, stopped, label=""):
    """off, on, off, ..., off; returns (off windows, on windows, per-pair loss, per-pair CPU increase)."""
    off, on = [], []

    def run(kind, i):
        return agent_window(port, worker, build, os.path.join(tmp, "%s%s%d" % (label, kind, i)), params,
                            probes if kind == "on" else [], seconds, warmup, close, stopped)

    off.append(run("off", 0))
    for i in range(pairs):
        on.append(run("on", i))
        off.append(run("off", i + 1))
        a, b, c = off[-2], on[-1], off[-1]
        print("pair %2d: req/s %6.0f | %6.0f | %6.0f   CPU/req %5.2f | %5.2f | %5.2f us   agent %.3f | %.3f | %.3f %% "
              "of a CPU   other load %.2f | %.2f | %.2f CPUs" % (
                  i + 1, a.rps, b.rps, c.rps, a.us_per_req, b.us_per_req, c.us_per_req, a.agent_pct, b.agent_pct,
                  c.agent_pct, a.other, b.other, c.other), flush=True)
        if a.foreign or b.foreign or c.foreign:
            print("         other engineers' BPF programs on this path: %s%s" % (
                ", ".join(sorted(a.foreign | b.foreign | c.foreign)),
                "" if a.foreign == b.foreign == c.foreign else " (changed within the pair)"), flush=True)
    loss = [1 - on[i].rps / ((off[i].rps + off[i + 1].rps) / 2) for i in range(pairs)]
    cost = [on[i].us_per_req / ((off[i].us_per_req + off[i + 1].us_per_req) / 2) - 1 for i in range(pairs)]
    return off, on, loss, cost


def summarize(off, on, loss, cost, seconds):
    print("median: off %.0f req/s, %.2f us CPU/request; on %.0f req/s, %.2f us CPU/request (%d pairs of %d s)"
          % (statistics.median(r.rps for r in off), statistics.median(r.us_per_req for r in off),
             statistics.median(r.rps for r in on), statistics.median(r.us_per_req for r in on), len(on), seconds))
    print(fmt_ci("paired throughput loss", loss))
    print(fmt_ci("paired CPU per request (nginx worker + wrk)", cost))
    same = [i for i in range(len(on)) if off[i].foreign == on[i].foreign == off[i + 1].foreign]
    if 0 < len(same) < len(on):
        print("pairs in which other engineers' BPF programs on this path stayed the same (%d of %d):"
              % (len(same), len(on)))
        print("  " + fmt_ci("throughput loss", [loss[i] for i in same]))
        print("  " + fmt_ci("CPU per request", [cost[i] for i in same]))
    print("agent CPU (supervisor + probes, every thread): median %.3f %% of one CPU (max %.3f), %.0f ns per request;"
          " the supervisor alone (off windows): %.3f %%, %.0f ns per request"
          % (statistics.median(r.agent_pct for r in on), max(r.agent_pct for r in on),
             statistics.median(r.agent_ns / r.requests for r in on), statistics.median(r.agent_pct for r in off),
             statistics.median(r.agent_ns / r.requests for r in off)))


def pingpong(build, trips=20000, rounds=10):
    """Best-of-rounds ns per TCP round trip of two threads on one CPU (bench/net_pingpong): other load
    only slows rounds down, so the best round shows what the path itself costs."""
    out = subprocess.run(PIN_SERVER + [os.path.join(build, "bench", "net_pingpong"), "tcp", str(trips), str(rounds)],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[1])


def pingpong_series(build, tmp, params, probes, pairs):
    """Agent off / on around each pingpong (symmetric: the supervisor runs on both sides); returns the
    per-pair relative differences of the best round trip."""
    diffs = []
    prev = None
    for i in range(pairs + 1):
        for kind in (("off", "on") if i < pairs else ("off",)):
            wait_for_quiet()
            agent = start_agent(os.path.join(tmp, "pp%s%d" % (kind, i)), build, params, probes if kind == "on" else [])
            try:
                time.sleep(1)
                ns = pingpong(build)
            finally:
                stop(agent)
                time.sleep(0.5)
            if kind == "on":
                on_ns = ns
            else:
                if prev is not None:
                    diffs.append(on_ns / ((prev + ns) / 2) - 1)
                    print("pingpong %2d: off %.0f, on %.0f, off %.0f ns per round trip" % (len(diffs), prev, on_ns, ns),
                          flush=True)
                prev = ns
    return diffs


# ---- BPF statistics -----------------------------------------------------------------------------------

BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0


def enable_bpf_stats():
    """An fd that keeps run-time statistics on while open (bpf(BPF_ENABLE_STATS)): nothing global is
    left changed if this script dies, and it does not fight kernel.bpf_stats_enabled set by others."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 4)(BPF_STATS_RUN_TIME, 0, 0, 0)
    fd = libc.syscall(321 if os.uname().machine == "x86_64" else 280, BPF_ENABLE_STATS, ctypes.byref(attr),
                      ctypes.sizeof(attr))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "BPF_ENABLE_STATS")
    return fd


def prog_counters(pids):
    """{prog id: (run_time_ns, run_cnt)} of the BPF programs the processes hold (fdinfo)."""
    out = {}
    for pid in pids:
        for path in glob.glob("/proc/%d/fdinfo/*" % pid):
            try:
                with open(path) as f:
                    kv = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            except OSError:
                continue
            if "prog_id" in kv and "run_cnt" in kv:
                out[int(kv["prog_id"])] = (int(kv["run_time_ns"]), int(kv["run_cnt"]))
    return out


def prog_names(ids):
    names = {}
    for prog in json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                                          check=True).stdout):
        if prog["id"] in ids:
            names[prog["id"]] = prog.get("name", "?")
    return names


# Empty programs (r0 = 0; exit) on the tracepoints the probes use: what any program run costs here with
# BPF statistics on (the trampoline, the recursion guard, two clock reads), measured beside the probes'
# programs in the same run. Name -> tracepoint.
EMPTY_PROGS = {"empty_sk_state": "inet_sock_set_state", "empty_kfree_skb": "kfree_skb",
               "empty_io_start": "block_io_start", "empty_rq_done": "block_rq_complete"}
BPF_PROG_LOAD = 5
BPF_RAW_TRACEPOINT_OPEN = 17
BPF_PROG_TYPE_TRACING = 26
BPF_TRACE_RAW_TP = 23


def btf_trace_ids(tracepoints):
    """vmlinux BTF type ids of btf_trace_<tp> (what a tp_btf program attaches to)."""
    want = {"btf_trace_" + tp: tp for tp in tracepoints}
    ids = {}
    p = subprocess.Popen(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"], stdout=subprocess.PIPE,
                         text=True)
    for line in p.stdout:
        if "TYPEDEF 'btf_trace_" in line:
            name = line.split("'")[1]
            if name in want:
                ids[want[name]] = int(line[1:line.index("]")])
    p.wait()
    return ids


def load_empty_progs():
    """Load and attach EMPTY_PROGS; returns the fds to keep open (closing them detaches)."""
    libc = ctypes.CDLL(None, use_errno=True)
    nr = 321 if os.uname().machine == "x86_64" else 280
    insns = (ctypes.c_uint64 * 2)(0xb7, 0x95)  # mov r0, 0; exit
    lic = ctypes.create_string_buffer(b"GPL")
    ids = btf_trace_ids(EMPTY_PROGS.values())
    fds = []
    for name, tp in EMPTY_PROGS.items():
        if tp not in ids:
            continue
        attr = ctypes.create_string_buffer(128)
        ctypes.memmove(ctypes.addressof(attr), (ctypes.c_uint32 * 2)(BPF_PROG_TYPE_TRACING, 2), 8)
        ctypes.memmove(ctypes.addressof(attr) + 8, (ctypes.c_uint64 * 2)(ctypes.addressof(insns),
                                                                         ctypes.addressof(lic)), 16)
        ctypes.memmove(ctypes.addressof(attr) + 48, name.encode()[:15], len(name.encode()[:15]))
        ctypes.memmove(ctypes.addressof(attr) + 68, (ctypes.c_uint32 * 1)(BPF_TRACE_RAW_TP), 4)
        ctypes.memmove(ctypes.addressof(attr) + 108, (ctypes.c_uint32 * 1)(ids[tp]), 4)
        fd = libc.syscall(nr, BPF_PROG_LOAD, attr, 128)
        if fd < 0:
            print("  (cannot load an empty program on %s: %s)" % (tp, os.strerror(ctypes.get_errno())))
            continue
        open_attr = (ctypes.c_uint64 * 2)(0, fd)
        link = libc.syscall(nr, BPF_RAW_TRACEPOINT_OPEN, open_attr, 16)
        if link < 0:
            os.close(fd)
            continue
        fds += [fd, link]
    return fds


def dd_io(seconds):
    """4 KiB direct writes then reads for about `seconds`: block requests for ioprobe."""
    path = "/var/tmp/gg-bench-io.%d" % os.getpid()
    try:
        subprocess.run(["timeout", str(max(1, seconds // 2)), "dd", "if=/dev/zero", "of=" + path, "bs=4k",
                        "count=200000", "oflag=direct"], capture_output=True)
        subprocess.run(["timeout", str(max(1, seconds - seconds // 2)), "dd", "if=" + path, "of=/dev/null",
                        "bs=4k", "iflag=direct"], capture_output=True)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


BPF_WORKLOADS = {"keep-alive": "keep-alive", "close": "connection per request", "io": "4 KiB direct IO"}


def bpf_costs(port, worker, build, tmp, params, probes, seconds, workloads=tuple(BPF_WORKLOADS), quiet=False,
              label="stats"):
    """Per workload and program: runs, runs per request, ns per run (total, and the median and range of
    1-second slices: a slice where the program was preempted or interrupted shows as an outlier
    instead of moving the figure). Returns {workload: {program: (runs, runs per request or None, ns per
    run)}}."""
    result = {}
    agent = start_agent(os.path.join(tmp, label), build, params, probes)
    fd = enable_bpf_stats()
    empty = load_empty_progs()
    try:
        time.sleep(2)
        pids = list(agent.probe_pids.values()) + [os.getpid()]
        names = prog_names(set(prog_counters(pids)))
        for workload in (BPF_WORKLOADS[w] for w in workloads):
            samples = [prog_counters(pids)]
            t0 = time.monotonic()
            if workload == "4 KiB direct IO":
                th = threading.Thread(target=dd_io, args=(seconds,))
                th.start()
                while th.is_alive():
                    time.sleep(1)
                    samples.append(prog_counters(pids))
                requests = None
            else:
                res = {}
                th = threading.Thread(target=lambda: res.setdefault(
                    "w", Window(port, seconds, worker, close=(workload != "keep-alive"))))
                th.start()
                while th.is_alive():
                    time.sleep(1)
                    samples.append(prog_counters(pids))
                th.join()
                requests = res["w"].requests if "w" in res else None
            samples.append(prog_counters(pids))
            rows = result.setdefault(workload, {})
            if not quiet:
                print("bpf_stats, %s (%.0f s%s): program, runs, runs per request, ns per run (all; median of 1 s "
                      "slices [min..max])" % (workload, time.monotonic() - t0,
                                              ", %d requests" % requests if requests else ""))
            first, last = samples[0], samples[-1]
            for pid_ in sorted(last, key=lambda i: names.get(i, "?")):
                runs = last[pid_][1] - first.get(pid_, (0, 0))[1]
                if runs <= 0:
                    continue
                ns = last[pid_][0] - first.get(pid_, (0, 0))[0]
                sl = []
                for a, b in zip(samples, samples[1:]):
                    if pid_ in a and pid_ in b and b[pid_][1] - a[pid_][1] >= 100:
                        sl.append((b[pid_][0] - a[pid_][0]) / (b[pid_][1] - a[pid_][1]))
                slices = " (%.0f [%.0f..%.0f] in %d slices)" % (statistics.median(sl), min(sl), max(sl), len(sl)) \
                    if sl else ""
                name = names.get(pid_, str(pid_))
                rows[name] = (runs, runs / requests if requests else None, ns / runs)
                if not quiet:
                    print("  %-18s %10d %8s %8.0f%s" % (name, runs, "%.3f" % (runs / requests) if requests else "-",
                                                        ns / runs, slices), flush=True)
    finally:
        for f in empty:
            os.close(f)
        os.close(fd)
        stop(agent)
    return result


def bpf_ab(port, worker, builds, tmp, params, probes, seconds, rounds, workloads=tuple(BPF_WORKLOADS),
           min_runs=5000):
    """BPF time per run of the same programs in several builds, alternating (order reversed every other
    round) so that the machine's slow drifts hit every build alike: per workload and program the median
    ns per run of each build over the rounds, [min..max], and the ratio of the medians to the first
    build. Programs with fewer than min_runs runs in a round (others' stray events) are left out."""
    got = {}  # (workload, program) -> build -> [ns per run]
    paired = {}  # (workload, program) -> build -> [ns per run or None, one per round]
    for r in range(rounds):
        order = builds if r % 2 == 0 else builds[::-1]
        for b in order:
            res = bpf_costs(port, worker, os.path.join(ROOT, b), tmp, params, probes, seconds, workloads, quiet=True,
                            label="ab%d-%d" % (r, builds.index(b)))
            for wl, rows in res.items():
                for name, (runs, _, ns) in rows.items():
                    if runs >= min_runs:
                        got.setdefault((wl, name), {}).setdefault(b, []).append(ns)
                        per = paired.setdefault((wl, name), {})
                        for bb in builds:
                            per.setdefault(bb, [])
                            per[bb] += [None] * (r - len(per[bb]))
                        per[b].append(ns)
        for per in paired.values():
            for bb in builds:
                per.setdefault(bb, [])
                per[bb] += [None] * (r + 1 - len(per[bb]))
        print("  round %d of %d done" % (r + 1, rounds), flush=True)
    print("bpf_stats A/B, %d alternating rounds of %d s per workload: median ns per run [min..max] per build"
          % (rounds, seconds))
    print("  %-24s %-18s %s" % ("workload", "program", "   ".join(builds)))
    for (wl, name) in sorted(got, key=lambda k: (list(BPF_WORKLOADS.values()).index(k[0]), k[1])):
        per = got[(wl, name)]
        cells = []
        base = statistics.median(per[builds[0]]) if builds[0] in per else None
        for b in builds:
            if b not in per:
                cells.append("-")
                continue
            m = statistics.median(per[b])
            cell = "%4.0f [%.0f..%.0f]" % (m, min(per[b]), max(per[b]))
            if b != builds[0] and base:
                cell += " %+.0f %%" % (100.0 * (m / base - 1))
            cells.append(cell)
        print("  %-24s %-18s %s" % (wl, name, "   ".join(cells)), flush=True)
    # The same per round: each build against the first one's run of that round (run next to it, so
    # the machine's drifts between rounds cancel). None when a build missed a round (too few runs).
    print("paired per round: median change against %s [min..max], rounds lower" % builds[0])
    for (wl, name) in sorted(paired, key=lambda k: (list(BPF_WORKLOADS.values()).index(k[0]), k[1])):
        cells = []
        for b in builds[1:]:
            rs = [100.0 * (x / y - 1) for x, y in zip(paired[(wl, name)].get(b, []), paired[(wl, name)][builds[0]])
                  if x is not None and y]
            cells.append("%+.1f %% [%+.1f..%+.1f] %d of %d" % (statistics.median(rs), min(rs), max(rs),
                                                                sum(r < 0 for r in rs), len(rs)) if rs else "-")
        print("  %-24s %-18s %s" % (wl, name, "   ".join(cells)), flush=True)
    return got


def main():
    # stopped by a signal (a background job ignores SIGINT): the finally blocks stop nginx and the agent
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lean", action="store_true")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--close", action="store_true")
    ap.add_argument("--stopped", action="store_true")
    ap.add_argument("--probes", default=",".join(PROGS))
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--bpf-stats", type=int, default=0)
    ap.add_argument("--bpf-ab", default="", help="BUILD[,BUILD...]: with --bpf-stats, alternate BPF statistics "
                    "runs of these builds and BUILD (--bpf-rounds rounds), medians side by side")
    ap.add_argument("--bpf-rounds", type=int, default=5)
    ap.add_argument("--bpf-workloads", default=",".join(BPF_WORKLOADS),
                    help="workloads of --bpf-stats, comma separated: keep-alive, close, io")
    ap.add_argument("--quiet", type=float, default=QUIET["max_other"])
    ap.add_argument("--quiet-wait", type=float, default=QUIET["max_wait"])
    ap.add_argument("pairs", nargs="?", type=int, default=20)
    ap.add_argument("seconds", nargs="?", type=int, default=3)
    ap.add_argument("build", nargs="?", default=os.environ.get("GG_BUILD", "build"))
    a = ap.parse_args()
    params = dict(ALL if a.all else LEAN if a.lean else DEFAULTS)
    for p in a.param:
        name, _, val = p.partition("=")
        params[name] = val
    QUIET.update(max_other=a.quiet, max_wait=a.quiet_wait)
    probes = [p for p in a.probes.split(",") if p]  # none: the supervisor alone (an A/A check of the method)
    build = os.path.join(ROOT, a.build)
    print("agent: %s%s; workload: %s; %d pairs of %d s windows, warm-up %.1f s" % (
        "; ".join("%s %s" % (n, params[n]) for n in probes), " (SIGSTOPped during the windows)" if a.stopped else "",
        "connection per request" if a.close else "keep-alive", a.pairs, a.seconds, a.warmup), flush=True)
    tmp = tempfile.mkdtemp(prefix="gg-bench-net-")
    port = free_port()
    nginx = start_nginx(tmp, port)
    try:
        worker = nginx_worker(nginx)
        Window(port, 2, worker, close=a.close)  # warm up nginx, wrk, the page cache
        if a.pairs:
            off, on, loss, cost = ab_series(port, worker, build, tmp, params, probes, a.pairs, a.seconds,
                                            a.warmup, a.close, a.stopped)
            summarize(off, on, loss, cost, a.seconds)
        if a.bpf_stats and a.bpf_ab:
            builds = [b for b in a.bpf_ab.split(",") if b] + [a.build]
            bpf_ab(port, worker, builds, tmp, params, probes, a.bpf_stats, a.bpf_rounds,
                   [w for w in a.bpf_workloads.split(",") if w])
        elif a.bpf_stats:
            bpf_costs(port, worker, build, tmp, params, probes, a.bpf_stats,
                      [w for w in a.bpf_workloads.split(",") if w])
    finally:
        stop(nginx)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
