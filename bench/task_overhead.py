#!/usr/bin/env python3
"""task_overhead.py - taskprobe's cost on a syscall-heavy workload, side by side in one run:
probe off / probe on with the workload outside the scope / workload in the scope (snooped) / no scope
filter at all; the modes are interleaved for ROUNDS rounds and the median ns per call is kept. Then
one snooped run with --stats gives the BPF run time per event (bpf_stats).

usage: bench/task_overhead.py [ROUNDS] [BUILD]   (root; BUILD defaults to build)"""
import os
import statistics
import subprocess
import sys
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
BUILD = sys.argv[2] if len(sys.argv) > 2 else "build"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TASKPROBE = os.path.join(ROOT, BUILD, "probes", "taskprobe")
BENCH = os.path.join(ROOT, BUILD, "bench", "task_bench")
# a minimal syscall, a small cached read, a larger cached read (closer to a real application's calls)
WORK = [("getppid", "3000000"), ("pread", "1500000", "4096"), ("pread", "150000", "65536")]


def start_probe(args):
    log = open("/tmp/task_overhead.log", "w")
    p = subprocess.Popen([TASKPROBE, "-t", "1"] + args, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with open("/tmp/task_overhead.log") as f:
            if "started:" in f.read():
                return p
        time.sleep(0.05)
    p.kill()
    raise SystemExit("taskprobe did not start")


def stop_probe(p):
    if p:
        p.terminate()
        p.wait(10)


def run_work():
    out = {}
    for w in WORK:
        r = subprocess.run([BENCH] + list(w), capture_output=True, text=True, check=True)
        # CPU ns per call (robust to other load on the machine)
        out[" ".join([w[0]] + list(w[2:]))] = float(r.stdout.split()[2])
    return out


def main():
    idle = subprocess.Popen(["sleep", "3600"])  # the process in scope when the workload is not
    modes = {
        "off": None,
        "outside scope": ["--pid", str(idle.pid)],
        "snooped": ["--comm", "task_bench"],
        "no filter (all)": [],
    }
    res = {m: {" ".join([w[0]] + list(w[2:])): [] for w in WORK} for m in modes}
    try:
        for _ in range(ROUNDS):
            for m, args in modes.items():
                p = start_probe(args) if args is not None else None
                try:
                    for k, v in run_work().items():
                        res[m][k].append(v)
                finally:
                    stop_probe(p)
        base = {k: statistics.median(v) for k, v in res["off"].items()}
        print("taskprobe overhead, median of %d interleaved rounds (CPU ns per call, slowdown vs off)" % ROUNDS)
        for m in modes:
            row = []
            for k in base:
                med = statistics.median(res[m][k])
                row.append("%s %.1f ns (%+.1f%%)" % (k, med, (med / base[k] - 1) * 100))
            print("  %-16s %s" % (m, ", ".join(row)))
        # BPF run time per event, snooped, all sub-probes
        p = start_probe(["--comm", "task_bench", "--stats"])
        try:
            time.sleep(1.2)
            run_work()
            time.sleep(1.5)
        finally:
            stop_probe(p)
        with open("/tmp/task_overhead.log") as f:
            lines = [l for l in f if "bpf_stats" in l]
        best = max(lines, key=lambda l: sum(int(x.split("=")[1].split("/")[0]) for x in l.split(": ", 2)[2].split()
                                            if "=" in x), default="")
        print("bpf_stats during the snooped run (program=runs/ns per run):")
        print("  " + (best.split(": ", 2)[2].strip() if best else "(none)"))
    finally:
        idle.kill()
        idle.wait()


if __name__ == "__main__":
    main()
