"""test_stackprobe.py - stackprobe ("flamegraph") on the real kernel against a workload with known answers
(tests/helpers/cpu_split.c): the 70/30 on-CPU split by function, side by side with `perf record`; a
sleeping thread's blocked time in off-CPU; N fresh pages as N faults in mem; a stripped binary; SVG,
pprof (decoded with protoc) and the profile store; under the supervisor: REST, in-kernel scope,
Pyroscope upload to a receiver of ours and the query API."""
import atexit
import glob
import gzip
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

from harness import (PROBES, ROOT, TEST_BINS, PidPeer, Supervisor, TestFailure, check, free_port, http_get, probe_entry,
                     rest_put, rmdir_retry, teardown, wait_for)

sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
from pyro_receiver import PyroReceiver  # noqa: E402

STACKPROBE = os.path.join(PROBES, "stackprobe")
CPU_SPLIT = os.path.join(TEST_BINS, "cpu_split")
CPU_SPLIT_STRIPPED = os.path.join(TEST_BINS, "cpu_split_stripped")
PROTO_DIR = os.path.join(ROOT, "tests", "helpers")
SAN_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class Workload(PidPeer):
    """cpu_split started with -w: it prints its pid, waits for "go", works, prints its facts, and
    stays until told to exit (so /proc/<pid>/maps is still there when the probe symbolizes)."""

    def __init__(self, args, binary=CPU_SPLIT):
        # nice -10: on a busy machine the workload still gets enough CPU for a few hundred samples
        super().__init__(["nice", "-n", "-10", binary, "-w"] + args, "cpu_split")
        self.malloc_addr = int(self.started["malloc_addr"])  # the malloc it calls (libc's or an interposer's)

    def wait_done(self):
        line = self.proc.stdout.readline()
        check("hot_ns=" in line, "cpu_split facts: %r" % line)
        return {k: int(v) for k, v in (kv.split("=") for kv in line.split())}


class Standalone:
    """stackprobe run by hand: records on stdout, log on stderr (<tag>.out and <tag>.err in tmp); timeout s
    to start and to stop."""

    def __init__(self, tmp, args, tag="probe", timeout=20):
        self.timeout = timeout
        self.out = open(os.path.join(tmp, tag + ".out"), "w+")
        self.err_path = os.path.join(tmp, tag + ".err")
        self.err = open(self.err_path, "w+")
        self.proc = subprocess.Popen([STACKPROBE] + args, stdout=self.out, stderr=self.err)
        wait_for(lambda: self.proc.poll() is not None or "started:" in self.stderr(), timeout, "stackprobe start")
        check(self.proc.poll() is None, "stackprobe exited at start: %s" % self.stderr()[-2000:])

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.out.flush()
        with open(self.out.name) as f:
            out = f.read()
        err = self.stderr()
        for m in SAN_MARKERS:
            check(m not in err, "sanitizer report in stackprobe's stderr:\n" + err[err.find(m) - 200:][:3000])
        check(rc == 0, "stackprobe exit status %r: %s" % (rc, err[-2000:]))
        return out


def pprof_decoded(pattern):
    """The one pprof file pattern matches, decoded by protoc against profile.proto: its string table and
    its samples' values (in order)."""
    pbs = glob.glob(pattern)
    check(len(pbs) == 1, "one pprof file: %r" % pbs)
    with gzip.open(pbs[0]) as f:
        raw = f.read()
    dec = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", "-I", PROTO_DIR,
                          os.path.join(PROTO_DIR, "profile.proto")], input=raw, capture_output=True, timeout=30)
    check(dec.returncode == 0, "protoc: %s" % dec.stderr.decode()[:500])
    text = dec.stdout.decode()
    values = [int(v) for v in re.findall(r"^  value: (\d+)$", text, re.M)]
    return re.findall(r'^string_table: "(.*)"$', text, re.M), values


def folded(flame_dir, event):
    """stack -> value summed over every .folded file of an event type."""
    out = {}
    for path in glob.glob(os.path.join(flame_dir, event, "*.folded")):
        with open(path) as f:
            for line in f:
                stack, _, v = line.rstrip("\n").rpartition(" ")
                out[stack] = out.get(stack, 0) + int(v)
    return out


def share(stacks, prefix, leaf):
    """Fraction of the value under prefix whose leaf frame is leaf."""
    total = sum(v for s, v in stacks.items() if s.startswith(prefix))
    part = sum(v for s, v in stacks.items() if s.startswith(prefix) and s.split(";")[-1] == leaf)
    return (part / total if total else 0.0), total


def share_incl(stacks, prefix, frame):
    """Fraction of the value under prefix whose stack passes through frame (at any depth: samples of an
    interrupt taken while in frame count too, as they do in the thread's CPU time and in the SVG)."""
    total = sum(v for s, v in stacks.items() if s.startswith(prefix))
    part = sum(v for s, v in stacks.items() if s.startswith(prefix) and frame in s.split(";"))
    return (part / total if total else 0.0), total


def records(text, table):
    return [line.strip("|").split("|") for line in text.splitlines() if line.startswith("|%s|" % table)]


# ---- one standalone run shared by the tests that look at its results -------------------------------

_RUN = {}
PAGES = 20000
CPU_SECONDS = 5  # of spin_hot + spin_cold: 500 samples at 10 ms, however busy the machine is


def perf_enable(perf, ctl, ack, timeout=30):
    """Tell a `perf record -D -1 --control fifo:ctl,ack` to enable its events; return once it says so."""
    deadline = time.monotonic() + timeout
    fd = None
    while fd is None:
        try:
            fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until perf opened its end
        except OSError:
            check(perf.poll() is None and time.monotonic() < deadline, "perf did not open its control fifo")
            time.sleep(0.05)
    afd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"enable\n")
        got = b""
        while b"ack" not in got:
            check(perf.poll() is None and time.monotonic() < deadline, "perf did not acknowledge enable: %r" % got)
            r, _, _ = select.select([afd], [], [], 0.1)
            if r:
                got += os.read(afd, 64)
    finally:
        os.close(fd)
        os.close(afd)


def standalone_run():
    """cpu_split with its sleeper and page toucher, profiled by stackprobe (oncpu, offcpu, mem) and
    `perf record -F 100 -g` at the same time."""
    if _RUN:
        return _RUN
    tmp = tempfile.mkdtemp(prefix="gg-stack-")
    # shared by several tests of this module: removed when the test process exits
    atexit.register(shutil.rmtree, tmp, True)
    w = Workload(["-c", str(CPU_SECONDS), "-s", "-p", str(PAGES)])
    sp = perf = None
    try:
        sp = Standalone(tmp, ["--pid", str(w.pid), "-P", "oncpu,offcpu,mem", "--svg-period", "600",
                              "--store-period", "2", "--flame-dir", os.path.join(tmp, "flame"),
                              "--svg-dir", os.path.join(tmp, "svg"), "-t", "1"])
        perf_log = open(os.path.join(tmp, "perf.log"), "w")
        # perf starts with its events disabled and enables them when told, then acknowledges: the
        # workload starts once perf samples (a fixed sleep was too short on a busy machine, and perf
        # missed the first second of the workload)
        ctl, ack = os.path.join(tmp, "perf.ctl"), os.path.join(tmp, "perf.ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        perf = subprocess.Popen(["perf", "record", "-F", "100", "-g", "-D", "-1", "--control",
                                 "fifo:%s,%s" % (ctl, ack), "-p", str(w.pid), "-o", os.path.join(tmp, "perf.data")],
                                stdout=perf_log, stderr=perf_log)
        perf_enable(perf, ctl, ack)
        w.go()
        facts = w.wait_done()
        perf.send_signal(signal.SIGINT)
        perf.wait(20)
        out = sp.stop()
        err = sp.stderr()
        sp = None
    finally:
        if perf and perf.poll() is None:
            perf.kill()
        if sp:
            sp.proc.kill()
        w.finish()
    _RUN.update(tmp=tmp, pid=w.pid, facts=facts, out=out, err=err, flame=os.path.join(tmp, "flame"),
                svg=os.path.join(tmp, "svg"))
    return _RUN


def test_oncpu_split():
    r = standalone_run()
    st = folded(r["flame"], "oncpu")
    prefix = "[%d] cpu_split;" % r["pid"]
    hot, total = share_incl(st, prefix, "spin_hot")
    cold, _ = share_incl(st, prefix, "spin_cold")
    f = r["facts"]
    print("oncpu: spin_hot %.1f%% spin_cold %.1f%% of %d samples (cpu_split measured %.1f%% / %.1f%%)" %
          (100 * hot, 100 * cold, total, 100 * f["hot_ns"] / (f["hot_ns"] + f["cold_ns"]),
           100 * f["cold_ns"] / (f["hot_ns"] + f["cold_ns"])))
    # a pacer that ran late (its strata ride on the next shot, up to 3) or missed strata: say so
    health = records(r["out"], "stackprobe_health")
    print("oncpu_missed %s; %s" % (health[-1][19] if health else "?",
                                   "; ".join(l for l in r["err"].splitlines() if "oncpu:" in l) or "no pacer warnings"))
    check(total >= 300, "enough samples for a 5 %% tolerance: %d" % total)
    # the rest are the run's page faults (touch_pages), the sleeper's switches and interrupts that hit the
    # process on a busy machine: the split between the two functions is compared, with the workload's
    # own CPU-time measurement as the truth
    truth = f["hot_ns"] / (f["hot_ns"] + f["cold_ns"])
    check(0.65 <= truth <= 0.75, "the workload split its CPU time 70/30: %.3f" % truth)
    check(hot + cold >= 0.7, "spin_hot + spin_cold hold %.1f %% of the samples" % (100 * (hot + cold)))
    rel = hot / (hot + cold)
    # a sample of the split: 5 points, or three standard deviations of a proportion over this many samples
    # (0.026 at 300: 5 points alone is under two of them, and failed about one run in twenty)
    tol = max(0.05, 3 * (truth * (1 - truth) / ((hot + cold) * total)) ** 0.5)
    check(abs(rel - truth) <= tol, "spin_hot %.3f of spin_hot + spin_cold, measured %.3f (+- %.3f)" % (rel, truth, tol))
    # the full call path, with symbols, bottom frame "[pid] comm"
    check(any(s.startswith(prefix) and s.endswith("main;burn_loop;spin_hot") for s in st),
          "a stack ...main;burn_loop;spin_hot: %r" % sorted(st)[:5])
    check(any(s.endswith("main;burn_loop;spin_cold") for s in st), "a stack ...main;burn_loop;spin_cold")
    # samples agree with the CPU time the workload measured itself (10 ms period)
    expected = (f["hot_ns"] + f["cold_ns"]) / 10e6
    check(0.8 * expected <= total <= 1.2 * expected, "%d samples for %.0f expected" % (total, expected))


def test_oncpu_side_by_side_with_perf():
    r = standalone_run()
    out = subprocess.run(["perf", "script", "-i", os.path.join(r["tmp"], "perf.data"), "-F", "comm,tid,ip,sym"],
                         capture_output=True, text=True, timeout=60).stdout
    leaves = []
    for block in out.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if len(lines) >= 2 and lines[0].startswith("cpu_split"):
            parts = lines[1].split()
            leaves.append(parts[1] if len(parts) > 1 else "?")
    check(len(leaves) > 100, "perf recorded %d samples" % len(leaves))
    perf_hot = leaves.count("spin_hot") / len(leaves)
    ours, total = share(folded(r["flame"], "oncpu"), "[%d] cpu_split;" % r["pid"], "spin_hot")
    print("spin_hot: stackprobe %.1f%% of %d samples, perf record -F 100 -g %.1f%% of %d samples" %
          (100 * ours, total, 100 * perf_hot, len(leaves)))
    # both are samples of the same split: allow 5 points or three standard deviations of the difference
    sigma = (0.21 / total + 0.21 / len(leaves)) ** 0.5
    check(abs(ours - perf_hot) <= max(0.05, 3 * sigma), "stackprobe %.3f vs perf %.3f" % (ours, perf_hot))
    check(0.8 <= total / len(leaves) <= 1.25, "sample counts: stackprobe %d, perf %d" % (total, len(leaves)))


def test_offcpu_blocked_thread():
    r = standalone_run()
    st = folded(r["flame"], "offcpu")
    sleeper = {s: v for s, v in st.items() if ";sleeper_thread;" in s}
    blocked = sum(sleeper.values())
    truth = r["facts"]["sleeper_blocked_us"]
    print("offcpu: sleeper_thread blocked %d us, measured by the thread itself %d us" % (blocked, truth))
    check(sleeper, "no off-CPU stack through sleeper_thread: %r" % sorted(st)[:5])
    # blocks started before the probe attached are not counted: at most one 20 ms sleep
    check(0.9 * truth <= blocked <= 1.03 * truth, "blocked %d us vs %d us measured" % (blocked, truth))
    check(all("schedule_[k]" in s for s in sleeper), "the kernel part ends in schedule")
    check(not any("bpf_prog_" in s or "bpf_trace_run" in s for s in st), "BPF frames left in off-CPU stacks")


def test_mem_page_faults():
    r = standalone_run()
    st = folded(r["flame"], "mem")
    faults = sum(v for s, v in st.items() if ";touch_pages;" in s)
    print("mem: %d faults in touch_pages for %d fresh pages" % (faults, r["facts"]["pages"]))
    check(r["facts"]["pages"] == PAGES, "the workload touched its pages")
    check(PAGES <= faults <= PAGES * 1.02 + 20, "%d faults at touch_pages for %d pages" % (faults, PAGES))


def test_svg_pprof_store_outputs():
    r = standalone_run()
    svgs = glob.glob(os.path.join(r["svg"], "oncpu", "*_oncpu.svg"))
    check(len(svgs) == 1, "one oncpu SVG for the run: %r" % svgs)
    root = ET.parse(svgs[0]).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    script = "".join(s.text or "" for s in root.iter(ns + "script"))
    for fn in ("function zoom(", "function unzoom(", "function search("):
        check(fn in script, "SVG script has %s" % fn)
    # every frame against the folded file of the same period, exactly: a frame is the run of stacks that
    # share its path, its value their samples, its width value / total of the drawing width. spin_hot
    # can be drawn more than once (a sample on its first instruction, before it set up its frame,
    # unwinds without burn_loop): all of its frames together hold every sample through it. The
    # printed figures are rounded to 0.01 (percent and pixels), nothing else.
    st = folded(r["flame"], "oncpu")
    geo = re.search(r"var W=(\d+),XPAD=(\d+)", script)
    draw_w = int(geo.group(1)) - 2 * int(geo.group(2))
    frames = []
    for g in root.iter(ns + "g"):
        t, rect = g.find(ns + "title"), g.find(ns + "rect")
        m = re.match(r"^(.*) \(([0-9.e+]+) samples, ([0-9.]+)%\)$", (t.text or "") if t is not None else "")
        if m and rect is not None:
            frames.append((m.group(1), float(m.group(2)), float(m.group(3)), float(rect.get("width"))))
    total = [v for n, v, _, _ in frames if n == "all"]
    check(total == [sum(st.values())], "SVG total %r vs folded %d" % (total, sum(st.values())))
    total = total[0]
    for n, v, pct, w in frames:
        check(abs(pct - 100 * v / total) <= 0.0051 and abs(w - draw_w * v / total) <= 0.0051,
              "frame %s: %g samples drawn %.2f px, %.2f%% (total %d, %d px)" % (n, v, w, pct, total, draw_w))
    hot = [v for n, v, _, _ in frames if n == "spin_hot"]
    through = sum(v for s, v in st.items() if "spin_hot" in s.split(";"))
    # frames under 0.1 px are not drawn: none is at this many samples (one is 1180 / total px)
    check(total < 11800, "few enough samples to draw every frame: %d" % total)
    check(hot and sum(hot) == through, "spin_hot frames %r hold %d samples of the folded file" % (hot, through))

    # pprof: protoc decodes it against profile.proto; its samples add up to the folded file
    strings, values = pprof_decoded(os.path.join(r["flame"], "oncpu", "*_oncpu.pb.gz"))
    check("spin_hot" in strings and "samples" in strings, "string table: %r" % strings[:12])
    check(sum(values[0::2]) == sum(st.values()), "pprof samples %d vs folded %d" % (sum(values[0::2]), sum(st.values())))
    check(all(b == a * 10_000_000 for a, b in zip(values[0::2], values[1::2])), "cpu nanoseconds = samples x 10 ms")

    # the profile store holds the same samples, per thread
    store_total = 0
    for path in glob.glob(os.path.join(r["flame"], "store", "on-cpu", "*.prof")):
        with open(path) as f:
            head = f.readline()
            check(head.startswith("# gala-gopher-profile v1 event=on-cpu unit=samples period_us=10000"), head)
            for line in f:
                fields = line.rstrip("\n").split("\t")
                check(len(fields) == 7, "store line: %r" % line)
                store_total += int(fields[6])
    check(store_total == sum(st.values()), "store %d vs folded %d" % (store_total, sum(st.values())))


def test_oncpu_light_periodic_task_samples_match_its_cpu_time():
    """A task busy 5 ms of every 50 ms (10 % of a CPU), pinned to each CPU in turn, sampled at 10 ms for
    3 s: its samples x 10 ms are its CPU time (CLOCK_PROCESS_CPUTIME_ID), within the noise of ~30 samples.
    Before shots that never fired stopped carrying their periods to the next fire, the test VM's second
    vCPU (whose CPU-clock timer does not fire while it is idle) put 2-3x its CPU time on it."""
    cpus = sorted(os.sched_getaffinity(0))[:4]
    results = []
    for cpu_no in cpus:
        tmp = tempfile.mkdtemp(prefix="gg-stack-light-")
        flame = os.path.join(tmp, "flame")
        w = subprocess.Popen(["taskset", "-c", str(cpu_no), "nice", "-n", "-10", os.path.join(TEST_BINS, "quiet_spin"),
                              "3", "10", "0", "1", "-w"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        sp = None
        try:
            line = w.stdout.readline()
            check(line.startswith("pid="), "quiet_spin: %r" % line)
            sp = Standalone(tmp, ["--pid", str(w.pid), "-P", "oncpu", "--perf-sample-period", "10",
                                  "--svg-period", "600", "--flame-dir", flame, "--svg-dir", os.path.join(tmp, "svg"),
                                  "-t", "1"])
            w.stdin.write("go\n")
            w.stdin.flush()
            cpu = None
            for line in w.stdout:
                if line.startswith("quiet_cpu_s="):
                    cpu = float(line.split("=")[1])
            w.wait(30)
            time.sleep(1.2)
            out = sp.stop()
            sp = None
        finally:
            if sp:
                sp.proc.kill()
            if w.poll() is None:
                w.kill()
                w.wait()
        st = folded(flame, "oncpu")
        samples = sum(v for k, v in st.items() if ";quiet_work" in k)
        health = [ln.split("|") for ln in out.splitlines() if ln.startswith("|stackprobe_health|")]
        print("light task on CPU %d: %d samples = %.2f s, CPU %.2f s; oncpu_late %s" % (
            cpu_no, samples, samples / 100.0, cpu or 0, health[-1][-2] if health else "?"))
        shutil.rmtree(tmp, ignore_errors=True)
        check(cpu and cpu > 0.15, "the task ran on CPU %d: %s s" % (cpu_no, cpu))
        results.append((cpu_no, samples, cpu))
    for cpu_no, samples, cpu in results:
        check(0.6 * cpu <= samples / 100.0 <= 1.5 * cpu, "samples of the light task on CPU %d: %d (%.2f s) vs its "
              "CPU time %.2f s" % (cpu_no, samples, samples / 100.0, cpu))


test_oncpu_light_periodic_task_samples_match_its_cpu_time.timeout = 60


def test_oncpu_stalled_sampler_counts_missed():
    """The sampler stopped (SIGSTOP) for a second while the workload spins: the second is not put on the
    one stack that runs when sampling resumes (it would be 100 samples of one stack), a shot stands for
    at most 3 periods and the rest is counted in stackprobe_health.oncpu_missed."""
    tmp = tempfile.mkdtemp(prefix="gg-stall-")
    w = Workload(["-c", "4"])
    sp = None
    try:
        sp = Standalone(tmp, ["--pid", str(w.pid), "-P", "oncpu", "--svg-period", "600", "--store-period", "2",
                              "--flame-dir", os.path.join(tmp, "flame"), "--svg-dir", os.path.join(tmp, "svg"),
                              "-t", "1"])
        w.go()
        time.sleep(0.8)
        # the workload's CPU time while the sampler is stopped (one thread: its schedstat is the process's)
        with open("/proc/%d/schedstat" % w.pid) as f:
            cpu0 = int(f.read().split()[0])
        sp.proc.send_signal(signal.SIGSTOP)
        time.sleep(2.0)
        sp.proc.send_signal(signal.SIGCONT)
        with open("/proc/%d/schedstat" % w.pid) as f:
            stalled = (int(f.read().split()[0]) - cpu0) / 10e6
        facts = w.wait_done()
        out = sp.stop()
        sp = None
    finally:
        if sp:
            sp.proc.send_signal(signal.SIGCONT)
            sp.proc.kill()
        w.finish()
    _, total = share(folded(os.path.join(tmp, "flame"), "oncpu"), "[%d] cpu_split;" % w.pid, "spin_hot")
    expected = (facts["hot_ns"] + facts["cold_ns"]) / 10e6
    missed = int(records(out, "stackprobe_health")[-1][19])
    print("sampler stopped 2 s of a %.0f-sample run (%.0f periods of the workload's CPU time): %d samples, "
          "%d periods missed (all CPUs)" % (expected, stalled, total, missed))
    # the stopped 2 s: about 200 periods of wall time per CPU, 3 of them on the shot after it
    check(missed >= 160, "the stalled periods counted as missed: %d" % missed)
    # the workload's CPU time while stopped is not put on the stack running when sampling resumed (it
    # gets a fifth of a CPU at nice -10 even on a loaded machine)
    check(stalled >= 40, "the workload ran while the sampler was stopped: %.0f periods" % stalled)
    sampled = expected - stalled
    check(abs(total - sampled) <= max(20, 0.12 * sampled),
          "%d samples for the %.0f periods the sampler ran (+ at most 3 a CPU after the stop)" % (total, sampled))
    shutil.rmtree(tmp, ignore_errors=True)


test_oncpu_stalled_sampler_counts_missed.timeout = 60


def test_stats_records():
    r = standalone_run()
    stats = {rec[1]: rec for rec in records(r["out"], "stackprobe_stats")}
    check(set(stats) == {"oncpu", "offcpu", "mem"}, "stats rows: %r" % sorted(stats))
    total = sum(folded(r["flame"], "oncpu").values())
    last = records(r["out"], "stackprobe_stats")
    last_oncpu = [rec for rec in last if rec[1] == "oncpu"][-1]
    check(int(last_oncpu[3]) == total, "oncpu value %s == folded total %d" % (last_oncpu[3], total))
    check(int(stats["mem"][3]) >= PAGES, "mem value counts the faults")
    health = records(r["out"], "stackprobe_health")
    check(health and int(health[-1][6]) >= 1 and int(health[-1][8]) > 0, "health: %r" % health[-1:])


# ---- mem_alloc: allocator uprobes ------------------------------------------------------------------

ALLOC_ROUNDS = 3000  # alloc_here: malloc 4096 + calloc 16 x 256 + realloc to 8192 per round


def first_byte(pid, addr):
    """The byte at addr in process pid as the process sees it: 0xcc where a uprobe is installed."""
    with open("/proc/%d/mem" % pid, "rb") as f:
        f.seek(addr)
        return f.read(1)[0]


def test_mem_alloc_uprobes():
    """--mem-alloc 1: bytes requested from malloc, calloc and realloc by alloc_here() of the process in
    scope, exactly as the workload counted them; a process outside the scope is not trapped (no int3 at
    its malloc) and not in the graph; the uprobes are gone when the probe stops."""
    tmp = tempfile.mkdtemp(prefix="gg-stack-")
    flame = os.path.join(tmp, "flame")
    inside = Workload(["-d", "0.2", "-m", str(ALLOC_ROUNDS)])
    outside = Workload(["-d", "0.2", "-m", str(ALLOC_ROUNDS)], binary=CPU_SPLIT_STRIPPED)
    sp = None
    try:
        sp = Standalone(tmp, ["--pid", str(inside.pid), "-P", "mem", "--mem-alloc", "1", "--svg-period", "600",
                              "--store-period", "1", "--flame-dir", flame, "--svg-dir", os.path.join(tmp, "svg"),
                              "-t", "1"])
        inside.go()
        outside.go()
        fin, fout = inside.wait_done(), outside.wait_done()
        trap_in = first_byte(inside.pid, fin["malloc_addr"])
        trap_out = first_byte(outside.pid, fout["malloc_addr"])
        time.sleep(1.2)  # one drain
        out = sp.stop()
        err = sp.stderr()
        sp = None
        after = first_byte(inside.pid, fin["malloc_addr"])
    finally:
        if sp:
            sp.proc.kill()
        inside.finish()
        outside.finish()
    print("malloc's first byte: in scope 0x%02x, outside 0x%02x, in scope after the probe stopped 0x%02x" %
          (trap_in, trap_out, after))
    check(trap_in == 0xCC, "the process in scope has a uprobe (int3) at malloc: 0x%02x" % trap_in)
    check(trap_out != 0xCC, "the process outside the scope is not trapped: 0x%02x" % trap_out)
    check(after != 0xCC, "the uprobe is removed when the probe stops: 0x%02x" % after)

    st = folded(flame, "mem_alloc")
    prefix = "[%d] cpu_split;" % inside.pid
    mine = {s: v for s, v in st.items() if ";alloc_here;" in s}
    total = sum(mine.values())
    truth = fin["alloc_bytes"]
    print("mem_alloc: %d bytes at alloc_here, the workload requested %d; leaves %r" %
          (total, truth, sorted((s.split(";")[-1], v) for s, v in mine.items())))
    check(truth == ALLOC_ROUNDS * 16384, "the workload's own count: %d" % truth)
    check(total == truth, "bytes attributed to alloc_here: %d vs %d requested" % (total, truth))
    check(all(s.startswith(prefix) and ";main;alloc_here;" in s for s in mine), "full path: %r" % sorted(mine))
    # one leaf per allocator function, named as the program calls it (not an internal alias)
    leaves = {s.split(";")[-1]: v for s, v in mine.items()}
    check(leaves == {"malloc": ALLOC_ROUNDS * 4096, "calloc": ALLOC_ROUNDS * 4096, "realloc": ALLOC_ROUNDS * 8192},
          "malloc / calloc / realloc bytes: %r" % leaves)
    check(all(s.startswith(prefix) for s in st), "only the process in scope: %r" %
          [s for s in st if not s.startswith(prefix)][:3])

    # pprof says the unit; the store and the stats records agree with the folded file
    strings, values = pprof_decoded(os.path.join(flame, "mem_alloc", "*_mem_alloc.pb.gz"))
    check("alloc_space" in strings and "bytes" in strings and "alloc_here" in strings, "strings: %r" % strings[:12])
    check(sum(values) == sum(st.values()), "pprof bytes %d vs folded %d" % (sum(values), sum(st.values())))
    store_total = 0
    for path in glob.glob(os.path.join(flame, "store", "mem-alloc", "*.prof")):
        with open(path) as f:
            head = f.readline()
            check(head.startswith("# gala-gopher-profile v1 event=mem-alloc unit=bytes "), head)
            store_total += sum(int(line.rsplit("\t", 1)[1]) for line in f if line.strip())
    check(store_total == sum(st.values()), "store %d vs folded %d" % (store_total, sum(st.values())))
    stats = [rec for rec in records(out, "stackprobe_stats") if rec[1] == "mem_alloc"]
    check(stats and int(stats[-1][3]) == sum(st.values()), "stats row: %r" % stats[-1:])
    check(int(stats[-1][2]) >= 3 * ALLOC_ROUNDS, "allocator calls counted: %r" % stats[-1])
    health = [h for h in records(out, "stackprobe_health")]
    # fields after the probe name: ..., files_written, files_failed, pyroscope_uploads, pyroscope_errors,
    # alloc_uprobes, alloc_procs (index 17), alloc_skipped
    seen = max(int(h[17]) for h in health)
    check(seen == 1, "one process had allocator uprobes: %r" % health[-1])
    shutil.rmtree(tmp, ignore_errors=True)


test_mem_alloc_uprobes.timeout = 60


def cgroup2_root(tmp):
    """A cgroup v2 hierarchy: the mounted one, or one mounted here."""
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return mnt, None
    mnt = os.path.join(tmp, "cg2")
    os.makedirs(mnt)
    subprocess.run(["mount", "-t", "cgroup2", "none", mnt], check=True)
    return mnt, mnt


POD_UID = "0123abcd-4567-89ab-cdef-0123456789ab"
CON_ID = "feedc0de" * 8


def test_stripped_binary_in_container_multi_instance():
    """A stripped binary degrades to its module name; a process in a container-looking cgroup gets
    [Pod]/[Con] bottom frames; multi_instance gives one set of files per process."""
    tmp = tempfile.mkdtemp(prefix="gg-stack-")
    root, mounted = cgroup2_root(tmp)
    pod_dir = os.path.join(root, "kubepods-besteffort-pod%s.slice" % POD_UID.replace("-", "_"))
    con_dir = os.path.join(pod_dir, "docker-%s.scope" % CON_ID)
    os.makedirs(con_dir, exist_ok=True)
    w = Workload(["-c", "2"], binary=CPU_SPLIT_STRIPPED)
    try:
        with open(os.path.join(con_dir, "cgroup.procs"), "w") as f:
            f.write(str(w.pid))
        sp = Standalone(tmp, ["--pid", str(w.pid), "-P", "oncpu", "--svg-period", "600", "--multi-instance", "1",
                              "--flame-dir", os.path.join(tmp, "flame"), "--svg-dir", os.path.join(tmp, "svg")])
        w.go()
        w.wait_done()
        sp.stop()
    finally:
        w.finish()
        for d in (con_dir, pod_dir):
            rmdir_retry(d)  # the exited process leaves its cgroup a moment later
        if mounted:
            subprocess.run(["umount", mounted])
    st = folded(os.path.join(tmp, "flame"), "oncpu")
    module = "[%s]" % os.path.realpath(CPU_SPLIT_STRIPPED)
    frames = [fr for s in st for fr in s.split(";")]
    total = sum(st.values())
    in_module = sum(v for s, v in st.items() if s.split(";")[-1] == module)
    # interrupts and softirqs that hit the workload on a busy machine end in kernel frames: left out
    in_user = sum(v for s, v in st.items() if not s.endswith("_[k]"))
    print("stripped: %.1f%% of %d user-mode samples (%d in all) end in %s" %
          (100 * in_module / max(in_user, 1), in_user, total, module))
    check(in_user > 30, "samples: %d" % in_user)
    check(in_module / in_user > 0.9, "the burning frames are named after the module")
    check(not any(n in frames for n in ("spin_hot", "spin_cold", "burn_loop", "main")), "no symbol names invented")
    check(not any(fr.startswith("[unknown]") for fr in frames), "no unknown frames: %r" % frames[:10])
    check("__libc_start_call_main" in frames, "libc frames keep their names")
    bottom = "[Pod]%s;[Con]%s;[%d] cpu_split_strip;" % (POD_UID, CON_ID[:12], w.pid)
    check(all(s.startswith(bottom) for s in st), "container bottom frames %r: %r" % (bottom, sorted(st)[:2]))
    names = [os.path.basename(p) for p in glob.glob(os.path.join(tmp, "flame", "oncpu", "*"))]
    check(names and all(re.match(r"^\d{14}_oncpu_%d\.(folded|pb\.gz)$" % w.pid, n) for n in names),
          "multi_instance file names: %r" % names)
    check(glob.glob(os.path.join(tmp, "svg", "oncpu", "*_oncpu_%d.svg" % w.pid)), "per-process SVG")
    shutil.rmtree(tmp, ignore_errors=True)


def test_supervisor_rest_scope_pyroscope_query():
    tmp = tempfile.mkdtemp(prefix="gg-stack-")
    flame, svg = os.path.join(tmp, "flame"), os.path.join(tmp, "svg")
    os.makedirs(flame)
    os.makedirs(svg)
    rx = PyroReceiver().start()
    rest_port = free_port()
    s = Supervisor(probes=[probe_entry("stackprobe", "-t 1 --store-period 2 --pyroscope-period 3", switch="off")],
                   extra='rest_api_server = { port = %d; state_dir = "%s/rest"; output_base_dir = "%s"; };'
                   % (rest_port, tmp, tmp))
    # a comm of this test's own: the scope is by name, and other tests run cpu_split at the same time
    comm = "gcs%d" % os.getpid()
    inside = Workload(["-c", "8", "-m", "500", "-n", comm])  # 8 s of CPU time, however loaded the machine
    outside = Workload(["-d", "12", "-m", "500"], binary=CPU_SPLIT_STRIPPED)  # comm "cpu_split_strip": not in scope
    try:
        s.start()
        t0 = int(time.time())
        status, body = rest_put(rest_port, "flamegraph", {
            "cmd": {"probe": ["oncpu", "mem"]},
            # comm is a regular expression (gala-gopher): anchored on this run's unique name
            "snoopers": {"proc_name": [{"comm": "^%s$" % comm, "cmdline": "", "debugging_dir": ""}]},
            "params": {"flame_dir": flame, "svg_dir": svg, "pyroscope_server": "127.0.0.1:%d" % rx.port,
                       "mem_alloc": 1},
            "state": "running"})
        check(status == 200, "PUT /flamegraph: %d %s" % (status, body))
        s.wait_probe("stackprobe", lambda p: p["state"] == "running" and p.get("config_version_applied", 0) >= 1,
                     15, "running with its configuration")
        # the snooper scan puts cpu_split in scope within a second; its allocator uprobes follow
        wait_for(lambda: first_byte(inside.pid, inside.malloc_addr) == 0xCC, 10, "a uprobe at cpu_split's malloc")
        # the breakpoint may be another stackprobe's (uprobes are per file: any test running beside this
        # one): wait until this probe says it has attached to a process in scope
        wait_for(lambda: [h for h in s.metric_records("stackprobe_health") if int(h["alloc_procs"]) >= 1], 15,
                 "this stackprobe's allocator uprobes on cpu_split (stackprobe_health.alloc_procs)")
        check(first_byte(outside.pid, outside.malloc_addr) != 0xCC, "no uprobe in the process outside the scope")
        inside.go()
        outside.go()
        ingest = wait_for(lambda: [q for q in rx.requests() if q["query"].get("name") == "gala-gopher-oncpu"
                                   and "spin_hot" in q["body"]], 20, "a Pyroscope upload with cpu_split's stacks")
        q = ingest[0]
        check(q["method"] == "POST" and q["path"] == "/ingest", "request: %s %s" % (q["method"], q["path"]))
        qs = q["query"]
        check(qs["units"] == "samples" and qs["sampleRate"] == "100" and qs["format"] == "folded", "query: %r" % qs)
        check(t0 - 5 <= int(qs["from"]) <= int(qs["until"]) <= time.time() + 1, "from/until: %r" % qs)
        lines = [l for l in q["body"].splitlines() if l]
        check(all(re.match(r"^\[\d+\] \S.* \d+$", l) for l in lines), "folded body: %r" % lines[:3])
        check(all(l.startswith("[%d] %s;" % (inside.pid, comm)) for l in lines),
              "only the process in scope is profiled: %r" % [l for l in lines if "] %s;" % comm not in l][:3])

        # the query API on the REST server, over the profile store
        def query(app):
            args = urllib.parse.urlencode({"app": app, "event": "on-cpu", "time_start": t0 - 5,
                                           "time_end": int(time.time()) + 5})
            st, text = http_get("http://127.0.0.1:%d/flamegraph/query?%s" % (rest_port, args))
            check(st == 200, "query %s: %d %s" % (app, st, text[:300]))
            return json.loads(text)

        def hot_share():
            res = query(comm)["result"]
            total = res[0]["total_value"]
            hot = sum(n["total_value"] for n in res if n["profile_location_str"] == "spin_hot")
            cold = sum(n["total_value"] for n in res if n["profile_location_str"] == "spin_cold")
            # 400 samples at 10 ms, in us: the split's standard error is then 0.023, and the bounds below
            # 3.5 of them (200 samples failed on a loaded machine now and then: 2.5)
            return (hot / (hot + cold), res) if total >= 4000000 and hot + cold > 0.7 * total else None

        frac, res = wait_for(hot_share, 45, "four seconds of cpu_split's CPU time in the profile store")
        check(res[0]["profile_location_str"] == comm and res[0]["parent_node_id"] == "-1", "root: %r" % res[0])
        check(0.62 <= frac <= 0.78, "spin_hot share of spin_hot + spin_cold in the query %.2f" % frac)
        ids = {n["node_id"] for n in res}
        check(all(n["parent_node_id"] in ids or n["parent_node_id"] == "-1" for n in res), "parents exist")
        check(any(n["profile_location_str"].startswith("[t] ") for n in res), "a [t] thread layer")
        check(any(n["profile_location_str"].startswith("[l] ") for n in res), "[l] library frames (libc)")
        total = query("Total")["result"]
        procs = [n["profile_location_str"] for n in total if n["profile_location_str"].startswith("[p] ")]
        check(procs == ["[p] %s" % comm], "Total has only the process in scope: %r" % procs)
        check(any(n["profile_location_str"] == "[t] %s" % comm for n in total), "Total has the [t] layer")
        # mem_alloc (REST param mem_alloc) through the query API: bytes, as cpu_split requested them
        def alloc_total():
            args = urllib.parse.urlencode({"app": str(inside.pid), "event": "mem-alloc", "time_start": t0 - 5,
                                           "time_end": int(time.time()) + 5})
            st, text = http_get("http://127.0.0.1:%d/flamegraph/query?%s" % (rest_port, args))
            check(st == 200, "mem-alloc query: %d %s" % (st, text[:300]))
            return sum(n["total_value"] for n in json.loads(text)["result"]
                       if n["profile_location_str"] == "alloc_here") or None

        # the store flushes every 2 s while cpu_split is still allocating: wait for the whole amount (a
        # partial flush is not a failure), then demand it exactly (an overcount still fails)
        want = 500 * 16384
        seen = [0]

        def alloc_complete():
            seen[0] = alloc_total() or 0
            return seen[0] if seen[0] >= want else None

        try:
            got = wait_for(alloc_complete, 20, "all of cpu_split's allocations in the profile store")
        except TestFailure:
            args = urllib.parse.urlencode({"app": str(inside.pid), "event": "mem-alloc", "time_start": t0 - 5,
                                           "time_end": int(time.time()) + 5})
            st_, text_ = http_get("http://127.0.0.1:%d/flamegraph/query?%s" % (rest_port, args))
            print("mem-alloc nodes (name, total, self):", [(n["profile_location_str"], n["total_value"], n["self_value"]) for n in json.loads(text_)["result"]][:40])
            print(s.probe_log("stackprobe")[-3000:])
            for root, dirs, files in os.walk(flame):
                print(root, files[:5])
            raise TestFailure("mem-alloc at alloc_here: %d bytes for %d requested" % (seen[0], want))
        check(got == want, "mem-alloc at alloc_here: %d bytes for %d requested" % (got, want))
        status, body = rest_put(rest_port, "flamegraph", {"params": {"mem_alloc": 2}})
        check(status == 400 and "mem_alloc" in body, "mem_alloc out of range: %d %s" % (status, body))
        st, text = http_get("http://127.0.0.1:%d/flamegraph/query?app=x&event=gpu" % rest_port)
        check(st == 400 and json.loads(text)["OPT_STATUS"] == "FAIL", "bad event: %d %s" % (st, text))

        # its records pass the supervisor's schema validation
        wait_for(lambda: s.metric_records("stackprobe_stats"), 10, "stackprobe_stats records")
        p = s.probe("stackprobe")
        check(p["rejected"] == {} or not any(p["rejected"].values()), "rejected records: %r" % p["rejected"])
    finally:
        teardown(inside, outside, rx, s)
    shutil.rmtree(tmp, ignore_errors=True)


test_supervisor_rest_scope_pyroscope_query.timeout = 90


# ---- periodic workloads: the CPU-clock sampler must not run in lockstep with them --------------------

PERIODS_MS = (1, 4, 10, 20)
PERIODIC_CPU_S = 15  # 1500 samples per workload; two workloads at a time: ~32 s on an idle machine


def test_oncpu_periodic_workloads_not_in_lockstep():
    """Workloads that burn 70 % of every period in periodic_hot and 30 % in periodic_cold, phase-locked
    to the monotonic clock (tests/helpers/cpu_split.c -T), at periods of 1, 4, 10 and 20 ms: stackprobe
    at its default 10 ms sampling period sees each split within 5 points of what the workload measured
    with its thread CPU clock. A sampler firing every 10 ms exactly lands at the same phase of such a
    workload every time (the issue: 52-63 % for a 70 % function)."""
    tmp = tempfile.mkdtemp(prefix="gg-stack-")
    flame = os.path.join(tmp, "flame")
    loads = [Workload(["-T", str(ms * 1000), "-c", str(PERIODIC_CPU_S)]) for ms in PERIODS_MS]
    sp = None
    facts = {}
    try:
        sp = Standalone(tmp, ["--pid", ",".join(str(w.pid) for w in loads), "-P", "oncpu", "--svg-period", "600",
                              "--flame-dir", flame, "--svg-dir", os.path.join(tmp, "svg")])
        # two at a time on this two-CPU machine: each keeps a CPU to itself and its period
        for pair in (loads[0:2], loads[2:4]):
            for w in pair:
                w.go()
            for w in pair:
                facts[w.pid] = w.wait_done()
        sp.stop()
        sp = None
    finally:
        if sp:
            sp.proc.kill()
        for w in loads:
            w.finish()
    st = folded(flame, "oncpu")
    bad = []
    for ms, w in zip(PERIODS_MS, loads):
        f = facts[w.pid]
        prefix = "[%d] cpu_split;" % w.pid
        hot, total = share_incl(st, prefix, "periodic_hot")
        cold, _ = share_incl(st, prefix, "periodic_cold")
        truth = f["hot_ns"] / (f["hot_ns"] + f["cold_ns"])
        rel = hot / (hot + cold) if hot + cold else 0.0
        expected = (f["hot_ns"] + f["cold_ns"]) / 10e6
        print("period %2d ms: periodic_hot %.1f%% of periodic_hot + periodic_cold in %d samples (%.0f expected), "
              "the workload measured %.1f%%" % (ms, 100 * rel, total, expected, 100 * truth))
        # 70/30 by the clock; preempted on a busy machine, a period's parts shrink unevenly (65-78 % seen
        # here): the truth is what the workload measured, this only checks it is a split worth testing
        check(0.55 <= truth <= 0.85, "the %d ms workload split its CPU time about 70/30: %.3f" % (ms, truth))
        # 1500 samples (one per 10 ms of CPU time) of a 70/30 split: a stratified sample of a periodic
        # workload is binomial, standard deviation 1.18 points (1.52 measured over 20 workloads of 1000
        # samples: 1.24 at 1500), so 5 points is 4 of them: a false failure in a few 1e-4 of the runs of
        # four workloads. A sampler in lockstep is off by 15 to 45 points.
        if abs(rel - truth) > 0.05:
            bad.append("%d ms: %.3f vs %.3f" % (ms, rel, truth))
        # one sample per 10 ms of the CPU time the workload used
        check(0.85 * expected <= total <= 1.15 * expected,
              "%d ms: %d samples for %.0f expected" % (ms, total, expected))
    check(not bad, "split off by more than 5 points: " + ", ".join(bad))
    shutil.rmtree(tmp, ignore_errors=True)


test_oncpu_periodic_workloads_not_in_lockstep.timeout = 240
