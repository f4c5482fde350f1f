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
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import BUILD, bpf_stats, go, start_stackprobe, stop_run

CPU_SPLIT = os.path.join(BUILD, "tests", "cpu_split")
CALLS_PER_ROUND = 3  # malloc, calloc, realloc (free is not probed)
PROGS = ("sp_malloc", "sp_calloc", "sp_realloc", "sp_alloc_ret", "sp_free")


def one(rounds, tmp, probe, mode="alloc"):
    w = subprocess.Popen([CPU_SPLIT, "-w", "-d", "0", "-m", str(rounds)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline().split()[0].split("=")[1])
    sp = None
    try:
        if probe:
            sp = start_stackprobe(tmp, pid, ["-P", "mem", "--mem-live" if mode == "live" else "--mem-alloc", "1"])
        line, bpf_ns, _ = go(w, sp, PROGS)
        facts = dict(kv.split("=") for kv in line.split())
        calls = rounds * CALLS_PER_ROUND
        return int(facts["elapsed_us"]) * 1000 / calls, (bpf_ns / calls if probe else 0)
    finally:
        stop_run(w, sp)


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    mode = sys.argv[3] if len(sys.argv) > 3 else "alloc"
    off, on, bpf = [], [], []
    with bpf_stats(), tempfile.TemporaryDirectory() as tmp:
        for _ in range(pairs):
            off.append(one(rounds, tmp, False)[0])
            t, b = one(rounds, tmp, True, mode)
            on.append(t)
            bpf.append(b)
    m_off, m_on = statistics.median(off), statistics.median(on)
    print("%d pairs, %d rounds (%d allocator calls each run)" % (pairs, rounds, rounds * CALLS_PER_ROUND))
    print("per allocator call: without %.0f ns, with mem_%s uprobes %.0f ns: +%.2f us per call "
          "(BPF programs %.2f us of it)" % (m_off, mode, m_on, (m_on - m_off) / 1000, statistics.median(bpf) / 1000))
    print("without: %s" % " ".join("%.0f" % x for x in off))
    print("with:    %s" % " ".join("%.0f" % x for x in on))


if __name__ == "__main__":
    main()
