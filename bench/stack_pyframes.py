#!/usr/bin/env python3
"""stack_pyframes.py - what the Python frame walk costs per on-CPU sample: the BPF run time per run of
stackprobe's sp_oncpu0/1 (bpf_stats) while it samples Debian's python3.11 running
tests/integration/scripts/py_hot.py (walk: thread state, up to 48 frames) against the same for
tests/helpers/cpu_split (a C process: one map lookup, no walk), alternated.
    bench/stack_pyframes.py [PAIRS] [SECONDS]   (default 5 pairs, 3 s; GG_BUILD selects the build)
Run it alone: flock /tmp/gg-bench.lock python3 bench/stack_pyframes.py"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.join(ROOT, os.environ.get("GG_BUILD", "build"))
STACKPROBE = os.path.join(BUILD, "probes", "stackprobe")
CPU_SPLIT = os.path.join(BUILD, "tests", "cpu_split")
PY_HOT = os.path.join(ROOT, "tests", "integration", "scripts", "py_hot.py")


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


def oncpu_stats(pid):
    """Run time and count of the programs of stackprobe pid (other stackprobes may run at the same time)."""
    ids = prog_ids(pid)
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    ns = n = 0
    for p in json.loads(out or "[]"):
        if p.get("name") in ("sp_oncpu0", "sp_oncpu1") and p.get("id") in ids:
            ns += p.get("run_time_ns", 0)
            n += p.get("run_cnt", 0)
    return ns, n


def one(kind, seconds, tmp):
    if kind == "python":
        w = subprocess.Popen(["/usr/bin/python3.11", PY_HOT, str(seconds)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        w.stdout.readline()
    else:
        w = subprocess.Popen([CPU_SPLIT, "-w", "-c", str(seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        w.stdout.readline()
    err = open(os.path.join(tmp, "sp.err"), "w")
    sp = subprocess.Popen([STACKPROBE, "-P", "oncpu", "--pid", str(w.pid), "--svg-period", "600", "--flame-dir",
                           os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t", "600"],
                          stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.time() + 20
        while "started:" not in open(err.name).read():
            if sp.poll() is not None or time.time() > deadline:
                raise SystemExit("stackprobe did not start")
            time.sleep(0.05)
        time.sleep(0.5)  # the scan that registers the interpreter
        b0 = oncpu_stats(sp.pid)
        w.stdin.write("go\n")
        w.stdin.flush()
        w.stdout.readline()
        b1 = oncpu_stats(sp.pid)
    finally:
        sp.send_signal(signal.SIGTERM)
        sp.wait(30)
        w.stdin.close()
        w.wait(10)
    n = b1[1] - b0[1]
    return (b1[0] - b0[0]) / n if n else 0, n


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    res = {"c": [], "python": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(pairs):
                for kind in ("c", "python"):
                    res[kind].append(one(kind, seconds, tmp))
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
    for kind, v in res.items():
        ns = [x[0] for x in v]
        print("%-6s BPF ns per on-CPU sample: median %.0f (runs %s; samples per run %s)" %
              (kind, statistics.median(ns), " ".join("%.0f" % x for x in ns), " ".join(str(x[1]) for x in v)))


if __name__ == "__main__":
    main()
