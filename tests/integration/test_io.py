"""test_io.py - ioprobe under the supervisor, against I/O the test makes itself on a loop device with
an ext4 file system: request counts and bytes against /proc/diskstats deltas, the issuing process,
and the device latency histogram against Debian libbpf-tools' biolatency on the same workload."""
import os
import shutil
import subprocess
import time

from harness import LoopFs, Supervisor, TestFailure, check, probe_entry, wait_for

BS = 64 << 10


def hist_slots(value):
    """Per-bucket counts of a histogram value "N le1 cum1 ... leN cumN sum count" (log2 buckets of
    ioprobe: bucket k holds [2^k, 2^(k+1)) us), the overflow last."""
    p = value.split()
    n = int(p[0])
    cum = [int(p[2 + 2 * i]) for i in range(n)]
    total = int(p[-1])
    return [c - (cum[i - 1] if i else 0) for i, c in enumerate(cum)] + [total - cum[-1]]


def quiet_point(s, lf, table, what):
    """Wait until the device has been idle for over a second and a record of `table` for it was
    made after that; returns (diskstats, records of that period keyed by rw or None)."""
    def idle():
        a = lf.diskstats()
        time.sleep(1.2)
        b = lf.diskstats()
        return (a == b, b)

    def ok():
        same, d = idle()
        if not same:
            return None
        t = time.time() * 1000
        major, minor = lf.majmin()

        def fresh():
            recs = [r for r in s.metric_records(table) if r["timestamp"] > t and r["major"] == str(major)
                    and r["first_minor"] == str(minor)]
            return recs or None
        recs = wait_for(fresh, 8, "%s record after %s" % (table, what), interval=0.2)
        if lf.diskstats() != d:
            return None
        last_ts = recs[-1]["timestamp"]
        return d, {r.get("rw", ""): r for r in recs if r["timestamp"] == last_ts}
    return wait_for(ok, 30, "an idle device (%s)" % what, interval=0)


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "%s: %s" % (" ".join(argv), r.stderr))
    return r


def test_io_counts_match_diskstats():
    with LoopFs() as lf:
        # Period and disk come from the live configuration (argv says 600 s, all disks).
        s = Supervisor(probes=[probe_entry("ioprobe", "-t 600 -P io_trace,io_err,io_count,page_cache",
                                           params={"report_period": 1, "dev_name": lf.name()})]).start()
        try:
            s.wait_probe("ioprobe", lambda p: p["state"] == "running" and p["config_version_applied"] >= 1, 15,
                         "running with its live configuration")
            time.sleep(0.5)
            path = os.path.join(lf.mnt, "data")
            # Something on the device, so that it has a record before the measured window; and 64
            # pages through the page cache.
            run(["dd", "if=/dev/zero", "of=" + path, "bs=4096", "count=1", "oflag=direct", "conv=fsync"])
            run(["dd", "if=/dev/zero", "of=" + os.path.join(lf.mnt, "cached"), "bs=4096", "count=64",
                 "conv=fsync"])
            run(["dd", "if=" + os.path.join(lf.mnt, "cached"), "of=/dev/null", "bs=4096"])
            d0, r0 = quiet_point(s, lf, "io_count", "the baseline")
            r0 = r0[""]

            count = 160
            dd = subprocess.Popen(["dd", "if=/dev/zero", "of=" + path, "bs=%d" % BS, "count=%d" % count,
                                   "oflag=direct", "conv=fsync"], stderr=subprocess.PIPE)
            check(dd.wait(60) == 0, "dd write")
            rd = subprocess.Popen(["dd", "if=" + path, "of=/dev/null", "bs=%d" % BS, "iflag=direct"],
                                  stderr=subprocess.PIPE)
            check(rd.wait(60) == 0, "dd read")
            d1, r1 = quiet_point(s, lf, "io_count", "the workload")
            r1 = r1[""]

            for ours, theirs in (("read_count", "reads"), ("write_count", "writes")):
                got, want = r1[ours] - r0[ours], d1[theirs] - d0[theirs]
                check(got == want, "%s delta %d == /proc/diskstats %s delta %d" % (ours, got, theirs, want))
            for ours, theirs in (("read_bytes", "read_sectors"), ("write_bytes", "write_sectors")):
                got, want = r1[ours] - r0[ours], (d1[theirs] - d0[theirs]) * 512
                check(got == want, "%s delta %d == /proc/diskstats %s delta * 512 = %d" % (ours, got, theirs, want))
            check(r1["write_bytes"] - r0["write_bytes"] >= count * BS and
                  r1["read_bytes"] - r0["read_bytes"] >= count * BS, "at least what dd moved")

            major, minor = lf.majmin()
            iss = {int(r["tgid"]): r for r in s.metric_records("io_issuer")
                   if r["major"] == str(major) and r["first_minor"] == str(minor)}
            check(dd.pid in iss and iss[dd.pid]["issued_write_bytes"] == count * BS and iss[dd.pid]["comm"] == "dd",
                  "the dd writer issued exactly its bytes: %r" % iss.get(dd.pid))
            check(rd.pid in iss and iss[rd.pid]["issued_read_bytes"] == count * BS,
                  "the dd reader issued exactly its bytes: %r" % iss.get(rd.pid))
            lat = [r for r in s.metric_records("io_latency") if r["major"] == str(major) and r["rw"] == "write"]
            check(lat and lat[-1]["count_latency_req"] >= count and lat[-1]["latency_device_sum"] > 0,
                  "write latencies measured: %r" % (lat[-1] if lat else None))
            pc = [r for r in s.metric_records("io_pagecache") if r["disk_name"] == lf.name()]
            check(pc and pc[-1]["mark_page_dirty"] >= 64 and pc[-1]["load_page_cache"] >= 64 and
                  pc[-1]["access_pagecache"] >= 1, "page cache events of the buffered write: %r"
                  % (pc[-1] if pc else None))
            others = {r["disk_name"] for r in s.metric_records("io_count")} - {lf.name()}
            check(not others, "dev_name keeps other disks out: %r" % others)
            check(s.probe("ioprobe")["rejected_total"] == 0, "no record rejected")
        finally:
            s.cleanup()


test_io_counts_match_diskstats.timeout = 120


def parse_biolatency(out, disk):
    """{slot: count} from the "lo -> hi : count |***|" lines (usecs) of `disk` in biolatency -D output
    (its -d filter finds nothing on this kernel, so every disk is traced and ours picked out)."""
    slots = {}
    mine = False
    for line in out.splitlines():
        if line.startswith("disk = "):
            mine = line.split("=", 1)[1].strip() == disk
        elif mine and "->" in line and ":" in line:
            rng, rest = line.split(":", 1)
            lo = int(rng.split("->")[0])
            slot = lo.bit_length() - 1 if lo > 0 else 0
            slots[slot] = slots.get(slot, 0) + int(rest.split("|")[0])
    return slots


def test_io_latency_agrees_with_biolatency():
    if not shutil.which("biolatency"):
        raise TestFailure("biolatency (Debian libbpf-tools) is not installed: scripts/install-deps.sh")
    with LoopFs() as lf:
        s = Supervisor(probes=[probe_entry("ioprobe", "-t 1 -P io_trace -d %s" % lf.name())]).start()
        bio = None
        try:
            s.wait_probe("ioprobe", lambda p: p["state"] == "running" and p["batches"] > 0, 15, "running")
            path = os.path.join(lf.mnt, "data")
            run(["dd", "if=/dev/zero", "of=" + path, "bs=%d" % BS, "count=256", "oflag=direct", "conv=fsync"])
            _, r0 = quiet_point(s, lf, "io_latency", "the baseline")

            bio = subprocess.Popen(["stdbuf", "-oL", "biolatency", "-D", "6", "1"], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
            line = bio.stdout.readline()  # line buffered (stdbuf): printed once attached
            check("Tracing" in line, "biolatency started: %r" % line)
            for _ in range(3):
                run(["dd", "if=" + path, "of=/dev/null", "bs=4096", "iflag=direct"])
                run(["dd", "if=/dev/zero", "of=" + path, "bs=16384", "count=256", "oflag=direct", "conv=notrunc"])
            out, _ = bio.communicate(timeout=30)
            theirs = parse_biolatency(out, lf.name())
            _, r1 = quiet_point(s, lf, "io_latency", "the workload")

            ours = {}
            for rw in ("read", "write"):
                a = hist_slots(r1[rw]["latency_device_us"])
                b = hist_slots(r0[rw]["latency_device_us"]) if rw in r0 else [0] * len(a)
                for k, (x, y) in enumerate(zip(a, b)):
                    if x - y:
                        ours[k] = ours.get(k, 0) + x - y
            n_ours, n_theirs = sum(ours.values()), sum(theirs.values())
            check(n_theirs > 1000, "biolatency saw the workload: %d requests\n%s" % (n_theirs, out[:3000]))
            check(abs(n_ours - n_theirs) <= 0.02 * n_theirs + 2,
                  "request count %d vs biolatency %d" % (n_ours, n_theirs))
            overlap = sum(min(ours.get(k, 0), theirs.get(k, 0)) for k in set(ours) | set(theirs))
            print("  ioprobe %d requests, biolatency %d, same log2 bucket for %d (%.1f %%)"
                  % (n_ours, n_theirs, overlap, 100.0 * overlap / max(n_theirs, 1)))
            # A loop device's requests take a few us, near a log2 bucket boundary, and the two tools' stamps
            # differ by up to a microsecond (their programs run one after the other on the same tracepoints):
            # many requests may land one bucket apart. So: most in the same bucket, and the earth mover's
            # distance between the histograms (sum of the CDF differences, in buckets) at most half a bucket;
            # a real disagreement (another interval, a unit error) moves everything by a bucket or more.
            emd, ca, cb = 0.0, 0, 0
            for k in range(max(set(ours) | set(theirs)) + 1):
                ca += ours.get(k, 0)
                cb += theirs.get(k, 0)
                emd += abs(ca / max(n_ours, 1) - cb / max(n_theirs, 1))
            check(overlap >= 0.6 * n_theirs and emd <= 0.5,
                  "histograms: same bucket for %d of %d requests, distance %.2f buckets: ours %r biolatency %r"
                  % (overlap, n_theirs, emd, sorted(ours.items()), sorted(theirs.items())))
        finally:
            if bio and bio.poll() is None:
                bio.kill()
                bio.wait()
            s.cleanup()


test_io_latency_agrees_with_biolatency.timeout = 120
