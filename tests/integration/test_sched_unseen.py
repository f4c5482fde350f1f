"""test_sched_unseen.py - the sched_switch probes against the kernel's own clocks, with threads pinned to
each CPU (tests/helpers/sched_truth.c): taskprobe's off-CPU time, stackprobe's off-CPU stacks, autotrace's
D-state gauge and run-queue delays. On some kernels (this VM: every switch out of CPU 1's idle task) a
task waking on an idle CPU comes on it without a sched_switch event; the probes must infer the switch-in
instead of losing the interval or stretching it over run time."""
import os
import select
import shutil
import subprocess
import tempfile
import time

from harness import PROBES, ROOT, TEST_BINS, StandaloneProbe, check, meta_fields
from test_autotrace import d_tasks
from test_stackprobe import folded

SCHED_TRUTH = os.path.join(TEST_BINS, "sched_truth")
TASKPROBE = os.path.join(PROBES, "taskprobe")
STACKPROBE = os.path.join(PROBES, "stackprobe")
AUTOTRACE = os.path.join(PROBES, "autotrace")


class Truth:
    """sched_truth: pinned to cpu, runs its phase on go(), then tells its wall, CPU and run-queue time."""

    def __init__(self, cpu, *args):
        self.proc = subprocess.Popen([SCHED_TRUTH, str(cpu)] + [str(a) for a in args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        check(self._readline(5).startswith("ready"), "sched_truth ready")
        self.pid = self.proc.pid
        self.what = "%s on CPU %d" % (" ".join(str(a) for a in args), cpu)

    def _readline(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        check(r, "sched_truth answered within %ss" % timeout)
        return self.proc.stdout.readline()

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def result(self, timeout=30):
        line = self._readline(timeout)
        r = {k: int(v) for k, v in (f.split("=") for f in line.split())}
        # off CPU: everything the thread did not run; blocked: that less its run-queue waits (a probe
        # that counts from the switch-out to the switch-in lies between)
        r["off"] = r["wall_ns"] - r["cpu_ns"]
        r["blocked"] = r["off"] - r["rundelay_ns"]
        return r

    def close(self):
        try:
            self.proc.stdin.write("exit\n")
            self.proc.stdin.close()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def within(got, r, what):
    """got (ns) between the blocked time and the off-CPU time of r, with 3 % and 2 ms either side. A
    thread never preempted waited on a run queue only after its wakeups, which a probe counts from the
    switch-out to the switch-in: then got is its off-CPU time, within 0.5 % and 3 ms (less than one of
    its 10 ms sleeps)."""
    lo, hi = 0.97 * r["blocked"] - 2e6, 1.03 * r["off"] + 2e6
    if r["nivcsw"] == 0:
        lo, hi = 0.995 * r["off"] - 3e6, 1.005 * r["off"] + 3e6
    print("%s: %.1f ms, truth %.1f..%.1f ms (wall %.1f, cpu %.1f, run-queue %.1f, preempted %d)" %
          (what, got / 1e6, r["blocked"] / 1e6, r["off"] / 1e6, r["wall_ns"] / 1e6, r["cpu_ns"] / 1e6,
           r["rundelay_ns"] / 1e6, r["nivcsw"]))
    check(lo <= got <= hi, "%s: %.1f ms, not within %.1f..%.1f ms" % (what, got / 1e6, lo / 1e6, hi / 1e6))


def test_offcpu_time_and_stacks_match_the_kernel_clocks():
    """50 sleeps of 10 ms on CPU 1 and on CPU 0, and two threads on CPU 1 that sleep 10 ms and spin 4 ms
    40 times each (preempting each other): taskprobe's offcpu_ns and stackprobe's off-CPU weight of the
    nanosleep stacks, per process, against wall - CPU time (and that less the run-queue waits)."""
    tmp = tempfile.mkdtemp(prefix="gg-unseen-")
    ws = [Truth(1, "sleep", 50, 10), Truth(0, "sleep", 50, 10), Truth(1, "mixed", 40, 10, 4),
          Truth(1, "mixed", 40, 10, 4)]
    pids = ",".join(str(w.pid) for w in ws)
    tp = sp = None
    try:
        tp = StandaloneProbe(TASKPROBE, ["-t", "1", "--pid", pids, "-P", "base_metrics"],
                             meta_fields(os.path.join(ROOT, "schema", "taskprobe.meta")))
        sp = StandaloneProbe(STACKPROBE, ["-t", "1", "--pid", pids, "-P", "offcpu", "--svg-period", "600",
                                          "--flame-dir", os.path.join(tmp, "flame")],
                             meta_fields(os.path.join(ROOT, "schema", "stackprobe.meta")))
        tp.wait_started()
        sp.wait_started()
        time.sleep(0.5)
        for w in ws:
            w.go()
        res = [w.result() for w in ws]
        time.sleep(2.5)  # two report periods: every closed interval is in
        cpu = {w.pid: tp.latest("proc_cpu", str(w.pid)) for w in ws}
        tstats = tp.latest("taskprobe_stats")
        rc, log = tp.stop()
        tp = None
        check(rc == 0, "taskprobe exit status %r: %s" % (rc, log[-1500:]))
        rc, log = sp.stop()
        sstats = sp.latest("stackprobe_health")
        sp_bad = sp.bad
        sp = None
        check(rc == 0, "stackprobe exit status %r: %s" % (rc, log[-1500:]))
        print("switch-ins inferred: taskprobe %s, stackprobe %s" %
              (tstats and tstats["offcpu_unseen_in"], sstats and sstats.get("offcpu_unseen_in")))
        st = folded(os.path.join(tmp, "flame"), "offcpu")
        for w, r in zip(ws, res):
            check(cpu[w.pid], "a proc_cpu record of %s" % w.what)
            within(int(cpu[w.pid]["offcpu_ns"]), r, "taskprobe offcpu_ns of %s" % w.what)
            sleeps = sum(v for s, v in st.items() if s.startswith("[%d] " % w.pid) and "nanosleep" in s)
            within(sleeps * 1000, r, "stackprobe nanosleep weight of %s" % w.what)
        check(tstats and sstats and "offcpu_unseen_in" in sstats, "stats records: %r %r" % (tstats, sstats))
        check(not sp_bad, "stackprobe records match its schema: %r" % sp_bad[:3])
    finally:
        for w in ws:
            w.close()
        for p in (tp, sp):
            if p:
                p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


test_offcpu_time_and_stacks_match_the_kernel_clocks.timeout = 60


def test_autotrace_dstate_returns_and_runq_bounded():
    """50 vfork parents on CPU 1 wait in D for a child that sleeps 10 ms on CPU 0 (the parent is woken on
    an idle CPU): autotrace's dstate gauge falls back to what /proc shows in D, and no run-queue delay
    above the run's length is reported."""
    tmp = tempfile.mkdtemp(prefix="gg-unseen-")
    fields = meta_fields(os.path.join(ROOT, "schema", "autotrace.meta"))
    p = StandaloneProbe(AUTOTRACE, ["-t", "1", "-P", "dstate,runq", "--dstate-thr", "100000", "--runq-thr",
                                    "100000000", "--flame-dir", tmp], fields)
    w = None
    try:
        p.wait_started()
        t0 = time.monotonic()
        w = Truth(1, "vfork", 50, 10)
        w.go()
        r = w.result()
        time.sleep(2.5)
        seen = [d_tasks() for _ in range(3)]
        last = p.rows("autotrace_trigger", trigger="dstate")[-1]
        run_us = (time.monotonic() - t0) * 1e6
        runq = [float(x["value"]) for x in p.rows("autotrace_trigger", trigger="runq")]
        health = p.latest("autotrace_health") or {}
        print("dstate %s, /proc %r; runq p99s max %.0f us over a run of %.0f us; inferred: runq %s, dstate %s; "
              "D phase %.1f ms" % (last["value"], seen, max(runq or [0]), run_us, health.get("runq_unseen_in"),
                                   health.get("dstate_unseen_in"), r["off"] / 1e6))
        check(float(last["value"]) <= max(seen) + 3, "dstate %s vs /proc's D tasks %r" % (last["value"], seen))
        check(runq and max(runq) <= run_us, "runq p99s %r above the run's %d us" % (runq, run_us))
        check(r["off"] >= 50 * 10e6, "the parent waited for its children: %r" % r)
        check("dstate_unseen_in" in health and not p.bad, "records match schema/autotrace.meta: %r" % p.bad[:3])
    finally:
        if w:
            w.close()
        rc, log = p.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    check(rc == 0, "autotrace exit status %r: %s" % (rc, log[-1500:]))


test_autotrace_dstate_returns_and_runq_bounded.timeout = 60
