"""test_sli.py - sliprobe under the supervisor, started through the REST API, against ground truth the
test makes itself in its own cgroup v2 (named like a docker container so that sliprobe reports it):
run-queue delay of CPU-bound processes against the run_delay of /proc/<pid>/schedstat, reclaim stalls
of a memory cgroup with a tight limit, and bio latency against biolatency on a loop device."""
import hashlib
import os
import shutil
import subprocess
import sys
import time

import tempfile

from harness import (Supervisor, TestFailure, cgroup2_root, check, probe_entry, rest_call, rest_port, rest_put_conf,
                     rest_section, wait_for)

NCPU = os.cpu_count() or 1




def v1_mount(controller):
    """Mount point of a cgroup v1 hierarchy with this controller, or None (a pure cgroup v2 host)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if p[2] == "cgroup" and controller in p[3].split(","):
                return p[1]
    return None


class Container:
    """A cgroup v2 <root>/gg-sli-<pid>-<n>/docker-<64 hex>.scope (unique per run; removed on exit),
    optionally with a memory limit (cgroup v2 memory.max, or a v1 memory cgroup beside it)."""
    seq = 0

    def __init__(self, mem_max=None):
        Container.seq += 1
        tag = "%d-%d-%f" % (os.getpid(), Container.seq, time.time())
        self.id = hashlib.sha256(tag.encode()).hexdigest()
        self.root = cgroup2_root()
        check(self.root is not None, "no cgroup2 mount")
        self.parent = os.path.join(self.root, "gg-sli-%d-%d" % (os.getpid(), Container.seq))
        self.path = os.path.join(self.parent, "docker-%s.scope" % self.id)
        self.rel = self.path[len(self.root):]
        self.mem_max = mem_max
        self.memcg = None
        self.procs = []

    def __enter__(self):
        os.mkdir(self.parent)
        if self.mem_max:  # cgroup v2: the memory controller for the child (a no-op on a hybrid host)
            try:
                with open(os.path.join(self.parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory")
            except OSError:
                pass
        os.mkdir(self.path)
        if self.mem_max:
            if os.path.exists(os.path.join(self.path, "memory.max")):
                self.memcg = self.path
                with open(os.path.join(self.path, "memory.max"), "w") as f:
                    f.write(str(self.mem_max))
            else:
                m = v1_mount("memory")
                check(m is not None, "a memory controller (cgroup v2 or v1)")
                self.memcg = os.path.join(m, "gg-sli-%d-%d" % (os.getpid(), Container.seq))
                os.mkdir(self.memcg)
                with open(os.path.join(self.memcg, "memory.limit_in_bytes"), "w") as f:
                    f.write(str(self.mem_max))
        return self

    def cid(self):
        return self.id[:12]

    def _join(self):
        pid = str(os.getpid())
        for d in filter(None, {self.path, self.memcg}):
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(pid)

    def spawn(self, argv, **kw):
        """A process that joins the cgroup(s) between fork and exec."""
        p = subprocess.Popen(argv, preexec_fn=self._join, **kw)
        self.procs.append(p)
        return p

    def memory_stat(self):
        with open(os.path.join(self.memcg, "memory.stat")) as f:
            return {k: int(v) for k, v in (line.split() for line in f)}

    def failcnt(self):
        with open(os.path.join(self.memcg, "memory.failcnt")) as f:
            return int(f.read())

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for d in filter(None, (self.path, self.memcg, self.parent)):
            def gone(d=d):
                try:
                    os.rmdir(d)
                    return True
                except FileNotFoundError:
                    return True
                except OSError:
                    return False
            wait_for(gone, 10, "rmdir " + d, interval=0.1)
        return False


class Sli:
    """The supervisor with the REST API, sliprobe turned on with PUT /sli."""

    def __init__(self, conf, probes=()):
        self.tmp_state = None
        self.sup = None
        self.conf = conf
        self.probes = probes

    def __enter__(self):
        self.tmp_state = tempfile.mkdtemp(prefix="gg-sli-state-")
        self.sup = Supervisor(probes=self.probes, extra=rest_section(self.tmp_state)).start()
        port = rest_port(self.sup)
        rest_put_conf(port, "sli", self.conf)
        self.port = port
        # attached once the probe confirms its configuration
        def confirmed():
            st, doc, raw, _ = rest_call(port, "GET", "/sli")
            return doc if st == 200 and doc and doc.get("runtime", {}).get("config_confirmed") else None
        wait_for(confirmed, 20, "sliprobe confirms its configuration", interval=0.1)
        return self

    def rows(self, table, after_ms=0, **keys):
        return [r for r in self.sup.metric_records(table) if r["timestamp"] > after_ms and
                all(str(r.get(k)) == v for k, v in keys.items())]

    def wait_row(self, table, after_ms, what, timeout=20, **keys):
        return wait_for(lambda: (self.rows(table, after_ms, **keys) or [None])[-1], timeout, what, interval=0.2)

    def __exit__(self, *exc):
        if exc[0] is not None and self.sup:
            print(self.sup.probe_log("sliprobe")[-3000:], file=sys.stderr)
        if self.sup:
            self.sup.cleanup()
        if self.tmp_state:
            shutil.rmtree(self.tmp_state, ignore_errors=True)
        return False


def hist_count(value):
    p = value.split()
    return int(p[-1])


BUSY = "import sys, time\ne = time.time() + %f\nwhile time.time() < e: pass\nsys.stdout.write('done\\n')\n" \
       "sys.stdout.flush()\nsys.stdin.read()\n"


def schedstat(pid):
    """(on-CPU ns, run-queue delay ns, timeslices) of every thread of pid, summed."""
    tot = [0, 0, 0]
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
            for i, v in enumerate(f.read().split()[:3]):
                tot[i] += int(v)
    return tot


def test_sli_cpu_rundelay_matches_schedstat():
    n = 2 * NCPU  # more runnable processes than CPUs: each waits on the run queue about half the time
    conf = {"cmd": {"probe": ["cpu", "node", "container", "histogram"]}, "params": {"report_period": 5},
            "state": "running"}
    with Container() as c, Sli(conf) as s:
        t0 = time.time() * 1000
        workers = [c.spawn([sys.executable, "-c", BUSY % 4.0], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True) for _ in range(n)]
        busy = s.wait_row("sli_cpu_container_stat", t0, "a busy report", timeout=20, container_id=c.cid())
        for w in workers:
            check(w.stdout.readline() == "done\n", "worker finished its busy loop")
        time.sleep(0.2)  # every worker is blocked in read(2) now: nothing more accrues on either side
        truth = [schedstat(w.pid) for w in workers]
        t1 = time.time() * 1000
        g = s.wait_row("sli_cpu_container_gauge", t1, "a report after the workload", timeout=15,
                       container_id=c.cid())
        delay = sum(x[1] for x in truth)
        ours = float(g["cpu_rundelay"])
        print("  %d busy processes on %d CPUs: run_delay sum %.3f s (schedstat), cpu_rundelay %.3f s (sliprobe), "
              "cpu_wait %.3f s, cpu_sleep %.3f s" % (n, NCPU, delay / 1e9, ours / 1e9, float(g["cpu_wait"]) / 1e9,
                                                     float(g["cpu_sleep"]) / 1e9))
        check(delay > 0.5e9, "the workload waited on the run queue: %d ns" % delay)
        check(abs(ours - delay) <= 0.10 * delay, "cpu_rundelay %d ns vs schedstat %d ns (10 %%)" % (ours, delay))
        check(float(g["cpu_wait"]) <= ours, "preemption wait is part of the run-queue delay")
        check(g["cgroup_path"] == c.rel, "cgroup path %r vs %r" % (g["cgroup_path"], c.rel))
        h = s.wait_row("sli_cpu_container_histogram", t1, "histogram", container_id=c.cid())
        slices = sum(x[2] for x in truth)
        check(0 < hist_count(h["cpu_rundelay_histo"]) <= slices + n,
              "run-queue waits %d <= timeslices %d" % (hist_count(h["cpu_rundelay_histo"]), slices))
        check(float(busy["cpu_cores"]) == NCPU, "cores: %r" % busy)
        node = s.wait_row("sli_cpu_node_gauge", t1, "node gauge", sli_node_key="sli_node_key")
        check(float(node["cpu_rundelay"]) >= ours, "the node's delay includes the container's")


test_sli_cpu_rundelay_matches_schedstat.timeout = 90


def test_sli_memcg_reclaim_stall():
    """A memory cgroup limited to 32 MiB and a process in it that reads a 128 MiB file through the page
    cache: the cgroup must reclaim its own (clean) pages, in the reader's context (memcg reclaim). Every
    memcg reclaim follows a charge that failed against the limit, and each failed charge is counted in
    memory.failcnt (v1) or memory.events max (v2) before its reclaim: so reclaims <= failed charges, and
    about equal in practice.
    (Writing the file instead leaves dirty pages that a cgroup v1 limit cannot write back in time: the
    writer is OOM-killed.)"""
    conf = {"cmd": {"probe": ["mem", "container", "histogram"]}, "params": {"report_period": 5},
            "state": "running"}
    d = tempfile.mkdtemp(prefix="gg-sli-mem-", dir="/var/tmp")
    try:
        path = os.path.join(d, "fill")
        with open(path, "wb") as f:
            chunk = b"x" * (1 << 20)
            for _ in range(128):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # read again from the disk
        with Container(mem_max=32 << 20) as c, Sli(conf) as s:
            w = c.spawn(["dd", "if=" + path, "of=/dev/null", "bs=1M"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE)
            rc = w.wait(60)
            check(rc == 0, "dd in the cgroup: %d %s" % (rc, w.stderr.read()))
            if os.path.exists(os.path.join(c.memcg, "memory.failcnt")):
                failed = c.failcnt()
            else:
                with open(os.path.join(c.memcg, "memory.events")) as f:
                    failed = int(dict(line.split() for line in f).get("max", 0))
            t1 = time.time() * 1000
            g = s.wait_row("sli_mem_container_gauge", t1, "a report after the reader", container_id=c.cid())
            h = s.wait_row("sli_mem_container_histogram", t1, "histogram", container_id=c.cid())
            n = hist_count(h["mem_reclaim_histo"])
            print("  128 MiB read under a 32 MiB limit: %d reclaims, %.3f ms in reclaim, %d failed charges"
                  % (n, float(g["mem_reclaim"]) / 1e6, failed))
            check(float(g["mem_reclaim"]) > 0 and n > 0, "reclaim time and count: %r %r" % (g, h))
            # in practice one reclaim per failed charge; a charge may fail without reclaiming (a task
            # being killed, a charge that may not sleep), hence the slack below
            check(0.5 * failed <= n <= failed, "reclaims %d vs failed charges %d" % (n, failed))
            check(float(g["mem_swapin"]) == 0, "swap-in is not measured")
    finally:
        shutil.rmtree(d, ignore_errors=True)


test_sli_memcg_reclaim_stall.timeout = 90


class RawLoop:
    """A loop device on a sparse file of its own, used raw (no file system: every request on it is
    the test's own)."""

    def __init__(self, size_mb=64):
        self.dir = tempfile.mkdtemp(prefix="gg-sli-loop-")
        self.image = os.path.join(self.dir, "image")
        self.dev = None

    def __enter__(self):
        with open(self.image, "wb") as f:
            f.truncate(64 << 20)
        r = subprocess.run(["losetup", "--find", "--show", self.image], capture_output=True, text=True)
        check(r.returncode == 0, "losetup: %s" % r.stderr)
        self.dev = r.stdout.strip()
        return self

    def name(self):
        return os.path.basename(self.dev)

    def majmin(self):
        st = os.stat(self.dev)
        return os.major(st.st_rdev), os.minor(st.st_rdev)

    def diskstats(self):
        with open("/proc/diskstats") as f:
            for line in f:
                p = line.split()
                if p[2] == self.name():
                    return int(p[3]) + int(p[7])
        raise TestFailure("%s not in /proc/diskstats" % self.dev)

    def __exit__(self, *exc):
        if self.dev:
            subprocess.run(["losetup", "-d", self.dev], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def test_sli_bio_latency_agrees_with_ioprobe():
    """Direct IO on a raw loop device from the container: sliprobe's bio latency of the container
    against ioprobe's total request time on that device over the same requests. Both measure from the
    request's allocation (start_time_ns) to its final block_rq_complete, so: the same count (2 %), and the
    same total time within 10 % plus 1 us per request (ioprobe sums whole microseconds per request)."""
    conf = {"cmd": {"probe": ["io", "container", "histogram"]}, "params": {"report_period": 5},
            "state": "running"}
    with RawLoop() as lo, Container() as c:
        major, minor = lo.majmin()
        with Sli(conf, probes=[probe_entry("ioprobe", "-t 1 -P io_trace -d %s" % lo.name())]) as s:
            s.sup.wait_probe("ioprobe", lambda p: p["state"] == "running" and p["batches"] > 0, 15, "running")

            def io_total(after):
                def idle():
                    a = lo.diskstats()
                    time.sleep(1.5)
                    if lo.diskstats() != a:
                        return None
                    t = time.time() * 1000
                    rows = wait_for(lambda: [r for r in s.rows("io_latency", t, major=str(major),
                                                                first_minor=str(minor))] or None,
                                    8, "io_latency after idle", interval=0.2)
                    last = rows[-1]["timestamp"]
                    rows = [r for r in rows if r["timestamp"] == last]
                    if lo.diskstats() != a:
                        return None
                    return (sum(int(r["count_latency_req"]) for r in rows),
                            sum(float(r["latency_req_sum"]) for r in rows), a)
                return wait_for(idle, 40, "an idle loop device (%s)" % after, interval=0)

            # one request of the test's own, so that ioprobe has a row for the device
            subprocess.run(["dd", "if=" + lo.dev, "of=/dev/null", "bs=4096", "count=1", "iflag=direct"],
                           capture_output=True, check=True)
            n0, us0, d0 = io_total("udev probing")
            for argv in (["dd", "if=" + lo.dev, "of=/dev/null", "bs=4096", "count=3000", "iflag=direct"],
                         ["dd", "if=/dev/zero", "of=" + lo.dev, "bs=16384", "count=1000", "oflag=direct"]):
                w = c.spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                check(w.wait(60) == 0, "%s: %s" % (argv, w.stderr.read()))
            n1, us1, d1 = io_total("the workload")
            t1 = time.time() * 1000
            g = s.wait_row("sli_io_container_gauge", t1, "bio latency", container_id=c.cid())
            h = s.wait_row("sli_io_container_histogram", t1, "bio latency histogram", container_id=c.cid())
            ours_n, ours_ns = hist_count(h["bio_latency_histo"]), float(g["bio_latency"])
            io_n, io_ns = n1 - n0, (us1 - us0) * 1000
            print("  %d requests in diskstats; sliprobe %d requests %.3f ms; ioprobe %d requests %.3f ms"
                  % (d1 - d0, ours_n, ours_ns / 1e6, io_n, io_ns / 1e6))
            check(io_n >= 4000, "ioprobe saw the workload: %d" % io_n)
            check(abs(ours_n - io_n) <= 0.02 * io_n + 2, "request count %d vs ioprobe %d" % (ours_n, io_n))
            check(abs(ours_ns - io_ns) <= 0.10 * io_ns + 1000 * io_n,
                  "total latency %.0f ns vs ioprobe %.0f ns" % (ours_ns, io_ns))


test_sli_bio_latency_agrees_with_ioprobe.timeout = 120


def test_sli_container_id_snooper_scopes_rows():
    """snoopers.container_id (gala-gopher's example form {"container_id": "..."}): only that container's
    cgroup gets rows; another container beside it, busy as well, gets none."""
    with Container() as a, Container() as b:
        conf = {"snoopers": {"container_id": [{"container_id": a.cid()}]}, "params": {"report_period": 5},
                "state": "running"}
        with Sli(conf) as s:
            t0 = time.time() * 1000
            for c in (a, b):
                c.spawn([sys.executable, "-c", BUSY % 1.0], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            g = s.wait_row("sli_cpu_container_gauge", t0, "the snooped container's row", container_id=a.cid())
            check(float(g["cpu_rundelay"]) >= 0 and g["cgroup_path"] == a.rel, "row of a: %r" % g)
            s.wait_row("sli_cpu_container_gauge", g["timestamp"], "a second report", container_id=a.cid())
            others = {r["container_id"] for r in s.rows("sli_cpu_container_gauge")}
            check(others == {a.cid()}, "only the snooped container: %r" % others)


test_sli_container_id_snooper_scopes_rows.timeout = 60


SLEEPER = "import sys, time\nfor _ in range(%d): time.sleep(%f)\nsys.stdout.write('done\\n')\nsys.stdout.flush()\n" \
          "sys.stdin.read()\n"


def test_sli_cpu_sleep_matches_requested_sleeps():
    """Processes that sleep N times T seconds (S state, nanosleep) and then block in read(2): the
    container's cpu_sleep is at least their requested sleep and at most 10 % more (timer slack and
    wakeup latency make each sleep a little longer; the final read is not over, so not counted)."""
    nproc, times, t = 2, 20, 0.05
    conf = {"cmd": {"probe": ["cpu", "container", "histogram"]}, "params": {"report_period": 5},
            "state": "running"}
    with Container() as c, Sli(conf) as s:
        workers = [c.spawn([sys.executable, "-c", SLEEPER % (times, t)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True) for _ in range(nproc)]
        for w in workers:
            check(w.stdout.readline() == "done\n", "sleeper done")
        time.sleep(0.2)
        t1 = time.time() * 1000
        g = s.wait_row("sli_cpu_container_gauge", t1, "a report after the sleeps", container_id=c.cid())
        h = s.wait_row("sli_cpu_container_histogram", t1, "histogram", container_id=c.cid())
        want = nproc * times * t * 1e9
        got = float(g["cpu_sleep"])
        print("  %d x %d sleeps of %.0f ms: cpu_sleep %.3f s (requested %.3f s), %d sleeps counted"
              % (nproc, times, t * 1000, got / 1e9, want / 1e9, hist_count(h["cpu_sleep_histo"])))
        check(want <= got <= 1.10 * want, "cpu_sleep %.0f ns vs requested %.0f ns" % (got, want))
        check(hist_count(h["cpu_sleep_histo"]) >= nproc * times, "every sleep counted")


test_sli_cpu_sleep_matches_requested_sleeps.timeout = 60
