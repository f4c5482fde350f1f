"""test_kafkaprobe.py - kafkaprobe (kafka): librdkafka's mock broker (tests/helpers/kafka_mock) and kcat
in a network namespace of the test's own, kafkaprobe's XDP program on that namespace's lo (each segment
passes lo's ingress once: its transmit loops into netif_rx). Exact counts: Producer num per topic is
the number of messages kcat produced; Consumer num of t1 is the number consumed (the rule: kcat -e
exits on partition EOF, which librdkafka signals only from the response to a Fetch at the high
watermark, so the last Fetch, at offset N, was always sent; the first, at 0 for -o beginning, is the
base). And PUT /kafka through the supervisor's REST API, on the host's lo."""
import os
import subprocess
import tempfile
import time

from harness import (PROBES, ROOT, TEST_BINS, KafkaMock, StandaloneProbe, TestFailure, check, dump_probe_log,
                     meta_fields, put_running, rest_supervisor, teardown, wait_for)

BIN = os.path.join(PROBES, "kafkaprobe")
FIELDS = meta_fields(os.path.join(ROOT, "schema", "kafkaprobe.meta"))
N_T1, N_T2 = 37, 11


def _ns():
    return "gg-kp-%x%x" % (os.getpid() & 0xffff, int.from_bytes(os.urandom(2), "little"))


def _sums(rows, msg_type):
    """topic -> num summed over client ports, from the latest record of each key."""
    latest = {}
    for r in rows:
        if r["msg_type"] == msg_type:
            latest[(r["client_ip"], r["client_port"], r["topic"], r["server_ip"], r["server_port"])] = r
    out = {}
    for r in latest.values():
        out[r["topic"]] = out.get(r["topic"], 0) + int(r["num"])
    return out, list(latest.values())


def test_kafkaprobe_netns_exact_counts():
    ns = _ns()
    mock = probe = None
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, capture_output=True)
        run = ["ip", "netns", "exec", ns]
        mock = subprocess.Popen(run + [os.path.join(TEST_BINS, "kafka_mock"), "-t", "t1", "-t", "t2"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        bootstrap = mock.stdout.readline().strip()
        check(bootstrap.startswith("127.0.0.1:"), "kafka_mock printed %r" % bootstrap)
        port = bootstrap.split(":")[1]
        probe = StandaloneProbe("/usr/bin/ip", ["netns", "exec", ns, BIN, "-d", "lo", "-k", port, "-t", "1"], FIELDS)
        probe.wait_started()

        def kcat(args, stdin=""):
            r = subprocess.run(run + ["kcat", "-b", bootstrap, "-q"] + args, input=stdin, capture_output=True,
                               text=True, timeout=30)
            if r.returncode:
                raise TestFailure("kcat %s: %s" % (" ".join(args), r.stderr.strip()))
            return r.stdout

        kcat(["-P", "-t", "t1"], "".join("m%d\n" % i for i in range(N_T1)))
        kcat(["-P", "-t", "t2"], "".join("x%d\n" % i for i in range(N_T2)))
        got = kcat(["-C", "-t", "t1", "-o", "beginning", "-e"]).splitlines()
        check(len(got) == N_T1, "kcat consumed %d of t1, expected %d" % (len(got), N_T1))

        def done():
            p, _ = _sums(probe.rows("kafkaprobe"), "Producer")
            c, _ = _sums(probe.rows("kafkaprobe"), "Consumer")
            return p.get("t1") == N_T1 and p.get("t2") == N_T2 and c.get("t1") == N_T1
        try:
            wait_for(done, 15, "Producer t1 %d, t2 %d, Consumer t1 %d" % (N_T1, N_T2, N_T1))
        except TestFailure:
            raise TestFailure("rows %r\nstats %r\n%s" % (probe.rows("kafkaprobe")[-8:],
                                                         probe.rows("kafkaprobe_stats")[-1:], probe.stderr()[-2000:]))
        time.sleep(2.5)  # two more periods: nothing counted twice
        prod, prows = _sums(probe.rows("kafkaprobe"), "Producer")
        cons, crows = _sums(probe.rows("kafkaprobe"), "Consumer")
        check(prod == {"t1": N_T1, "t2": N_T2}, "Producer sums %r" % prod)
        check(cons == {"t1": N_T1}, "Consumer sums %r" % cons)
        for r in prows + crows:
            check(r["client_ip"] == "127.0.0.1" and r["server_ip"] == "127.0.0.1" and r["server_port"] == port,
                  "addresses of %r" % r)
        st = probe.rows("kafkaprobe_stats")[-1]
        check(st["dev_name"] == "lo", "stats %r" % st)
        for k in ("unparsable", "resyncs", "truncated", "ringbuf_lost", "unsynced", "unsupported_version",
                  "keys_full"):
            check(st[k] == "0", "kafkaprobe_stats.%s %s: %r" % (k, st[k], st))
        # every request here fits one segment (lo's MTU is 64 KiB): a segment seen twice on lo (egress and
        # ingress) would make packets exceed requests
        check(int(st["produce"]) >= 2 and int(st["fetch"]) >= 2 and int(st["packets"]) <= int(st["requests"]),
              "stats %r" % st)
        rc, log = probe.stop()
        probe = None
        check(rc == 0, "kafkaprobe exit status %r: %s" % (rc, log[-2000:]))
        print("  Producer %r, Consumer %r (%d keys), stats %r" % (prod, cons, len(prows + crows), st))
    finally:
        if probe:
            probe.stop()
        if mock and mock.poll() is None:
            mock.kill()
            mock.wait()
        for p in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
            try:
                os.kill(int(p), 9)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


test_kafkaprobe_netns_exact_counts.timeout = 90


def produce_v7(topic, count, total, corr):
    """A Produce v7 request of total bytes (size prefix included): one topic, one partition, one
    RecordBatch v2 whose recordsCount is count (its records padding: the parser reads headers only)."""
    import struct
    head = struct.pack(">hhih", 0, 7, corr, 2) + b"gg"  # api_key, version, correlation id, client id
    body_fixed = struct.pack(">hhi", -1, 1, 1000)  # transactional_id null, acks, timeout
    t = topic.encode()
    fixed = len(head) + len(body_fixed) + 4 + 2 + len(t) + 4 + 4 + 4 + 61
    pad = total - 4 - fixed
    assert pad >= 0
    batch = struct.pack(">qiibihiqqqhii", 0, 61 - 12 + pad, 0, 2, 0, 0, count - 1, 0, 0, -1, -1, -1, count)
    body = (body_fixed + struct.pack(">i", 1) + struct.pack(">h", len(t)) + t + struct.pack(">i", 1) +
            struct.pack(">i", 0) + struct.pack(">i", 61 + pad) + batch + b"\0" * pad)
    msg = head + body
    return struct.pack(">i", len(msg)) + msg


def test_kafkaprobe_coalesced_requests():
    """Requests that TCP puts several to a segment, two starting 3000 and 3500 bytes in (past the 1024 bytes copied
    from a request start): the XDP program follows the flow from size prefix to size prefix, so every
    request is found. A sink of ours on the port (no broker needed: the probe reads what arrives), one
    send of three Produce requests (ca 5, cb 7, ca 11 messages), then one of a fourth (cb 13), then a
    second connection of ten small requests in one send (ca 1 each). Producer ca 26, cb 20 exactly."""
    ns = _ns()
    probe = sink = None
    port = 19092
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, capture_output=True)
        run = ["ip", "netns", "exec", ns]
        sink = subprocess.Popen(run + ["python3", "-c", (
            "import socket, threading\n"
            "s = socket.socket(); s.bind(('127.0.0.1', %d)); s.listen(8); print('ok', flush=True)\n"
            "def drain(c):\n"
            "    while c.recv(65536):\n"
            "        pass\n"
            "while True:\n"
            "    threading.Thread(target=drain, args=(s.accept()[0],), daemon=True).start()\n") % port],
            stdout=subprocess.PIPE, text=True)
        check(sink.stdout.readline().strip() == "ok", "the sink did not start")
        probe = StandaloneProbe("/usr/bin/ip", ["netns", "exec", ns, BIN, "-d", "lo", "-k", str(port), "-t", "1"],
                                FIELDS)
        probe.wait_started()
        one = produce_v7("ca", 5, 3000, 1) + produce_v7("cb", 7, 500, 2) + produce_v7("ca", 11, 200, 3)
        small = b"".join(produce_v7("ca", 1, 150, 10 + i) for i in range(10))
        client = (
            "import socket, sys, time\n"
            "c = socket.create_connection(('127.0.0.1', %d))\n"
            "c.sendall(bytes.fromhex(sys.argv[1])); time.sleep(0.3); c.sendall(bytes.fromhex(sys.argv[2]))\n"
            "time.sleep(0.3); c.close()\n"
            "d = socket.create_connection(('127.0.0.1', %d)); d.sendall(bytes.fromhex(sys.argv[3]))\n"
            "time.sleep(0.3); d.close()\n") % (port, port)
        subprocess.run(run + ["python3", "-c", client, one.hex(), produce_v7("cb", 13, 400, 4).hex(), small.hex()],
                       check=True, timeout=30)

        def sums():
            p, _ = _sums(probe.rows("kafkaprobe"), "Producer")
            return p
        try:
            wait_for(lambda: sums() == {"ca": 26, "cb": 20}, 10, "Producer ca 26, cb 20")
        except TestFailure:
            raise TestFailure("sums %r, stats %r" % (sums(), probe.rows("kafkaprobe_stats")[-1:]))
        time.sleep(1.5)
        st = probe.rows("kafkaprobe_stats")[-1]
        check(sums() == {"ca": 26, "cb": 20}, "counted again later: %r" % sums())
        check(st["requests"] == "14" and st["produce"] == "14", "stats %r" % st)
        for k in ("unparsable", "resyncs", "ringbuf_lost", "unsynced", "truncated"):
            check(st[k] == "0", "kafkaprobe_stats.%s %s: %r" % (k, st[k], st))
        print("  coalesced: Producer %r from %s segments, stats %r" % (sums(), st["packets"], st))
    finally:
        if probe:
            probe.stop()
        for p in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
            try:
                os.kill(int(p), 9)
            except (ProcessLookupError, ValueError):
                pass
        if sink:
            sink.wait()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


test_kafkaprobe_coalesced_requests.timeout = 60


def test_kafkaprobe_idle_keys_forgotten():
    """--idle 2: a producer's key (its client port) not seen for 2 s stops being reported (its connection
    is gone; a client port is a key, so keys would otherwise pile up until the table is full), while a
    later producer is counted exactly."""
    ns = _ns()
    mock = probe = None
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, capture_output=True)
        run = ["ip", "netns", "exec", ns]
        mock = subprocess.Popen(run + [os.path.join(TEST_BINS, "kafka_mock"), "-t", "t1"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        bootstrap = mock.stdout.readline().strip()
        port = bootstrap.split(":")[1]
        probe = StandaloneProbe("/usr/bin/ip", ["netns", "exec", ns, BIN, "-d", "lo", "-k", port, "-t", "1",
                                                "--idle", "2"], FIELDS)
        probe.wait_started()

        def produce(n):
            subprocess.run(run + ["kcat", "-b", bootstrap, "-q", "-P", "-t", "t1"], input="m\n" * n, text=True,
                           check=True, timeout=30)

        def ports():
            return {r["client_port"]: int(r["num"]) for r in probe.rows("kafkaprobe") if r["msg_type"] == "Producer"}
        produce(7)
        first = wait_for(lambda: [p for p, n in ports().items() if n == 7] or None, 10, "the first producer's row")[0]

        def reported(p):
            return sum(1 for r in probe.rows("kafkaprobe") if r["client_port"] == p)
        time.sleep(3.5)  # idle for more than 2 s: forgotten at a report in between
        n1 = reported(first)
        time.sleep(2.5)
        check(reported(first) == n1, "the idle key %s is still reported (%d -> %d rows)" % (first, n1,
                                                                                           reported(first)))
        produce(5)
        wait_for(lambda: [p for p, n in ports().items() if p != first and n == 5] or None, 10,
                 "the second producer counted 5")
        st = probe.rows("kafkaprobe_stats")[-1]
        check(st["keys_full"] == "0" and st["resyncs"] == "0", "stats %r" % st)
    finally:
        if probe:
            probe.stop()
        if mock and mock.poll() is None:
            mock.kill()
            mock.wait()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


test_kafkaprobe_idle_keys_forgotten.timeout = 60


def test_kafkaprobe_device_later():
    """dev_name names a device that does not exist yet: the probe stays up (its stats reported, the
    failure logged once), and attaches once the device appears (a veth pair made in the namespace)."""
    ns = _ns()
    probe = None
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        probe = StandaloneProbe("/usr/bin/ip", ["netns", "exec", ns, BIN, "-d", "kpdev0", "-t", "1"], FIELDS)
        probe.wait_started()
        wait_for(lambda: len(probe.rows("kafkaprobe_stats")) >= 2, 10, "stats while the device is missing")
        check(probe.stderr().count("XDP on kpdev0: No such device") == 1, "logged once: %s" % probe.stderr())
        subprocess.run(["ip", "-n", ns, "link", "add", "kpdev0", "type", "veth", "peer", "name", "kpdev1"], check=True, capture_output=True)
        wait_for(lambda: "XDP (generic) on kpdev0" in probe.stderr(), 10, "the XDP program on the new device")
        check(probe.proc.poll() is None, "the probe exited")
    finally:
        if probe:
            probe.stop()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


test_kafkaprobe_device_later.timeout = 40


def test_kafkaprobe_rest_put():
    """PUT /kafka {"params": {"dev_name": "lo", "kafka_port": P}, "state": "running"} on a supervisor
    whose kafka probe is off: it runs with those parameters; 5 messages produced to the mock broker on
    the host's lo (a port of its own) come out as Producer num 5 in the supervisor's metrics."""
    tmp = tempfile.mkdtemp(prefix="gg-kp-rest-")
    mock = KafkaMock(topics=("t1",))
    s = None
    try:
        port = int(mock.bootstrap.split(":")[1])
        s = rest_supervisor(tmp, "kafkaprobe")
        put_running(s, "kafka", "kafkaprobe", {"params": {"dev_name": "lo", "kafka_port": port}, "state": "running"})
        time.sleep(0.5)
        r = subprocess.run(["kcat", "-b", mock.bootstrap, "-q", "-P", "-t", "t1"], input="a\nb\nc\nd\ne\n",
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "kcat: %s" % r.stderr)

        def num():
            recs = [x for x in s.metric_records("kafkaprobe") if x.get("msg_type") == "Producer"
                    and x.get("topic") == "t1" and str(x.get("server_port")) == str(port)]
            latest = {}
            for x in recs:
                latest[x["client_port"]] = int(x["num"])
            return sum(latest.values()) if latest else None
        try:
            wait_for(lambda: num() == 5, 20, "Producer t1 num 5 in metrics.log")
        except TestFailure:
            dump_probe_log(s, "kafkaprobe")
            raise TestFailure("num %r; records %r" % (num(), s.metric_records("kafkaprobe")[-3:]))
        check(s.metric_records("kafkaprobe_stats"), "no kafkaprobe_stats records")
        check(s.probe("kafkaprobe")["rejected_total"] == 0, "records rejected by the supervisor")
        print("  PUT /kafka: running on lo port %d, Producer num %d" % (port, num()))
    finally:
        teardown(s, mock, tmp)


test_kafkaprobe_rest_put.timeout = 90
