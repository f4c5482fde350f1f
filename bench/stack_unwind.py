#!/usr/bin/env python3
"""stack_unwind.py - stackprobe's user stacks on Debian programs built without frame pointers (perl,
python3, bash running CPU-bound scripts) with .eh_frame unwinding (--dwarf-unwind 1) and with frame
pointers only (--dwarf-unwind 0), A/B alternated: per program the share of [unknown] frames and of
complete stacks (the outermost user frame is _start), weighted by samples; and the BPF cost of one
on-CPU sample (run_time_ns / run_cnt of sp_oncpu0/1 from the probe's fdinfo, with BPF_ENABLE_STATS held
for the run: no global sysctl changed). Prints median and min..max over the pairs.
    bench/stack_unwind.py [PAIRS] [SECONDS]      (GG_BUILD selects the build, default build)"""
import ctypes
import glob
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.join(ROOT, os.environ.get("GG_BUILD", "build"))

WORKLOADS = {
    "perl": ["perl", "-e", "sub f { my $s = 0; $s += $_ * $_ for 1..1000; return $s } "
             "my %h; while (1) { f(); $h{$_ % 100} .= 'x' for 1..100; %h = () }"],
    "python3": ["python3", "-c", "import json\ndef f(n): return sorted(str(i * i) for i in range(n))\n"
                "while True: f(300); json.dumps({'a': list(range(100))})"],
    "bash": ["bash", "-c", "f() { local i=0 s=; while [ $i -lt 200 ]; do i=$((i+1)); s=\"$s$i\"; done; }; "
             "while true; do f; done"],
}

BPF_ENABLE_STATS = 32


def enable_bpf_stats():
    """An fd that keeps BPF run-time statistics on while it is open (BPF_ENABLE_STATS)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # struct { __u32 type; } BPF_STATS_RUN_TIME = 0
    fd = libc.syscall(321, BPF_ENABLE_STATS, attr, 8)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "BPF_ENABLE_STATS")
    return fd


def prog_stats(pid):
    """{prog name prefix: (run_time_ns, run_cnt)} of the perf_event programs pid holds."""
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf-prog":
                continue
            info = dict(l.split(":\t", 1) for l in open("/proc/%d/fdinfo/%s" % (pid, fd)).read().splitlines()
                        if ":\t" in l)
        except OSError:
            continue
        if info.get("prog_type", "").strip() != "7":  # BPF_PROG_TYPE_PERF_EVENT
            continue
        tag = info.get("prog_tag", "").strip()
        out[tag] = (int(info.get("run_time_ns", 0)), int(info.get("run_cnt", 0)))
    return out


def classify(tmp, pids):
    """{program: [frames, unknown frames, samples, complete samples]} from the folded files."""
    rows = {}
    for path in glob.glob(os.path.join(tmp, "f", "oncpu", "*.folded")):
        for line in open(path):
            stack, _, v = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            head = frames[0]
            if not head.startswith("[") or "] " not in head:
                continue
            pid = int(head[1:head.index("]")])
            comm = pids.get(pid)
            if not comm:
                continue
            user = [f for f in frames[1:] if not f.endswith("_[k]")]
            r = rows.setdefault(comm, [0, 0, 0, 0])
            r[0] += len(user) * int(v)
            r[1] += sum(1 for f in user if f.startswith("[unknown]")) * int(v)
            r[2] += int(v)
            r[3] += int(v) if user and user[0] == "_start" else 0
    return rows


def run(mode, secs, tmp):
    for d in ("f", "s"):
        subprocess.run(["rm", "-rf", os.path.join(tmp, d)], check=True)
    procs = {name: subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True) for name, cmd in WORKLOADS.items()}
    pids = {p.pid: name for name, p in procs.items()}
    err = open(os.path.join(tmp, "sp.err"), "w")
    cmd = [os.path.join(BUILD, "probes", "stackprobe"), "-P", "oncpu", "--svg-period", "600", "--flame-dir",
           os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t", "600", "--dwarf-unwind", str(mode)]
    for pid in pids:
        cmd += ["--pid", str(pid)]
    sp = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    t0 = time.time()
    while "started:" not in open(err.name).read():
        if time.time() - t0 > 60 or sp.poll() is not None:
            raise RuntimeError(open(err.name).read())
        time.sleep(0.05)
    before = prog_stats(sp.pid)
    time.sleep(secs)
    after = prog_stats(sp.pid)
    sp.send_signal(signal.SIGTERM)
    sp.wait(60)
    for p in procs.values():
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    ns = sum(after[t][0] - before.get(t, (0, 0))[0] for t in after)
    cnt = sum(after[t][1] - before.get(t, (0, 0))[1] for t in after)
    return classify(tmp, pids), (ns / cnt if cnt else float("nan")), cnt


def fmt(xs, unit=""):
    return "%.1f%s (%.1f..%.1f)" % (statistics.median(xs), unit, min(xs), max(xs))


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 6
    stats_fd = enable_bpf_stats()
    tmp = tempfile.mkdtemp(prefix="gg-unwind-bench-")
    res = {0: [], 1: []}
    try:
        for i in range(pairs):
            for mode in ((0, 1) if i % 2 == 0 else (1, 0)):
                rows, ns, cnt = run(mode, secs, tmp)
                res[mode].append((rows, ns, cnt))
                print("pair %d mode %d: %s, %.0f ns/sample over %d" % (
                    i, mode, " ".join("%s %.1f%%/%.1f%%" % (c, 100.0 * r[1] / max(r[0], 1), 100.0 * r[3] / max(r[2], 1))
                                      for c, r in sorted(rows.items())), ns, cnt), flush=True)
    finally:
        os.close(stats_fd)
        subprocess.run(["rm", "-rf", tmp])
    print("\n%-10s %-12s %-24s %-24s" % ("program", "unwinding", "[unknown] frames", "complete stacks"))
    for comm in WORKLOADS:
        for mode, label in ((0, "frame ptrs"), (1, ".eh_frame")):
            unk = [100.0 * r[0][comm][1] / max(r[0][comm][0], 1) for r in res[mode] if comm in r[0]]
            comp = [100.0 * r[0][comm][3] / max(r[0][comm][2], 1) for r in res[mode] if comm in r[0]]
            if unk:
                print("%-10s %-12s %-24s %-24s" % (comm, label, fmt(unk, " %"), fmt(comp, " %")))
    for mode, label in ((0, "frame ptrs"), (1, ".eh_frame")):
        print("BPF per on-CPU sample, %-10s: %s ns" % (label, fmt([r[1] for r in res[mode]])))


if __name__ == "__main__":
    main()
