#!/usr/bin/env python3
"""stack_periodic.py - one periodic workload (tests/helpers/cpu_split -T: 70 % of every period in
periodic_hot, 30 % in periodic_cold, phase-locked to the monotonic clock) profiled by stackprobe at its
default 10 ms period and by `perf record -F 997 -g` at the same time; prints both shares of periodic_hot
in periodic_hot + periodic_cold and the workload's own measurement (thread CPU clock).

    bench/stack_periodic.py PERIOD_MS CPU_SECONDS [stackprobe flags...]   (GG_BUILD selects the build)"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import test_stackprobe as T  # noqa: E402  (its Workload, Standalone and folded-file helpers)


def main():
    ms, cpu = int(sys.argv[1]), sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="gg-bench-periodic-")
    w = T.Workload(["-T", str(ms * 1000), "-c", cpu])
    sp = T.Standalone(tmp, ["--pid", str(w.pid), "-P", "oncpu", "--svg-period", "600", "--flame-dir",
                            os.path.join(tmp, "flame"), "--svg-dir", os.path.join(tmp, "svg")] + sys.argv[3:])
    ctl, ack = os.path.join(tmp, "perf.ctl"), os.path.join(tmp, "perf.ack")
    os.mkfifo(ctl)
    os.mkfifo(ack)
    perf = subprocess.Popen(["perf", "record", "-F", "997", "-g", "-D", "-1", "--control", "fifo:%s,%s" % (ctl, ack),
                             "-p", str(w.pid), "-o", os.path.join(tmp, "perf.data")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    T.perf_enable(perf, ctl, ack)
    w.go()
    f = w.wait_done()
    perf.send_signal(signal.SIGINT)
    perf.wait()
    sp.stop()
    w.finish()
    st = T.folded(os.path.join(tmp, "flame"), "oncpu")
    pre = "[%d] cpu_split;" % w.pid
    hot, n = T.share_incl(st, pre, "periodic_hot")
    cold, _ = T.share_incl(st, pre, "periodic_cold")
    out = subprocess.run(["perf", "script", "-i", os.path.join(tmp, "perf.data"), "-F", "ip,sym"],
                         capture_output=True, text=True).stdout
    ph = sum("periodic_hot" in b for b in out.split("\n\n"))
    pc = sum("periodic_cold" in b for b in out.split("\n\n"))
    print("period %d ms: stackprobe %.4f (n=%d) perf -F 997 %.4f (n=%d) truth %.4f" %
          (ms, hot / (hot + cold), n, ph / max(ph + pc, 1), ph + pc, f["hot_ns"] / (f["hot_ns"] + f["cold_ns"])))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
