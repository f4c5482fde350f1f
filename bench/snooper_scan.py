#!/usr/bin/env python3
"""snooper_scan.py - cost of the REST snooper scan (status.json snooper_scan_us) with 32 proc_name entries:
plain names against the worst comm patterns the validator lets through; runs alternated, the machine's
own processes. Run as root from the repository: python3 bench/snooper_scan.py"""
import os
import sys
import statistics
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from test_rest import RestEnv, expect


def run(env, names):
    expect(env.put("baseinfo", {"snoopers": {"proc_name": [{"comm": n} for n in names]}, "state": "running"}), 200)
    time.sleep(1.2)
    vals = []
    last = None
    t_end = time.monotonic() + 6
    while time.monotonic() < t_end:
        r = env.sup.status()["rest_api_server"]
        if r.get("snooper_scans") != last:
            last = r.get("snooper_scans")
            vals.append(r["snooper_scan_us"])
        time.sleep(0.1)
    return vals, r.get("snooper_scan_procs")

env = RestEnv().start()
try:
    plain = ["ggplain%02d" % i for i in range(32)]
    patho = ["(a|a)*(a|a)*(a|a)*b%02d" % i if i % 2 else "(.*a){16}b%02d" % i for i in range(32)]
    res = {"plain": [], "regex": []}
    procs = None
    for rnd in range(4):
        for k, names in (("plain", plain), ("regex", patho)) if rnd % 2 == 0 else (("regex", patho), ("plain", plain)):
            v, procs = run(env, names)
            res[k] += v
    for k, v in res.items():
        print("%s: %d scans of %s processes, 32 proc_name entries: median %d us (min %d, max %d)" % (
            k, len(v), procs, statistics.median(v), min(v), max(v)))
finally:
    env.cleanup()
