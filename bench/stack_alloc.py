#!/usr/bin/env python3
"""stack_alloc.py - what mem_alloc (allocator uprobes) and mem_live (uprobes, uretprobes and free) cost the
profiled process: tests/helpers/cpu_split -m ROUNDS (each round: malloc + calloc + realloc + 2 x free)
timed by itself, without stackprobe and with `stackprobe -P mem --mem-alloc 1 --pid <it>` (or
`--mem-live 1`), interleaved; prints the median time per allocator call with and without, their
difference (the uprobe traps + BPF programs per call, frees included), and the BPF programs' own run
time per allocator call (bpf_stats).
    bench/stack_alloc.py [PAIRS] [ROUNDS] [alloc|live]   (default 7 pairs, 200000 rounds, alloc;
    GG_BUILD selects the build)
Run it alone: flock /tmp/gg-bench.lock python3 bench/stack_alloc.py"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import BUILD, start_logged  # noqa: E402

CPU_SPLIT = os.path.join(BUILD, "tests", "cpu_split")
STACKPROBE = os.path.join(BUILD, "probes", "stackprobe")
CALLS_PER_ROUND = 3  # malloc, calloc, realloc (free is not probed)


def prog_ids(pid):
    """BPF program ids pid holds (fds of programs and links: "prog_id:" in their fdinfo)."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(d) if pid and os.path.isdir(d) else []:
        try:
            with open(os.path.join(d, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def bpf_prog(name, pid):
    """Run time and count of program name of stackprobe pid (other stackprobes may run at the same time)."""
    ids = prog_ids(pid)
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    tot_ns = tot_n = 0
    for p in json.loads(out or "[]"):
        if p.get("name") == name and p.get("id") in ids:
            tot_ns += p.get("run_time_ns", 0)
            tot_n += p.get("run_cnt", 0)
    return tot_ns, tot_n


PROGS = ("sp_malloc", "sp_calloc", "sp_realloc", "sp_alloc_ret", "sp_free")


def one(rounds, tmp, probe, mode="alloc"):
    w = subprocess.Popen([CPU_SPLIT, "-w", "-d", "0", "-m", str(rounds)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline().split()[0].split("=")[1])
    sp = None
    try:
        if probe:
            opt = "--mem-live" if mode == "live" else "--mem-alloc"
            sp = start_logged([STACKPROBE, "-P", "mem", opt, "1", "--pid", str(pid), "--svg-period", "600",
                               "--flame-dir", os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t", "600"],
                              os.path.join(tmp, "sp.err"))
        b0 = [bpf_prog(p, sp.pid if sp else 0) for p in PROGS]
        w.stdin.write("go\n")
        w.stdin.flush()
        facts = dict(kv.split("=") for kv in w.stdout.readline().split())
        b1 = [bpf_prog(p, sp.pid if sp else 0) for p in PROGS]
        bpf_ns = sum(b[0] for b in b1) - sum(b[0] for b in b0)
        calls = rounds * CALLS_PER_ROUND
        return int(facts["elapsed_us"]) * 1000 / calls, (bpf_ns / calls if probe else 0)
    finally:
        w.stdin.close()
        w.wait(10)
        if sp:
            sp.send_signal(signal.SIGTERM)
            sp.wait(30)


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    mode = sys.argv[3] if len(sys.argv) > 3 else "alloc"
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    off, on, bpf = [], [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(pairs):
                off.append(one(rounds, tmp, False)[0])
                t, b = one(rounds, tmp, True, mode)
                on.append(t)
                bpf.append(b)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_was)
    m_off, m_on = statistics.median(off), statistics.median(on)
    print("%d pairs, %d rounds (%d allocator calls each run)" % (pairs, rounds, rounds * CALLS_PER_ROUND))
    print("per allocator call: without %.0f ns, with mem_%s uprobes %.0f ns: +%.2f us per call "
          "(BPF programs %.2f us of it)" % (m_off, mode, m_on, (m_on - m_off) / 1000, statistics.median(bpf) / 1000))
    print("without: %s" % " ".join("%.0f" % x for x in off))
    print("with:    %s" % " ".join("%.0f" % x for x in on))


if __name__ == "__main__":
    main()
