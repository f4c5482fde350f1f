#!/usr/bin/env python3
"""kafka_e2e.py - records/s delivered to Kafka through the real supervisor: N flood probes (bad_probe
-m flood) send R records each over IPC; the supervisor validates them and produces one JSON message per
record to librdkafka's mock broker (tests/helpers/kafka_mock). Measured from the first batch to the last
delivery report, with the supervisor's and the broker's CPU.

usage: python3 bench/kafka_e2e.py [NPROBES=2] [RECORDS_EACH=1000000]     (GG_BUILD selects the build)
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import KafkaMock, flood_supervisor, proc_cpu_seconds, wait_for  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    each = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    km = KafkaMock(topics=("gala_gopher",))
    s = flood_supervisor(n, each, 1000, metric_out="kafka",
                         extra='event = { out_channel = ""; }; meta = { out_channel = ""; };'
                         ' kafka = { kafka_broker = "%s"; queue_buffering_max_messages = 1000000; };' % km.bootstrap)
    try:
        t_start = time.monotonic()
        s.start()
        cpu0, kcpu0 = proc_cpu_seconds(s.proc.pid), proc_cpu_seconds(km.proc.pid)
        total = n * each

        def done():
            st = s.status()
            got = sum(p["records"] + p["ipc_lost_records"] for p in st["probes"])
            e = st["export"]["metric"]
            if got >= total and e["kafka_delivered"] + e["kafka_failed"] + e["kafka_refused"] >= e["records"]:
                return st
            return None
        st = wait_for(done, 600, "all records delivered", interval=0.02)
        t_end = time.monotonic()
        cpu, kcpu = proc_cpu_seconds(s.proc.pid) - cpu0, proc_cpu_seconds(km.proc.pid) - kcpu0
        first = min(p["first_batch_ms"] for p in st["probes"]) / 1000.0
        # status.json is written every second: the end is when this script saw the last delivery
        start_wall = t_start + first
        elapsed = t_end - start_wall
        e = st["export"]["metric"]
        lost = sum(p["ipc_lost_records"] for p in st["probes"])
        print("probes=%d records_each=%d total=%d ipc_lost=%d exported=%d delivered=%d failed=%d refused=%d"
              % (n, each, total, lost, e["records"], e["kafka_delivered"], e["kafka_failed"], e["kafka_refused"]))
        print("delivered %.0f records/s end to end (%.2f s, +-1 s status granularity); supervisor CPU %.2f s, "
              "broker CPU %.2f s" % (e["kafka_delivered"] / elapsed, elapsed, cpu, kcpu))
    finally:
        s.cleanup()
        km.stop()


if __name__ == "__main__":
    main()
