"""benchlib.py - what the stackprobe bench scripts share: the BPF run time of one process's programs
(bpf_stats), kernel.bpf_stats_enabled on for a run, stackprobe started on a workload, and a workload's
run measured."""
import contextlib
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import BUILD, bpf_prog_ids, start_logged  # noqa: E402

STACKPROBE = os.path.join(BUILD, "probes", "stackprobe")
BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"


def bpf_run(pid, match):
    """(run time ns, runs) summed over the BPF programs process pid holds whose name match(name) accepts
    (other probes running on a shared machine are not counted); (0, 0) for pid 0."""
    ids = bpf_prog_ids(pid)
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    ns = n = 0
    for p in json.loads(out or "[]"):
        if p.get("id") in ids and match(p.get("name", "")):
            ns += p.get("run_time_ns", 0)
            n += p.get("run_cnt", 0)
    return ns, n


@contextlib.contextmanager
def bpf_stats():
    """kernel.bpf_stats_enabled on for the block, set back to what it was after."""
    with open(BPF_STATS) as f:
        was = f.read().strip()
    with open(BPF_STATS, "w") as f:
        f.write("1")
    try:
        yield
    finally:
        with open(BPF_STATS, "w") as f:
            f.write(was)


def go(w, sp, progs):
    """Tells the waiting workload w to run ("go" on its stdin) and reads its one-line report: (the line, run
    time ns and runs of the BPF programs named in progs that stackprobe sp (None: none) held meanwhile)."""
    ns0, n0 = bpf_run(sp.pid if sp else 0, progs.__contains__)
    w.stdin.write("go\n")
    w.stdin.flush()
    line = w.stdout.readline()
    ns1, n1 = bpf_run(sp.pid if sp else 0, progs.__contains__)
    return line, ns1 - ns0, n1 - n0


def start_stackprobe(tmp, pid, args):
    """stackprobe (args) on pid, records discarded, its log in tmp/sp.err, once it says it started."""
    return start_logged([STACKPROBE] + args + ["--pid", str(pid), "--svg-period", "600", "--flame-dir",
                                               os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t",
                                               "600"], os.path.join(tmp, "sp.err"))


def stop_run(w, sp):
    """The workload w told to exit (stdin closed), then stackprobe sp (when there is one) stopped."""
    w.stdin.close()
    w.wait(10)
    if sp:
        sp.send_signal(signal.SIGTERM)
        sp.wait(30)
