#!/usr/bin/env python3
"""stack_quiet_accuracy.py - on-CPU samples of a periodic light function against its CPU time.

tests/helpers/quiet_spin does quiet_work() 5 ms of every 50 ms (10 %), then spins every CPU; a standalone
stackprobe at P ms (default 53, autotrace's ring rate) samples it from before the start. Each run prints
quiet_work's samples x P against the process's own CPU time up to the spin (CLOCK_PROCESS_CPUTIME_ID),
with the sampler's health (oncpu_missed, oncpu_late). Ratio 1.0 is exact; at ~15 samples a run the noise
is about +-25 %.

  bench/stack_quiet_accuracy.py [RUNS] [PERIOD_MS] [QUIET_S] [SPIN_S]
"""
import glob
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("GG_BUILD", os.path.join(ROOT, "build"))


def one(period, quiet_s, spin_s):
    tmp = tempfile.mkdtemp(prefix="gg-quietacc-")
    try:
        sp = subprocess.Popen([os.path.join(BUILD, "probes", "stackprobe"), "--perf-sample-period", str(period),
                               "--svg-period", "600", "-t", "600", "--flame-dir", tmp + "/f", "--svg-dir", tmp + "/s",
                               "--comm", "quiet_spin", "-l", "debug"], stdout=subprocess.DEVNULL,
                              stderr=open(tmp + "/err", "w"))
        time.sleep(2)  # attached, and its --comm scan ready (every 2 s)
        w = subprocess.Popen(os.environ.get("GG_QS_PREFIX", "").split() + ["nice", "-n", "-10", os.path.join(BUILD, "tests", "quiet_spin"), str(quiet_s), "10",
                              str(spin_s), str(os.cpu_count())], stdout=subprocess.PIPE, text=True)
        quiet_cpu = None
        for line in w.stdout:
            if line.startswith("quiet_cpu_s="):
                quiet_cpu = float(line.split("=")[1])
        w.wait()
        time.sleep(0.5)
        sp.send_signal(signal.SIGTERM)
        sp.wait(30)
        with open(tmp + "/err", errors="replace") as f:
            err = f.read()
        samples = 0
        for f in glob.glob(tmp + "/f/oncpu/*.folded"):
            with open(f) as fh:
                for line in fh:
                    stack, n = line.rsplit(" ", 1)
                    if ";quiet_work" in stack:
                        samples += int(n)
        if os.environ.get("GG_QS_KEEP"):
            os.system("cat %s/f/oncpu/*.folded | sort -k2 -n -t' ' | tail -8" % tmp)
        return samples, quiet_cpu, err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    period = int(sys.argv[2]) if len(sys.argv) > 2 else 53
    quiet_s = float(sys.argv[3]) if len(sys.argv) > 3 else 4
    spin_s = float(sys.argv[4]) if len(sys.argv) > 4 else 3
    ratios = []
    for i in range(runs):
        samples, quiet_cpu, err = one(period, quiet_s, spin_s)
        ratio = samples * period / 1000.0 / quiet_cpu if quiet_cpu else float("nan")
        ratios.append(ratio)
        tail = [ln.split("flamegraph: ", 1)[-1] for ln in err.splitlines() if "strata" in ln][-3:]
        print("run %d: quiet_work %d samples = %.3f s, CPU %.3f s, ratio %.2f; %s" % (
            i + 1, samples, samples * period / 1000.0, quiet_cpu or 0, ratio, "; ".join(tail)))
    print("median ratio %.2f (min %.2f, max %.2f) over %d runs, P = %d ms, load %.1f" % (
        statistics.median(ratios), min(ratios), max(ratios), runs, period, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
