#!/usr/bin/env python3
"""supervisor_ipc.py - IPC throughput through the real supervisor: N flood probes (bad_probe -m flood)
each send R records as fast as they can; the supervisor receives, decodes and validates every record
against test_bad.meta (metric output off, so the figure is the data path itself).
Prints records/s over the whole transfer, supervisor CPU, and the loss accounting.

usage: [GG_IPC_QUEUE=batches] bench/supervisor_ipc.py [NPROBES=8] [RECORDS_EACH=2000000] [KEYS=100]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import flood_supervisor, proc_cpu_seconds, wait_for  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    each = int(sys.argv[2]) if len(sys.argv) > 2 else 2000000
    keys = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    s = flood_supervisor(n, each, keys, int(os.environ.get("GG_IPC_QUEUE", 0)), metric_out="")
    try:
        s.start()
        cpu0 = proc_cpu_seconds(s.proc.pid)
        t0 = time.monotonic()
        total = n * each

        def done():
            st = s.status()
            got = sum(p["records"] + p["ipc_lost_records"] for p in st["probes"])
            return st if got >= total else None
        st = wait_for(done, 600, "all records", interval=0.02)
        cpu = proc_cpu_seconds(s.proc.pid) - cpu0
        # the supervisor's own clock: first batch of any probe to the last batch of any probe
        first = min(p["first_batch_ms"] for p in st["probes"])
        last = max(p["last_batch_ms"] for p in st["probes"])
        elapsed = max(last - first, 1) / 1000.0
        wall = time.monotonic() - t0
        recs = sum(p["records"] for p in st["probes"])
        acc = sum(p["accepted"] for p in st["probes"])
        lost = sum(p["ipc_lost_records"] for p in st["probes"])
        lostb = sum(p["ipc_lost_batches"] for p in st["probes"])
        rej = sum(p["rejected_total"] for p in st["probes"])
        print("probes=%d records_each=%d total=%d" % (n, each, total))
        print("received=%d accepted=%d rejected=%d lost_records=%d lost_batches=%d unaccounted=%d"
              % (recs, acc, rej, lost, lostb, total - recs - lost))
        print("transfer=%.3fs  rate=%.0f records/s  supervisor cpu=%.2fs over %.1fs wall"
              % (elapsed, recs / elapsed, cpu, wall))
    finally:
        s.cleanup()


if __name__ == "__main__":
    main()
