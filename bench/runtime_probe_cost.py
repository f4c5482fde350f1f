"""runtime_probe_cost.py - CPU per report period and memory of jvmprobe, hwprobe and virtualized_infos,
run standalone with -t 1 (one report a second) for a while, several runs: CPU time (on-CPU ns of every
thread, /proc/<pid>/task/*/schedstat) per report and peak resident memory (VmHWM).

    python3 bench/runtime_probe_cost.py jvm [--jvms N] [--runs R] [--secs S]
    python3 bench/runtime_probe_cost.py hw|virt [--runs R] [--secs S]

jvm: N idle JVMs (tests/integration/java/JvmLoad.java, compiled here) are running during the runs.
virt: N paused qemu processes (-S, -machine none), when qemu-system-x86_64 is installed."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import BUILD, ROOT, proc_oncpu_ns, proc_status_kb, stop_proc  # noqa: E402

BINS = {"jvm": "jvmprobe", "hw": "hwprobe", "virt": "virtualized_infos"}


def one_run(binary, secs):
    p = subprocess.Popen([binary, "-t", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = 0
    time.sleep(1.5)  # start-up (and the first report) left out
    c0, t0 = proc_oncpu_ns(p.pid), time.time()
    time.sleep(secs)
    c1, t1 = proc_oncpu_ns(p.pid), time.time()
    hwm = proc_status_kb(p.pid, "VmHWM")
    p.terminate()
    out, _ = p.communicate(timeout=10)
    lines = len(out.splitlines())
    return (c1 - c0) / 1e6 / (t1 - t0), hwm, lines


def start_jvms(n):
    d = tempfile.mkdtemp(prefix="gg-bench-jvm-")
    shutil.copy(os.path.join(ROOT, "tests", "integration", "java", "JvmLoad.java"), d)
    for name in ["Warm", "Gen0"]:
        with open(os.path.join(d, name + ".java"), "w") as f:
            f.write("public class %s { }\n" % name)
    subprocess.run(["javac", "-d", ".", "JvmLoad.java", "Warm.java", "Gen0.java"], cwd=d, check=True)
    procs = []
    for _ in range(n):
        p = subprocess.Popen(["java", "-Xmx64m", "-cp", ".", "JvmLoad", "1", "1", "0"], cwd=d,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        p.stdout.readline()
        procs.append(p)
    return d, procs


def start_qemus(n):
    procs = []
    if not shutil.which("qemu-system-x86_64"):
        return procs
    for i in range(n):
        procs.append(subprocess.Popen(
            ["qemu-system-x86_64", "-S", "-name", "guest=gg-bench-%d-%d" % (os.getpid(), i),
             "-uuid", "00000000-0000-4000-8000-%012d" % i, "-nographic", "-display", "none", "-machine", "none",
             "-monitor", "none", "-serial", "none", "-nodefaults"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1)
    return procs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe", choices=sorted(BINS))
    ap.add_argument("--jvms", type=int, default=4)
    ap.add_argument("--qemus", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--secs", type=float, default=20)
    a = ap.parse_args()
    binary = os.path.join(BUILD, "probes", BINS[a.probe])
    d, procs = None, []
    if a.probe == "jvm":
        d, procs = start_jvms(a.jvms)
    elif a.probe == "virt":
        procs = start_qemus(a.qemus)
    try:
        ms, hwms, lines = [], [], []
        for _ in range(a.runs):
            m, h, n = one_run(binary, a.secs)
            ms.append(m)
            hwms.append(h)
            lines.append(n)
        nproc = len([x for x in os.listdir("/proc") if x.isdigit()])
        print("%s: %d runs of %.0f s at -t 1, %d processes on the host, %d %s: CPU ms per report median %.3f "
              "(min %.3f, max %.3f); VmHWM median %d KiB; records per run median %d" %
              (BINS[a.probe], a.runs, a.secs, nproc, len(procs), "JVMs" if a.probe == "jvm" else "qemus",
               statistics.median(ms), min(ms), max(ms), statistics.median(hwms), statistics.median(lines)))
    finally:
        for p in procs:  # SIGTERM: a JVM removes its perf data file as it exits
            stop_proc(p, timeout=20)
        if d:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
