"""tprof_gc.py - ground truth for tprofiling's python_gc: builds a large graph of objects, then makes
three full collections (gc.collect(), automatic ones off) 150 ms apart, timing each; prints "pid=<pid>", waits for a line on
stdin, works, prints the durations in ns as a JSON list, and waits for stdin to close. Run it with
Debian's /usr/bin/python3 (built with the gc__start/gc__done USDT probes)."""
import gc
import json
import os
import sys
import time

print("pid=%d" % os.getpid(), flush=True)
sys.stdin.readline()
gc.disable()  # no automatic collection: the three below are the only ones
junk = []
for i in range(200000):
    a = []
    b = [a]
    a.append(b)
    junk.append(a)
time.sleep(0.3)
out = []
for r in range(3):
    t0 = time.perf_counter_ns()
    gc.collect()
    out.append(time.perf_counter_ns() - t0)
    time.sleep(0.15)
print(json.dumps(out), flush=True)
sys.stdin.read()
