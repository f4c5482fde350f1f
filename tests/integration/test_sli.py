"""test_sli.py - sliprobe under the supervisor, started through the REST API, against ground truth the
test makes itself in its own cgroup v2 (named like a docker container so that sliprobe reports it):
run-queue delay of CPU-bound processes against the run_delay of /proc/<pid>/schedstat, reclaim stalls
of a memory cgroup with a tight limit, and bio latency against biolatency on a loop device."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse

from harness import (LoopFs, Supervisor, TestFailure, check, rest_call, rest_port, rest_section, wait_for)

NCPU = os.cpu_count() or 1


def cgroup2_root():
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if p[2] == "cgroup2":
                return p[1]
    raise TestFailure("no cgroup2 mount")


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
        self.parent = os.path.join(self.root, "gg-sli-%d-%d" % (os.getpid(), Container.seq))
        self.path = os.path.join(self.parent, "docker-%s.scope" % self.id)
        self.rel = self.path[len(self.root):]
        self.mem_max = mem_max
        self.memcg = None
        self.procs = []

    def __enter__(self):
        os.mkdir(self.parent)
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

    def __init__(self, conf):
        self.tmp_state = None
        self.sup = None
        self.conf = conf

    def __enter__(self):
        import tempfile
        self.tmp_state = tempfile.mkdtemp(prefix="gg-sli-state-")
        self.sup = Supervisor(extra=rest_section(self.tmp_state)).start()
        port = rest_port(self.sup)
        body = urllib.parse.urlencode({"json": json.dumps(self.conf)})
        st, doc, raw, _ = rest_call(port, "PUT", "/sli", body)
        check(st == 200, "PUT /sli: %d %s" % (st, raw[:400]))
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
