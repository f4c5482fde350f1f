#!/usr/bin/env python3
"""stack_mmap.py - what mem_live's memory-syscall hooks (mmap/munmap/mremap/brk tracepoints,
bpf/stackprobe_mmap.bpf.h) cost: bench/mmap_loop.c timed by itself without stackprobe and with
`stackprobe -P mem --mem-live 1 --pid <it>`, alternated pair by pair; prints the median ns per system
call with and without (min..max), the difference, and the BPF programs' own run time per call.
Kinds: mmap (anonymous 64 KiB mmap + munmap: each mmap records a region with its stack, each munmap
gives it back), brk (sbrk +4096/-4096: brk growth recorded, the shrink given back), getppid (no hook).
    bench/stack_mmap.py [PAIRS] [ROUNDS] [KINDS]   (default 7 pairs, 100000 rounds, mmap,brk,getppid;
    GG_BUILD selects the build)
Run it alone: flock /tmp/gg-bench.lock python3 bench/stack_mmap.py"""
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import BUILD, bpf_stats, go, start_stackprobe, stop_run

LOOP = os.path.join(BUILD, "bench", "mmap_loop")
PROGS = ("sp_mmap_enter", "sp_mmap_exit", "sp_munmap_enter", "sp_brk_enter", "sp_brk_exit")


def one(kind, rounds, tmp, probe):
    w = subprocess.Popen([LOOP, kind, str(rounds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline().split("=")[1])
    sp = None
    try:
        if probe:
            sp = start_stackprobe(tmp, pid, ["-P", "mem", "--mem-live", "1"])
        line, bpf_ns, _ = go(w, sp, PROGS)
        return float(line.split("=")[1]), bpf_ns / (2 * rounds)
    finally:
        stop_run(w, sp)


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    kinds = (sys.argv[3] if len(sys.argv) > 3 else "mmap,brk,getppid").split(",")
    res = {k: ([], [], []) for k in kinds}
    with bpf_stats(), tempfile.TemporaryDirectory() as tmp:
        for i in range(pairs):
            for k in kinds:
                order = (False, True) if i % 2 == 0 else (True, False)
                for probe in order:
                    ns, bpf = one(k, rounds, tmp, probe)
                    res[k][1 if probe else 0].append(ns)
                    if probe:
                        res[k][2].append(bpf)
    print("%d pairs, %d rounds (2 system calls each)" % (pairs, rounds))
    print("| kind | without: ns/call median (min..max) | with mem_live (min..max) | difference | BPF ns/call |")
    print("|---|---|---|---|---|")
    for k in kinds:
        off, on, bpf = res[k]
        print("| %s | %.0f (%.0f..%.0f) | %.0f (%.0f..%.0f) | %+.0f ns | %.0f |" %
              (k, statistics.median(off), min(off), max(off), statistics.median(on), min(on), max(on),
               statistics.median(on) - statistics.median(off), statistics.median(bpf)))


if __name__ == "__main__":
    main()
