"""test_tprofiling.py - tprofiling (thread-level timeline) under the supervisor against a program that knows
its answers (tests/helpers/tprof_load.c): its threads block on a mutex, sleep, read a FIFO written late,
make a burst of short sleeps and spin, timing each with their own clocks. The events on the event channel
(the seed's OpenTelemetry JSON), the local event file and the Chrome/Perfetto timeline must say the same;
a second copy of the program outside the scope must not appear at all."""
import glob
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.parse

from harness import (PROBES, TEST_BINS, PidPeer, Supervisor, check, events, json_lines, rest_call, rest_port, teardown,
                     wait_for)
from test_stackprobe import records
from test_sli import Container

LOAD = os.path.join(TEST_BINS, "tprof_load")
GC_LOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers", "tprof_gc.py")
DEBIAN_PYTHON = "/usr/bin/python3"  # built with CPython's USDT probes
ROUNDS, OP_MS = 3, 150


class Load(PidPeer):
    """tprof_load: prints its pid, works on "go", prints what it measured, exits when stdin closes."""

    def __init__(self, tmp, tag, rounds=ROUNDS, spawn=subprocess.Popen):
        self.fifo = os.path.join(tmp, "fifo-" + tag)
        super().__init__([LOAD, self.fifo, str(rounds), str(OP_MS)], "tprof_load", spawn=spawn)

    def result(self):
        line = self.proc.stdout.readline()
        check(line.startswith("{"), "tprof_load result: %r" % line)
        return json.loads(line)


def put(port, body):
    st, _, raw, _ = rest_call(port, "PUT", "/tprofiling", urllib.parse.urlencode({"json": json.dumps(body)}))
    return st, raw


def flat(events):
    """(resource, attributes of one event) for each event line (one event per line)."""
    out = []
    for e in events:
        if "Resource" not in e or "thread.pid" not in e.get("Resource", {}):
            continue
        for v in e["Attributes"]["values"]:
            out.append((e["Resource"], v))
    return out


def close_to(got_ms, want_ns, what, rel=0.02, abs_ms=3.0):
    want_ms = want_ns / 1e6
    check(abs(got_ms - want_ms) <= abs_ms + rel * want_ms, "%s: probe %.3f ms, program %.3f ms" %
          (what, got_ms, want_ms))


def test_tprofiling_ground_truth():
    tmp = tempfile.mkdtemp(prefix="gg-tprof-")
    sup = Supervisor(extra='event = { out_channel = "logs"; };')
    inside = outside = py = None
    try:
        check(os.access(os.path.join(PROBES, "tprofiling"), os.X_OK), "tprofiling is built")
        sup.start()
        port = rest_port(sup)
        os.makedirs(os.path.join(sup.dir, "out"))  # the output base (rest_api_server.output_base_dir)
        outdir = os.path.join(sup.dir, "out", "tprof")
        inside, outside = Load(tmp, "in"), Load(tmp, "out")
        py = subprocess.Popen([DEBIAN_PYTHON, GC_LOAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        py_pid = int(py.stdout.readline().split("=")[1])
        conf = {"cmd": {"probe": ["oncpu", "syscall_file", "syscall_net", "syscall_lock", "syscall_sched",
                                  "pthread_sync", "mem_glibc", "python_gc"]},
                "snoopers": {"proc_id": [inside.pid, py_pid]},
                "params": {"output_dir": outdir, "min_aggr_dur": 100, "min_exec_dur": 0, "func_stack": 1,
                           "profiling_channel": ["kafka", "local"], "report_period": 5},
                "state": "running"}
        # the seed's ranges: min_aggr_dur 10..10000 ms, min_exec_dur 0..1000000 us; output_dir confined
        for bad in ({"min_aggr_dur": 5}, {"min_exec_dur": 2000000}, {"output_dir": "/etc/tprof"},
                    {"profiling_channel": "udp"}):
            st, raw = put(port, dict(conf, params=dict(conf["params"], **bad)))
            check(st in (400, 403), "PUT %s: %d %s" % (bad, st, raw[:200]))
        st, raw = put(port, conf)
        check(st == 200, "PUT /tprofiling: %d %s" % (st, raw[:300]))
        wait_for(lambda: any(p["name"] == "tprofiling" for p in sup.status()["probes"]), 10, "tprofiling in status")
        sup.wait_probe("tprofiling", lambda p: p["state"] == "running" and p.get("config_version_applied", 0) >= 1,
                       20, "running with its configuration")
        wait_for(lambda: "pthread_sync/mem_glibc: uprobes in 2 processes" in sup.probe_log("tprofiling"), 20,
                 "pthread_sync and mem_glibc uprobes in the processes in scope")
        wait_for(lambda: "python_gc: USDT probes in 1 Python process" in sup.probe_log("tprofiling"), 20,
                 "python_gc's USDT probes in the Python process")
        inside.go()
        outside.go()
        py.stdin.write("go\n")
        py.stdin.flush()
        truth = inside.result()
        outside.result()
        gc_ns = json.loads(py.stdout.readline())
        th = truth["threads"]
        # a stop flushes every open aggregate and this period's timeline file. (The default syscall hooks, a
        # tracepoint pair per syscall, and python_gc's USDT probes each wait for the kernel's grace periods
        # as they are detached: 2-4 s, past the supervisor's stop grace. The stop time is checked in the
        # container test, with raw syscall hooks, and in test_tprofiling_uprobes_detach_quickly.)
        t_stop = time.monotonic()
        st, raw = put(port, {"state": "stopped"})
        check(st == 200, "PUT stopped: %d %s" % (st, raw[:200]))
        gone = sup.wait_probe("tprofiling", lambda p: p["state"] == "stopped", 15, "stopped")
        print("tprofiling (with uprobes in 2 processes) stopped in %.3f s: exit status %s, signal %s" %
              (time.monotonic() - t_stop, gone.get("last_exit_status"), gone.get("last_exit_signal")))
        wait_for(lambda: "stopping:" in sup.probe_log("tprofiling"), 5, "the probe's last words")

        channel = flat(events(sup))
        local = flat(json_lines(os.path.join(outdir, "tprofiling-events.json")))
        check(channel, "events on the event channel")
        check(not [r for r, _ in channel if r["thread.tgid"] == outside.pid], "no event of the process out of scope")
        mine = [(r, v) for r, v in channel if r["thread.tgid"] == inside.pid]
        def canon(v):  # numbers as numbers (the supervisor re-prints 13.000 as 13)
            return json.dumps({k: float(x) if isinstance(x, (int, float)) else x for k, x in v.items()},
                              sort_keys=True)
        diff = set(canon(v) for _, v in local) ^ set(canon(v) for _, v in channel)
        check(len(local) == len(channel) and not diff,
              "the local event file has the channel's events: %d vs %d: %s" % (len(local), len(channel),
                                                                                 sorted(diff)[:4]))
        r0 = mine[0][0]
        check(r0["proc.name"] == "tprof_load" and r0["host.id"] and r0["host.name"] and "container.id" in r0,
              "resource: %s" % r0)

        def of(thread, name):
            tid = th[thread]["tid"]
            evs = [v for r, v in mine if r["thread.pid"] == tid and v["event.name"] == name]
            # named as it runs (an aggregate closed before the thread renamed itself has the process's name)
            comms = {r["thread.comm"] for r, v in mine if r["thread.pid"] == tid}
            check(thread in comms and comms <= {thread, "tprof_load"}, "%s: thread.comm %s" % (thread, comms))
            return evs

        # the waiter's blocked mutex: one futex wait (syscall_lock) and one pthread_mutex_lock (pthread_sync) per
        # round it found the mutex held (a waiter delayed past the 150 ms hold on a loaded machine does not
        # block), each as long as the program measured its lock call
        blocked = [ns for ns in th["tp_waiter"]["ns"] if ns > OP_MS / 3 * 1e6]
        check(blocked, "the waiter never blocked: %s" % th["tp_waiter"])
        waits = [v for v in of("tp_waiter", "futex") if v.get("futex.op") == "wait" and v["duration"] > OP_MS / 3]
        locks = [v for v in of("tp_waiter", "pthread_mutex_lock") if v["duration"] > OP_MS / 3]
        check(len(waits) == len(blocked), "futex waits: %s" % waits)
        check(len(locks) == len(blocked) and all(v["count"] == 1 for v in locks), "mutex locks: %s" % locks)
        for i in range(len(blocked)):
            if waits[i]["count"] == 1:
                close_to(waits[i]["duration"], blocked[i], "futex wait %d" % i)
            else:  # another wait of the thread's in the same window (ASan's own lock as threads start)
                check(waits[i]["duration"] >= blocked[i] / 1e6 - 3, "futex waits %d: %s" % (i, waits[i]))
            close_to(locks[i]["duration"], blocked[i], "pthread_mutex_lock %d" % i, abs_ms=1.0)
            check(waits[i]["event.type"] == "lock" and locks[i]["event.type"] == "pthread_sync", "types")
        check(any("waiter" in v.get("func.stack", "") for v in locks), "func.stack names the caller: %s" % locks)
        # the sleeper's nanosleeps (syscall_sched), one aggregate each (150 ms apart > min_aggr_dur)
        sleeps = of("tp_sleeper", "nanosleep")
        check(len(sleeps) == ROUNDS and all(v["count"] == 1 and v["event.type"] == "sched" for v in sleeps),
              "sleeps: %s" % sleeps)
        for i in range(ROUNDS):
            close_to(sleeps[i]["duration"], th["tp_sleeper"]["ns"][i], "nanosleep %d" % i)
            check(abs(sleeps[i]["end_time"] - sleeps[i]["start_time"] - sleeps[i]["duration"]) <= 1,
                  "end_time = start_time + duration: %s" % sleeps[i])
        # the reader's reads of the FIFO (syscall_file), with its path
        reads = [v for v in of("tp_reader", "read") if v["duration"] > OP_MS / 3]
        check(len(reads) == ROUNDS and all(v.get("file.path") == inside.fifo and v["event.type"] == "file"
                                           for v in reads), "reads: %s" % reads)
        for i in range(ROUNDS):
            close_to(reads[i]["duration"], th["tp_reader"]["ns"][i], "read %d" % i)
        # ten 5 ms sleeps in a row: aggregated (min_aggr_dur 100 ms), count and summed duration exact
        burst = of("tp_burst", "nanosleep")
        check(sum(v["count"] for v in burst) == th["tp_burst"]["n"] and len(burst) < th["tp_burst"]["n"],
              "burst aggregated: %s" % burst)
        close_to(sum(v["duration"] for v in burst), th["tp_burst"]["total_ns"], "burst", rel=0.03)
        # the spinner's on-CPU time against its thread CPU clock
        oncpu = sum(v["duration"] for v in of("tp_spinner", "oncpu"))
        cpu_ms = th["tp_spinner"]["total_ns"] / 1e6
        check(0.95 * cpu_ms <= oncpu <= 1.1 * cpu_ms + 5, "spinner on CPU %.1f ms, CPU clock %.1f ms" %
              (oncpu, cpu_ms))

        # the allocator thread's 1000 malloc(12345) (mem_glibc; min_exec_dur 0: these calls take less than
        # the default 1 us, which would drop them in the kernel): every call counted, every byte; under ASan
        # its runtime's malloc replaces libc's, which is then never called (nothing to count)
        if "san" not in os.path.basename(os.environ.get("GG_BUILD", "build")):
            mallocs = of("tp_alloc", "malloc")
            frees = of("tp_alloc", "free")
            check(sum(v["count"] for v in mallocs) == th["tp_alloc"]["n"] == 1000 and
                  sum(v["mem.size"] for v in mallocs) == 1000 * 12345 and
                  all(v["event.type"] == "mem" for v in mallocs), "mallocs: %s" % mallocs)
            # the thread's exit frees a few of its own (thread-local storage) after the loop
            check(1000 <= sum(v["count"] for v in frees) <= 1010 and all("mem.size" not in v for v in frees),
                  "frees: %s" % frees)
            in_calls = sum(v["duration"] for v in mallocs)
            check(0 < in_calls <= th["tp_alloc"]["total_ns"] / 1e6, "time in malloc %.3f ms, the loop %.3f ms" %
                  (in_calls, th["tp_alloc"]["total_ns"] / 1e6))

        # the Python process's three full collections (python_gc: CPython's USDT probes), each one event
        gcs = [v for r, v in channel if r["thread.tgid"] == py_pid and v["event.name"] == "python_gc" and
               v["gc.generation"] == 2]
        check(len(gcs) == 3 and all(v["count"] == 1 and v["event.type"] == "python_gc" for v in gcs),
              "collections: %s" % gcs)
        for i in range(3):  # the probes are inside gc.collect(): the collection, not the call around it
            got, want = gcs[i]["duration"], gc_ns[i] / 1e6
            check(0.8 * want - 2 <= got <= want + 1, "gc.collect %d: probe %.3f ms, program %.3f ms" % (i, got, want))

        # the timeline: Chrome trace event files that parse, with the same spans and named tracks
        files = sorted(glob.glob(os.path.join(outdir, "timeline-trace-*.json")))
        check(files, "timeline files in %s: %s" % (outdir, os.listdir(outdir) if os.path.isdir(outdir) else None))
        spans, names = [], {}
        for path in files:
            with open(path) as f:
                doc = json.load(f)
            for e in doc["traceEvents"]:
                if e["ph"] == "X":
                    spans.append(e)
                elif e["ph"] == "M" and e["name"] == "thread_name":
                    names[e["tid"]] = e["args"]["name"]
        check(len(spans) == len(channel), "a span per event: %d vs %d" % (len(spans), len(channel)))
        for thread in ("tp_waiter", "tp_sleeper", "tp_reader", "tp_spinner"):
            check(names.get(th[thread]["tid"]) == thread, "thread_name %s: %s" % (thread, names))
        sp = sorted((e for e in spans if e["tid"] == th["tp_sleeper"]["tid"] and e["name"] == "nanosleep"),
                    key=lambda e: e["ts"])
        check(len(sp) == ROUNDS and all(e["pid"] == inside.pid and e["cat"] == "sched" for e in sp), "spans: %s" % sp)
        for i in range(ROUNDS):
            close_to(sp[i]["dur"] / 1000, th["tp_sleeper"]["ns"][i], "span nanosleep %d" % i)
            check(abs(sp[i]["ts"] / 1000 - sleeps[i]["start_time"]) <= 1, "span start = event start")
        check(not sup.sanitizer_reports(), "sanitizer: %s" % sup.sanitizer_reports())
    finally:
        teardown(inside, outside, py, sup, tmp)


test_tprofiling_ground_truth.timeout = 60


def test_tprofiling_container_scope():
    """snoopers.container_id: the threads of a process in a docker-like cgroup are traced (the kernel half's
    cgroup check, on syscalls and on the switch-in of on-CPU runs), with the container's id in the
    Resource; a copy of the program outside the cgroup is not."""
    tmp = tempfile.mkdtemp(prefix="gg-tprof-")
    sup = Supervisor(extra='event = { out_channel = "logs"; };')
    inside = outside = None
    try:
        with Container() as c:
            sup.start()
            port = rest_port(sup)
            inside = Load(tmp, "in", rounds=1, spawn=c.spawn)
            outside = Load(tmp, "out", rounds=1)
            # every syscall sub-probe (the default set) on raw sys_enter/sys_exit (syscall_hooks raw; the
            # ground-truth test above runs the default, a tracepoint pair per syscall): the stop below is timed
            st, raw = put(port, {"cmd": {"probe": ["oncpu", "syscall_file", "syscall_net", "syscall_lock",
                                                   "syscall_sched"]},
                                 "snoopers": {"container_id": [c.cid()]},
                                 "params": {"profiling_channel": "kafka", "syscall_hooks": "raw"},
                                 "state": "running"})
            check(st == 200, "PUT /tprofiling: %d %s" % (st, raw[:300]))
            # "started:" comes once the programs are attached (the first configuration is read before the load)
            wait_for(lambda: re.search(r"started: .*scope filtered", sup.probe_log("tprofiling")), 20,
                     "tprofiling attached with the scope")
            inside.go()
            outside.go()
            th = inside.result()["threads"]
            outside.result()
            # a stop is quick: the probe exits by itself well within the supervisor's stop grace (2 s, then
            # SIGKILL); with one tracepoint pair per syscall it takes 2-4 s
            def runtime():  # the supervisor's live view (status.json is only rewritten every second)
                st, o, _, _ = rest_call(port, "GET", "/tprofiling")
                return o["runtime"] if st == 200 and o and o["runtime"]["state"] == "stopped" else None
            t_stop = time.monotonic()
            st, raw = put(port, {"state": "stopped"})
            check(st == 200, "PUT stopped: %d %s" % (st, raw[:200]))
            gone = wait_for(runtime, 15, "tprofiling stopped", interval=0.01)
            took = time.monotonic() - t_stop
            print("tprofiling stopped in %.3f s: exit status %s, signal %s" %
                  (took, gone.get("last_exit_status"), gone.get("last_exit_signal")))
            check(gone.get("last_exit_signal") == 0 and gone.get("last_exit_status") == 0,
                  "the probe exited by itself: %s" % gone)
            check(took < 1.0, "tprofiling took %.3f s to stop" % took)
            wait_for(lambda: "stopping:" in sup.probe_log("tprofiling"), 15, "the probe's last words")
            channel = flat(events(sup))
            check(not [r for r, _ in channel if r["thread.tgid"] == outside.pid], "nothing of the process outside")
            mine = [(r, v) for r, v in channel if r["thread.tgid"] == inside.pid]
            sleeps = [v for r, v in mine if r["thread.pid"] == th["tp_sleeper"]["tid"] and
                      v["event.name"] == "nanosleep"]
            check(len(sleeps) == 1, "the sleeper's nanosleep: %s" % sleeps)
            close_to(sleeps[0]["duration"], th["tp_sleeper"]["ns"][0], "nanosleep")
            oncpu = sum(v["duration"] for r, v in mine if r["thread.pid"] == th["tp_spinner"]["tid"] and
                        v["event.name"] == "oncpu")
            cpu_ms = th["tp_spinner"]["total_ns"] / 1e6
            check(0.95 * cpu_ms <= oncpu <= 1.1 * cpu_ms + 5, "spinner on CPU %.1f ms, CPU clock %.1f ms" %
                  (oncpu, cpu_ms))
            check(all(r["container.id"].startswith(c.cid()) for r, _ in mine),
                  "container.id: %s" % {r["container.id"] for r, _ in mine})
            check(not [v for _, v in mine if v["event.type"] not in ("oncpu", "sched", "file", "net", "lock")],
                  "only the sub-probes asked")
            for w in (inside, outside):
                w.finish()
            check(not sup.sanitizer_reports(), "sanitizer: %s" % sup.sanitizer_reports())
    finally:
        teardown(inside, outside, sup, tmp)


test_tprofiling_container_scope.timeout = 60


BUSY = """
import sys, threading, time
def work():
    while True:
        time.sleep(0.0002)
for _ in range(16):
    threading.Thread(target=work, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def test_tprofiling_local_files_budget():
    """--output-max-mb 1 with a flood of events: the event file rotates before 256 KiB, timeline files hold
    at most 128 KiB of spans each, the oldest go first (counted in trace_removed), and the output
    directory never holds more than the budget."""
    tmp = tempfile.mkdtemp(prefix="gg-tprof-budget-")
    out = os.path.join(tmp, "out")
    busy = probe = None
    try:
        busy = subprocess.Popen([DEBIAN_PYTHON, "-c", BUSY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        check(busy.stdout.readline().strip() == "ready", "the busy program started")
        stdout = open(os.path.join(tmp, "probe.out"), "w+")
        stderr = open(os.path.join(tmp, "probe.err"), "w+")
        probe = subprocess.Popen([os.path.join(PROBES, "tprofiling"), "--pid", str(busy.pid), "-P",
                                  "oncpu,syscall_lock,syscall_sched", "--channel", "local", "--output-dir", out,
                                  "--output-max-mb", "1", "--min-aggr-dur", "10", "--min-exec-dur", "0", "-t", "1"],
                                 stdout=stdout, stderr=stderr)
        peak = 0
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            if os.path.isdir(out):
                total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out)
                            if not f.endswith(".tmp") and os.path.isfile(os.path.join(out, f)))
                peak = max(peak, total)
            time.sleep(0.1)
        probe.terminate()
        check(probe.wait(10) == 0, "tprofiling exit status")
        files = sorted(os.listdir(out))
        sizes = {f: os.path.getsize(os.path.join(out, f)) for f in files}
        print("budget 1 MiB: peak %d bytes; files now %s" % (peak, sizes))
        stdout.seek(0)
        stats = records(stdout.read(), "tprofiling_stats")
        print("last stats: %s" % stats[-1:])
        check(peak <= 1 << 20, "the output directory held %d bytes, over the 1 MiB budget" % peak)
        check("tprofiling-events.json.1" in files, "the event file rotated: %s" % files)
        check(all(sizes[f] <= 256 << 10 for f in files if f.startswith("tprofiling-events")), "event files: %s" % sizes)
        traces = [f for f in files if f.startswith("timeline-trace-")]
        check(traces and all(sizes[f] <= (128 << 10) + 65536 for f in traces), "timeline files: %s" % sizes)
        check(sum(sizes[f] for f in traces) <= 512 << 10, "timeline files within half the budget: %s" % sizes)
        removed = int(stats[-1][-1])
        check(removed > 0, "old timeline files removed and counted: %s" % stats[-1:])
        with open(os.path.join(out, traces[-1])) as f:
            check(json.load(f)["traceEvents"], "the newest timeline file parses")
    finally:
        for p in (probe, busy):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["rm", "-rf", tmp])


test_tprofiling_local_files_budget.timeout = 40


def test_tprofiling_uprobes_detach_quickly():
    """pthread_sync and mem_glibc in two processes: 22 uprobes and uretprobes each. Each uprobe detached on
    its own waits for the kernel's grace periods (~75 ms here): the probe took 5 s to stop and the
    supervisor, after its 2 s stop grace, killed it. With multi-uprobe links (one per process and
    direction) it stops within the grace, by itself."""
    tmp = tempfile.mkdtemp(prefix="gg-tprof-up-")
    loads, probe = [], None
    try:
        loads = [Load(tmp, "a", rounds=1), Load(tmp, "b", rounds=1)]
        err = open(os.path.join(tmp, "probe.err"), "w+")
        probe = subprocess.Popen([os.path.join(PROBES, "tprofiling"), "--pid", ",".join(str(w.pid) for w in loads),
                                  "-P", "pthread_sync,mem_glibc", "--syscall-hooks", "raw", "--channel", "kafka",
                                  "-t", "1"], stdout=subprocess.DEVNULL, stderr=err)

        def log():
            err.seek(0)
            return err.read()
        wait_for(lambda: "uprobes in 2 processes" in log(), 20, "uprobes in both processes")
        for w in loads:
            w.go()
        for w in loads:
            w.result()
        t0 = time.monotonic()
        probe.terminate()
        rc = probe.wait(15)
        took = time.monotonic() - t0
        print("tprofiling with uprobes in 2 processes stopped in %.3f s" % took)
        check(rc == 0, "tprofiling exit status %s: %s" % (rc, log()[-600:]))
        check(took < 2.0, "tprofiling took %.3f s to stop (the supervisor's stop grace is 2 s)" % took)
        for w in loads:
            w.finish()
    finally:
        teardown(probe, *loads, tmp)


test_tprofiling_uprobes_detach_quickly.timeout = 40
