#!/usr/bin/env python3
"""stack_unknown.py - how well stackprobe names frames on real programs: runs the test workloads
(cpu_split, its stripped copy) and a few Debian binaries (python3, perl, gzip, sha256sum, bash) under
stackprobe -P oncpu (every process) for SECONDS, then counts, per program, the frames that got a symbol,
only a module name ([/path]) or nothing ([unknown] 0x...), weighted by samples.
    bench/stack_unknown.py [SECONDS]     (GG_BUILD selects the build, default build)"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import BUILD, start_logged  # noqa: E402

WORKLOADS = {
    "cpu_split": [os.path.join(BUILD, "tests", "cpu_split"), "-d", "60"],
    "cpu_split_strip": [os.path.join(BUILD, "tests", "cpu_split_stripped"), "-d", "60"],
    "python3": ["python3", "-c", "import hashlib\nwhile True: hashlib.sha1(b'x' * 100).hexdigest(); sorted(range(500))"],
    "perl": ["perl", "-e", "my %h; while (1) { $h{$_ % 1000} .= 'x' for 1..1000; %h = (); }"],
    "gzip": ["sh", "-c", "head -c 2000000000 /dev/zero | gzip -9 > /dev/null"],
    "sha256sum": ["sh", "-c", "head -c 20000000000 /dev/zero | sha256sum > /dev/null"],
    "bash": ["bash", "-c", "i=0; while true; do i=$((i+1)); s=\"$s\"; done"],
}


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 8
    tmp = tempfile.mkdtemp(prefix="gg-stack-bench-")
    sp = start_logged([os.path.join(BUILD, "probes", "stackprobe"), "-P", "oncpu", "--svg-period", "600",
                       "--flame-dir", os.path.join(tmp, "f"), "--svg-dir", os.path.join(tmp, "s"), "-t", "600"],
                      os.path.join(tmp, "sp.err"))
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
             for cmd in WORKLOADS.values()]
    time.sleep(secs)
    for p in procs:
        os.killpg(p.pid, signal.SIGKILL)
    sp.send_signal(signal.SIGTERM)
    sp.wait(30)
    for p in procs:
        p.wait()
    rows = {}
    for path in glob.glob(os.path.join(tmp, "f", "oncpu", "*.folded")):
        for line in open(path):
            stack, _, v = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            comm = frames[0].split("] ", 1)[1] if "] " in frames[0] else frames[0]
            r = rows.setdefault(comm, [0, 0, 0, 0])
            for fr in frames[1:]:
                kind = 2 if fr.startswith("[unknown]") else 1 if fr.startswith("[") else 0
                r[kind] += int(v)
            r[3] += int(v)
    print("%-16s %8s %8s %12s %9s" % ("program", "samples", "named", "module-only", "unknown"))
    for comm in list(WORKLOADS) + ["(all others)"]:
        if comm == "(all others)":
            r = [sum(x[i] for c, x in rows.items() if c not in WORKLOADS and c != "sh" and c != "head") for i in range(4)]
        else:
            r = rows.get(comm, [0, 0, 0, 0])
        tot = r[0] + r[1] + r[2]
        if tot:
            print("%-16s %8d %7.1f%% %11.1f%% %8.1f%%" % (comm, r[3], 100 * r[0] / tot, 100 * r[1] / tot, 100 * r[2] / tot))


if __name__ == "__main__":
    main()
