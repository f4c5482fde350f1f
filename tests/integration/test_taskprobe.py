"""test_taskprobe.py - taskprobe (proc) on the real kernel against a workload of ours (task_load) that
makes an exact number of file opens, writes, fsyncs, reads, getaddrinfo calls and forks: the counts
must match exactly, latencies must be plausible, and processes outside the scope must not appear."""
import os
import re
import select
import shutil
import subprocess
import tempfile
import time

from harness import (PROBES, ROOT, TEST_BINS, StandaloneProbe, Supervisor, cgroup2_root, check, meta_fields,
                     probe_entry, put_running, rest_put_conf, rest_supervisor, stop_with_line, teardown, wait_for)

TASKPROBE = os.path.join(PROBES, "taskprobe")
TASK_LOAD = os.path.join(TEST_BINS, "task_load")


FIELDS = meta_fields(os.path.join(ROOT, "schema", "taskprobe.meta"))
ALL_SUBS = "base_metrics,proc_syscall,proc_fs,proc_io,proc_dns,proc_pagecache"
# the supervisor's built-in event table (supervisor/export/events.c)
FIELDS["event_v2"] = ["entity_name", "entity_id", "metric", "severity", "body", "body_zh", "labels", "event_type"]


class Probe(StandaloneProbe):
    """taskprobe run by hand; event_v2 records get the tgid of their entity."""

    def __init__(self, args):
        super().__init__(TASKPROBE, args, FIELDS, on_record=self._event_tgid)

    @staticmethod
    def _event_tgid(rec):
        if rec["table"] == "event_v2":
            rec["tgid"] = rec["entity_id"]

    def records(self, table=None):
        """The per-process records (every table but the probe's own taskprobe_stats: None)."""
        return [r for r in self.rows(table) if r["table"] != "taskprobe_stats"]

    def wait_value(self, table, tgid, pred, timeout, what):
        def ok():
            r = self.latest(table, tgid)
            return r if r and pred(r) else None
        try:
            return wait_for(ok, timeout, what)
        except Exception:
            raise AssertionError("%s; last %s record: %r; log: %s" % (what, table, self.latest(table, tgid),
                                                                     self.stderr()[-1500:]))


class Workload:
    """task_load: commands on stdin, "ok <command>" on stdout when done. With comm, it runs under that
    name (exec'ed through a symbolic link so named): tests that select processes by name use a name of
    their own, as other test runs start task_load processes at the same time."""

    def __init__(self, comm=None):
        self.link_dir = None
        binary = TASK_LOAD
        if comm:
            self.link_dir = tempfile.mkdtemp(prefix="gg-tl-")
            binary = os.path.join(self.link_dir, comm)
            os.symlink(TASK_LOAD, binary)
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        line = self._readline(5)
        check(line.startswith("ready "), "task_load ready: %r" % line)
        self.pid = self.proc.pid

    def _readline(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        check(r, "task_load answered within %ss" % timeout)
        return self.proc.stdout.readline()

    def cmd(self, line, timeout=20):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self._readline(timeout)
        check(reply.strip() == "ok " + line, "task_load %r -> %r" % (line, reply))

    def close(self):
        stop_with_line(self.proc, "exit")
        if self.link_dir:
            shutil.rmtree(self.link_dir, ignore_errors=True)


def unique_comm():
    return "tl%d" % os.getpid()


def block_backed_dir():
    """A writable directory on a block device (so fsync'ed writes reach the block layer), or None."""
    for d in ("/var/tmp", "/root", "/tmp"):
        try:
            st = os.stat(d)
        except OSError:
            continue
        if os.major(st.st_dev) != 0 and os.access(d, os.W_OK):
            return d
    return None


def n(rec, field):
    return float(rec[field])


def test_counts_match_workload_exactly():
    io_dir = block_backed_dir() or tempfile.gettempdir()
    w = Workload()
    other = Workload()
    p = Probe(["-t", "1", "--pid", str(w.pid), "-P", ALL_SUBS])
    try:
        p.wait_started()
        N, SIZE = 25, 4096
        w.cmd("io %d %d %s" % (N, SIZE, io_dir))
        other.cmd("io %d %d %s" % (N, SIZE, io_dir))
        fs = p.wait_value("proc_fs", w.pid, lambda r: int(r["fsync_count"]) >= N, 10, "proc_fs after io")
        # one report later the counters must not have moved: nothing else touched a regular file
        time.sleep(1.5)
        fs = p.latest("proc_fs", w.pid)
        check((fs["open_count"], fs["write_count"], fs["fsync_count"], fs["read_count"]) == ("1", str(N), str(N), str(N)),
              "exactly 1 open, %d writes, %d fsyncs, %d reads: %r" % (N, N, N, fs))
        check(100 <= n(fs, "read_ns") / N <= 100e6, "read latency plausible: %r ns" % (n(fs, "read_ns") / N))
        check(100 <= n(fs, "write_ns") / N <= 1e9, "write latency plausible: %r ns" % (n(fs, "write_ns") / N))
        check(1000 <= n(fs, "fsync_ns") / N <= 5e9, "fsync latency plausible: %r ns" % (n(fs, "fsync_ns") / N))
        sc = p.latest("proc_syscall", w.pid)
        # 3N file calls + open/close/unlink + the stdin reads and stdout writes of the protocol
        check(int(sc["syscall_count"]) >= 3 * N + 3, "syscalls counted: %r" % sc)
        if os.major(os.stat(io_dir).st_dev) != 0:
            io = p.wait_value("proc_io", w.pid, lambda r: int(r["bio_write_bytes"]) >= N * SIZE, 5,
                              "fsync'ed data written by the process at the block layer")
            check(0 < n(io, "bio_latency") or int(io["greater_4k_io_write"]) + int(io["less_4k_io_write"]) > 0,
                  "block requests counted: %r" % io)

        w.cmd("dns 7 3")
        dns = p.wait_value("proc_dns", w.pid, lambda r: int(r["gethostname_count"]) >= 10, 10, "proc_dns")
        time.sleep(1.2)
        dns = p.latest("proc_dns", w.pid)
        check(dns["gethostname_count"] == "10" and dns["gethostname_failed"] == "3",
              "10 getaddrinfo calls, 3 failed: %r" % dns)
        check(0 < n(dns, "gethostname_ns") / 10 <= 50e6, "getaddrinfo latency plausible: %r" % dns)

        w.cmd("fork 5")
        w.cmd("sleep 300")
        cpu = p.wait_value("proc_cpu", w.pid, lambda r: int(r["fork_count"]) >= 5 and n(r, "offcpu_ns") >= 0.3e9,
                           10, "forks and off-CPU time")
        check(cpu["fork_count"] == "5", "exactly 5 forks: %r" % cpu)

        tgids = {r["tgid"] for r in p.records()}
        check(tgids == {str(w.pid)}, "only the process in scope appears: %r (other workload %d)" % (tgids, other.pid))
        check(not p.bad, "every record matches schema/taskprobe.meta: %r" % p.bad[:3])
    finally:
        w.close()
        other.close()
        rc, log = p.stop()
    check(rc == 0, "taskprobe exits 0 on SIGTERM: %r %s" % (rc, log[-1500:]))


test_counts_match_workload_exactly.timeout = 90


def test_events_latency_and_offline():
    w = Workload()
    p = Probe(["-t", "1", "--pid", str(w.pid), "-P", "proc_syscall,base_metrics", "-e", "--latency-thr", "50",
               "--offline-thr", "100"])
    try:
        p.wait_started()
        # the workload's blocking read of its next command is a slow syscall too: send the sleep at once
        w.cmd("sleep 200")
        ev = p.wait_value("event_v2", w.pid, lambda r: r["metric"] == "syscall_max_ns", 5, "syscall latency event")
        m = re.search(r"syscall ([0-9]+) took ([0-9.]+) ms", ev["body"])
        nr, took = int(m.group(1)), float(m.group(2))
        check(190 <= took <= 2000 and "above latency_thr 50 ms" in ev["body"] and ev["entity_name"] == "proc"
              and ev["severity"] == "WARN" and ev["body_zh"] and ev["event_type"] == "sys",
              "latency event about the 200 ms sleep: %r" % ev)
        if os.uname().machine == "x86_64":
            check(nr in (35, 230), "the slow syscall is nanosleep or clock_nanosleep: %r" % ev["body"])
        check(ev["labels"] == "comm=task_load&tgid=%d" % w.pid, "event labels: %r" % ev["labels"])
        check(not p.records("proc_io") and not p.records("proc_dns"), "-P limits the tables")
        pid = w.pid
        w.close()
        off = p.wait_value("event_v2", pid, lambda r: r["metric"] == "offline", 6, "offline event")
        for e in p.records("event_v2"):
            if e["metric"] == "syscall_max_ns":
                took = float(re.search(r"took ([0-9.]+) ms", e["body"]).group(1))
                check(took >= 50, "no latency event below latency_thr: %r" % e)
        gone = int(re.search(r"offline for ([0-9]+) ms", off["body"]).group(1))
        check(gone >= 100 and "task_load" in off["body"], "offline event after offline_thr: %r" % off)
    finally:
        w.close()
        p.stop()


test_events_latency_and_offline.timeout = 60


def test_comm_scope_follows_new_processes():
    comm = unique_comm()
    p = Probe(["-t", "1", "--comm", comm, "-P", "proc_fs"])
    io_dir = tempfile.mkdtemp(prefix="gg-tl-")
    w = None
    try:
        p.wait_started()
        w = Workload(comm)  # started after the probe: found by the rescan
        deadline = time.monotonic() + 10
        while not p.latest("proc_fs", w.pid) and time.monotonic() < deadline:
            w.cmd("io 1 512 %s" % io_dir)
            time.sleep(0.5)
        check(p.latest("proc_fs", w.pid), "new task_load in scope: %s" % p.stderr()[-1000:])
        # once in scope, its calls are counted exactly: wait for a steady value, then 3 writes more
        time.sleep(1.2)
        base = p.latest("proc_fs", w.pid)
        w.cmd("io 3 512 %s" % io_dir)
        rec = p.wait_value("proc_fs", w.pid, lambda r: int(r["write_count"]) >= int(base["write_count"]) + 3, 5,
                           "3 more writes")
        time.sleep(1.2)
        rec = p.latest("proc_fs", w.pid)
        check(int(rec["write_count"]) - int(base["write_count"]) == 3 and
              int(rec["open_count"]) - int(base["open_count"]) == 1, "exact counts: %r then %r" % (base, rec))
        check({r["comm"] for r in p.records()} == {comm}, "only the processes named %s appear" % comm)
    finally:
        teardown(w, p, io_dir)


test_comm_scope_follows_new_processes.timeout = 60




def test_cgroup_scope_filters_in_kernel():
    root = cgroup2_root()
    check(root is not None, "cgroup2 is mounted")
    cg = os.path.join(root, "gg-test-%d" % os.getpid())
    os.mkdir(cg)
    inside = outside = p = None
    io_dir = tempfile.mkdtemp(prefix="gg-tl-")
    try:
        inside = Workload()
        outside = Workload()
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(inside.pid))
        p = Probe(["-t", "1", "--cgroup", cg, "-P", "proc_fs,proc_syscall"])
        p.wait_started()
        inside.cmd("io 4 512 %s" % io_dir)
        outside.cmd("io 4 512 %s" % io_dir)
        rec = p.wait_value("proc_fs", inside.pid, lambda r: int(r["write_count"]) >= 4, 6, "process in the cgroup")
        check(rec["write_count"] == "4" and rec["open_count"] == "1", "exact counts: %r" % rec)
        time.sleep(1.2)
        check({r["tgid"] for r in p.records()} == {str(inside.pid)},
              "only the cgroup's process: %r" % {r["tgid"] for r in p.records()})
    finally:
        for w in (inside, outside):
            if w:
                w.close()
        if p:
            p.stop()
        # the workloads have exited: the cgroup is empty
        wait_for(lambda: not open(os.path.join(cg, "cgroup.procs")).read().strip(), 5, "empty cgroup")
        os.rmdir(cg)
        shutil.rmtree(io_dir, ignore_errors=True)


test_cgroup_scope_filters_in_kernel.timeout = 60


def test_under_supervisor_records_validate():
    w = Workload()
    io_dir = tempfile.mkdtemp(prefix="gg-tl-")
    s = Supervisor(probes=[probe_entry("taskprobe", "-t 1 --pid %d -P %s" % (w.pid, ALL_SUBS),
                                           params={"report_period": 1})]).start()
    try:
        s.wait_probe("taskprobe", lambda p: p["config_version_applied"] == 1, 15, "config applied")
        w.cmd("io 6 4096 %s" % io_dir)
        w.cmd("dns 2 1")

        def fs_rec():
            recs = [r for r in s.metric_records("proc_fs") if str(r["tgid"]) == str(w.pid)]
            return recs[-1] if recs and recs[-1]["fsync_count"] == 6 else None
        rec = wait_for(fs_rec, 10, "proc_fs through the supervisor")
        check(rec["read_count"] == 6 and rec["open_count"] == 1, "exact counts: %r" % rec)
        wait_for(lambda: [r for r in s.metric_records("proc_dns") if r.get("gethostname_count") == 3], 10,
                 "proc_dns through the supervisor")
        p = s.probe("taskprobe")
        check(p["rejected_total"] == 0, "no record rejected by the schema: %r" % p.get("rejected_by_table"))
        check(p["ipc_lost_batches"] == 0, "nothing lost over IPC")
        tables = {r["table_name"] for r in s.metric_records()}
        for t in ("proc_cpu", "proc_syscall", "proc_syscall_io", "proc_fs", "proc_io", "proc_page", "proc_dns"):
            check(t in tables, "table %s arrived: %r" % (t, sorted(tables)))
    finally:
        teardown(w, s, io_dir)


test_under_supervisor_records_validate.timeout = 60


def test_bad_arguments_refused():
    for args, word in ((["-t", "0"], "-t"), (["-P", "nope"], "nope"), (["--pid", "x"], "--pid"),
                       (["--cgroup", "/nonexistent"], "--cgroup"), (["--latency-thr", "-1"], "--latency-thr")):
        r = subprocess.run([TASKPROBE] + args, capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and word in r.stderr, "%r refused: %r %r" % (args, r.returncode, r.stderr))
    r = subprocess.run([TASKPROBE, "--help"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and "proc_pagecache" in r.stdout, "--help")


def test_rest_snoopers_scope_and_live_subprobes():
    """PUT /proc through the supervisor's REST API: the snoopers become the probe's scope, sub-probes
    switch live without a restart."""
    from harness import rest_call, rest_port
    comm = unique_comm()
    w1, w2 = Workload(comm), Workload(comm)
    tmp = tempfile.mkdtemp(prefix="gg-tp-rest-")
    # REST takes report_period >= 5 s for proc (the seed's range): the 1 s period comes from the flags
    s = rest_supervisor(tmp, "taskprobe")

    def tgids(table):
        return {str(r["tgid"]) for r in s.metric_records(table)}
    try:
        port = rest_port(s)
        pid = put_running(s, "proc", "taskprobe", {"cmd": {"probe": ["proc_fs"]}, "snoopers": {"proc_id": [w1.pid]},
                                                   "state": "running"}, 15)["pid"]
        w1.cmd("io 3 512 %s" % tmp)
        w2.cmd("io 3 512 %s" % tmp)
        wait_for(lambda: str(w1.pid) in tgids("proc_fs"), 10, "snooped process in proc_fs")
        time.sleep(1.2)
        check(tgids("proc_fs") == {str(w1.pid)}, "only the snooped pid: %r" % tgids("proc_fs"))
        check(not s.metric_records("proc_dns"), "proc_dns is off")

        # live: other sub-probe, snoopers by name (both workloads)
        # comm is a regular expression (gala-gopher): anchored on this run's unique name
        rest_put_conf(port, "proc", {"cmd": {"probe": ["proc_dns"]},
                                     "snoopers": {"proc_name": [{"comm": "^%s$" % comm}]}})
        wait_for(lambda: s.probe("taskprobe")["config_version_applied"] >= 2, 10, "second configuration applied")
        st, doc, raw, _ = rest_call(port, "GET", "/proc")
        check(sorted(doc["runtime"]["scope"]["pids"]) == sorted([w1.pid, w2.pid]), "scope resolved: %s" % raw[:600])
        check(s.probe("taskprobe")["pid"] == pid, "applied live, same process")
        w1.cmd("dns 2 0")
        w2.cmd("dns 4 1")

        def dns():
            got = {str(r["tgid"]): r for r in s.metric_records("proc_dns")}
            ok = (got.get(str(w1.pid), {}).get("gethostname_count") == 2 and
                  got.get(str(w2.pid), {}).get("gethostname_count") == 5)
            return got if ok else None
        got = wait_for(dns, 10, "both task_load processes in proc_dns")
        check(got[str(w2.pid)]["gethostname_failed"] == 1, "failures: %r" % got[str(w2.pid)])
        n = len(s.metric_records("proc_fs"))
        time.sleep(2.2)
        check(len(s.metric_records("proc_fs")) <= n + 2, "proc_fs stopped with its sub-probe")
        check(s.probe("taskprobe")["rejected_total"] == 0, "nothing rejected")
    finally:
        teardown(w1, w2, s, tmp)


test_rest_snoopers_scope_and_live_subprobes.timeout = 60


def attached_tracepoints(pid):
    """Names of the raw tracepoints the BPF links held by process pid are attached to (from the links'
    /proc/<pid>/fdinfo: link_type raw_tracepoint, tp_name), with their counts."""
    names = {}
    fd_dir = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                info = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue
        if info.get("link_type") == "raw_tracepoint":
            names[info["tp_name"]] = names.get(info["tp_name"], 0) + 1
    return names


def test_default_subprobes_leave_syscall_tracepoints_alone():
    """Without -P the syscall tracepoints (whose mere use slows every syscall of the host) are not
    attached; proc_syscall turned on by a live configuration attaches them, turned off detaches them,
    in the same probe process."""
    from harness import rest_port
    syscall_tps = {"sys_enter", "sys_exit"}
    p = Probe(["-t", "1", "--pid", "1"])
    try:
        p.wait_started()
        tps = attached_tracepoints(p.proc.pid)
        check("sched_switch" in tps and "block_rq_complete" in tps, "default hooks attached: %r" % tps)
        check(not syscall_tps & set(tps), "no syscall tracepoint by default: %r" % tps)
        check(not {"mm_filemap_add_to_page_cache", "block_dirty_buffer"} & set(tps), "page cache is opt-in: %r" % tps)
        check("sub-probes base_metrics,proc_io,proc_dns," in p.stderr(), "logged default set: %s" % p.stderr())
    finally:
        p.stop()

    w = Workload()
    tmp = tempfile.mkdtemp(prefix="gg-tp-def-")
    s = rest_supervisor(tmp, "taskprobe")

    def applied(v):
        return s.wait_probe("taskprobe", lambda pr: pr["config_version_applied"] >= v and pr["pid"], 15,
                            "configuration %d applied" % v)["pid"]
    try:
        port = rest_port(s)
        rest_put_conf(port, "proc", {"snoopers": {"proc_id": [w.pid]}, "state": "running"})
        pid = applied(1)
        wait_for(lambda: "sched_switch" in attached_tracepoints(pid), 5, "default hooks attached")
        tps = attached_tracepoints(pid)
        check("sched_switch" in tps and not syscall_tps & set(tps), "no \"probe\": default set: %r" % tps)
        w.cmd("sleep 50")
        wait_for(lambda: [r for r in s.metric_records("proc_cpu") if str(r["tgid"]) == str(w.pid)], 10,
                 "proc_cpu of the snooped process")
        check(not s.metric_records("proc_syscall"), "no proc_syscall records by default")

        rest_put_conf(port, "proc", {"cmd": {"probe": ["proc_syscall", "base_metrics"]},
                                     "snoopers": {"proc_id": [w.pid]}})
        check(applied(2) == pid, "applied live, same process")
        # the main loop attaches right after the configuration is accepted
        wait_for(lambda: attached_tracepoints(pid).get("sys_enter") == 1, 5, "sys_enter attached")
        tps = attached_tracepoints(pid)
        check(tps.get("sys_enter") == 1 and tps.get("sys_exit") == 1, "proc_syscall attaches them once: %r" % tps)
        w.cmd("io 2 512 %s" % tmp)
        wait_for(lambda: [r for r in s.metric_records("proc_syscall") if str(r["tgid"]) == str(w.pid)
                          and r["syscall_count"] > 0], 10, "proc_syscall records of the snooped process")

        rest_put_conf(port, "proc", {"cmd": {"probe": ["base_metrics"]}, "snoopers": {"proc_id": [w.pid]}})
        check(applied(3) == pid, "applied live, same process")
        wait_for(lambda: "sys_enter" not in attached_tracepoints(pid), 5, "sys_enter detached")
        tps = attached_tracepoints(pid)
        check(not syscall_tps & set(tps) and "sched_switch" in tps, "proc_syscall off detaches them: %r" % tps)
        check(s.probe("taskprobe")["rejected_total"] == 0, "nothing rejected")
    finally:
        teardown(w, s, tmp)


test_default_subprobes_leave_syscall_tracepoints_alone.timeout = 60
