"""test_net.py - tcpprobe and endpoint under the supervisor, against traffic the test makes itself
between two network namespaces joined by a veth pair: bytes moved, retransmits caused by an
nftables `numgen random` drop rule (checked against the namespace's own TCP MIB counters), resets,
accept-queue overflow of a listener that never accepts, UDP to a closed port."""
import json
import os
import subprocess
import sys
import time

from harness import NetnsPair, Supervisor, TestFailure, check, events, probe_entry, wait_for

PEER = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "net_peer.py")]


def peer_json(p, timeout=60):
    out, err = p.communicate(timeout=timeout)
    check(p.returncode == 0, "net_peer failed (%s): %s" % (p.returncode, err.decode(errors="replace")))
    return json.loads(out.decode().strip().splitlines()[-1])


def wait_ready(p):
    line = p.stdout.readline().decode()
    check('"ready"' in line, "peer not ready: %r %s" % (line, p.stderr.read1().decode(errors="replace")
                                                        if p.poll() is not None else ""))


def last_record(s, table, **keys):
    """The latest record of table whose fields equal keys (keys compared as strings)."""
    found = None
    for r in s.metric_records(table):
        if all(str(r.get(k)) == str(v) for k, v in keys.items()):
            found = r
    return found


def wait_record(s, table, timeout, pred=lambda r: True, **keys):
    def ok():
        r = last_record(s, table, **keys)
        return r if r is not None and pred(r) else None
    try:
        return wait_for(ok, timeout, "%s record %r" % (table, keys), interval=0.2)
    except TestFailure as e:
        # say whether the row was missing or there but short of the predicate
        raise TestFailure("%s; the row now: %r" % (e, last_record(s, table, **keys))) from None


def nft_counter_packets(ns, pair):
    out = pair.run(ns, ["nft", "-j", "list", "table", "inet", "ggtest"])
    for item in json.loads(out)["nftables"]:
        rule = item.get("rule")
        if rule:
            for e in rule["expr"]:
                if "counter" in e:
                    return e["counter"]["packets"]
    raise AssertionError("no counter in the nft rule")


def test_tcp_bytes_retransmits_resets():
    a_to_b = 4 << 20
    reply = 65536
    with NetnsPair() as ns:
        s = Supervisor(probes=[probe_entry("tcpprobe", "-t 1 -c 1 -D 1")]).start()
        try:
            s.wait_probe("tcpprobe", lambda p: p["state"] == "running" and p["batches"] > 0, 15, "running")
            time.sleep(0.5)  # attached: the probe sends its first batch after loading

            # 1. Known bytes each way over the veth pair.
            srv = ns.popen(ns.b, PEER + ["serve", "5001", str(reply), "1"])
            wait_ready(srv)
            cli = ns.popen(ns.a, PEER + ["client", ns.ADDR_B, "5001", str(a_to_b), str(reply)])
            c = peer_json(cli)
            check(peer_json(srv)["received"] == [a_to_b], "server got every byte")
            keys = dict(client_ip=ns.ADDR_A, server_ip=ns.ADDR_B, client_port=c["lport"], server_port=5001,
                        protocol=2)
            rc = wait_record(s, "tcp_tx_rx", 10, lambda r: r["links_closed"] >= 1, tgid=cli.pid, role=1, **keys)
            rs = wait_record(s, "tcp_tx_rx", 10, lambda r: r["links_closed"] >= 1, tgid=srv.pid, role=0, **keys)
            for name, got, want in (("client tx", rc["tx_bytes"], a_to_b), ("client rx", rc["rx_bytes"], reply),
                                    ("server rx", rs["rx_bytes"], a_to_b), ("server tx", rs["tx_bytes"], reply)):
                check(abs(got - want) <= want * 0.01, "%s: %d bytes reported, %d moved" % (name, got, want))
            check(rc["comm"] == "python3" and rs["comm"] == "python3", "comm: %r %r" % (rc["comm"], rs["comm"]))
            check(rc["segs_out"] > a_to_b // 65536 and rs["segs_in"] > a_to_b // 65536, "segments counted")
            # tcp_rtt may arrive in the batch after tcp_tx_rx's: wait for it too
            rtt = wait_record(s, "tcp_rtt", 5, lambda r: r["srtt"] > 0, tgid=cli.pid, role=1, **keys)
            # The delayed-ACK timeout, a bit field read at close: TCP keeps it within [TCP_ATO_MIN (40 ms,
            # or 4 ms at HZ=1000 .. 40 ms), TCP_DELACK_MAX (200 ms)] once data came in (an offset
            # counted twice read bytes past the socket). tcp_rate, like tcp_rtt, may come a batch later.
            rate = wait_record(s, "tcp_rate", 5, lambda r: r["ato"] > 0, tgid=cli.pid, role=1, **keys)
            check(1000 <= rate["ato"] <= 200000, "ato in [1 ms, 200 ms]: %r" % rate)

            # 2. Drop ~5% of the packets towards the server: retransmits, as the client's TCP MIB says.
            # One segment per packet (no GSO), so that dropped packets and retransmitted segments compare.
            ns.run(ns.a, ["ip", "link", "set", "dev", ns.veth_a, "gso_max_segs", "1"])
            ns.run(ns.b, ["nft", "add table inet ggtest; add chain inet ggtest in { type filter hook input "
                          "priority 0; }; add rule inet ggtest in tcp dport 5002 numgen random mod 100 < 5 "
                          "counter drop"])
            before = ns.netstat(ns.a)["Tcp"]["RetransSegs"]
            srv = ns.popen(ns.b, PEER + ["serve", "5002", "0", "1"])
            wait_ready(srv)
            cli = ns.popen(ns.a, PEER + ["client", ns.ADDR_B, "5002", str(2 << 20), "0"])
            c2 = peer_json(cli, timeout=120)
            peer_json(srv)
            mib = ns.netstat(ns.a)["Tcp"]["RetransSegs"] - before
            drops = nft_counter_packets(ns.b, ns)
            ab = wait_record(s, "tcp_abn", 10, lambda r: r["retran_packets"] >= mib, tgid=cli.pid, role=1,
                             client_ip=ns.ADDR_A, server_ip=ns.ADDR_B, client_port=c2["lport"], server_port=5002)
            check(drops > 0 and mib > 0, "the rule dropped packets (%d) and TCP retransmitted (%d)" % (drops, mib))
            check(ab["retran_packets"] == mib, "retran_packets %d == RetransSegs delta %d of the client netns"
                  % (ab["retran_packets"], mib))
            check(drops * 0.5 <= ab["retran_packets"] <= drops * 3 + 5,
                  "retransmits %d consistent with %d dropped packets" % (ab["retran_packets"], drops))
            # -D 1: the retransmitting link is reported as an abnormal event by the supervisor.
            ev = wait_for(lambda: [e for e in events(s) if e["Resource"]["metric"] ==
                                   "gala_gopher_tcp_link_retran_packets" and
                                   e["Resource"]["labels"].get("client_port") == str(c2["lport"])], 10,
                          "retran_packets event")
            check(ev[0]["SeverityText"] == "WARN" and "retransmitted" in ev[0]["Body"], "event: %r" % ev[0])

            # 3. Connect to a closed port: the client receives a reset, the connect fails.
            cli = ns.popen(ns.a, PEER + ["connect_closed", ns.ADDR_B, "5003"])
            c3 = peer_json(cli)
            k3 = dict(tgid=cli.pid, role=1, client_ip=ns.ADDR_A, server_ip=ns.ADDR_B, client_port=c3["lport"],
                      server_port=5003)
            ab = wait_record(s, "tcp_abn", 10, lambda r: r["receive_rsts"] >= 1, **k3)
            check(ab["receive_rsts"] == 1, "one reset received: %r" % ab["receive_rsts"])
            tx = wait_record(s, "tcp_tx_rx", 10, **k3)
            check(tx["connect_failed"] == 1 and tx["tx_bytes"] <= 1, "failed connect counted: %r" % tx)

            p = s.probe("tcpprobe")
            check(p["rejected_total"] == 0, "no record rejected: %r" % p.get("rejected"))
        finally:
            s.cleanup()


test_tcp_bytes_retransmits_resets.timeout = 120


def test_endpoint_overflow_udp_connect():
    with NetnsPair() as ns:
        # The report period comes from the live configuration (argv says 600 s): on_config is exercised.
        s = Supervisor(probes=[probe_entry("endpoint", "-t 600 -P tcp_socket,udp_socket",
                                               params={"report_period": 1})]).start()
        try:
            s.wait_probe("endpoint", lambda p: p["state"] == "running" and p["config_version_applied"] >= 1, 15,
                         "running with its live configuration")
            time.sleep(0.5)

            # 1. A listener with backlog 1 that never accepts: 2 connections fit in its accept queue,
            # the other SYNs are dropped; the namespace's own TcpExt counters are the ground truth.
            before = ns.netstat(ns.b)["TcpExt"]
            srv = ns.popen(ns.b, PEER + ["backlog", "6000"])
            wait_ready(srv)
            cli = ns.popen(ns.a, PEER + ["connect_many", ns.ADDR_B, "6000", "8", "3"])
            peer_json(cli)
            after = ns.netstat(ns.b)["TcpExt"]
            drops = after["ListenDrops"] - before["ListenDrops"]
            overflows = after["ListenOverflows"] - before["ListenOverflows"]
            check(overflows > 0, "the kernel saw accept queue overflows (%d)" % overflows)
            lk = dict(tgid=srv.pid, s_addr="0.0.0.0", s_port=6000, ep_type="listen")
            rec = wait_record(s, "listen", 10, lambda r: r["listendrop"] >= drops, **lk)
            check(rec["listendrop"] == drops, "listendrop %d == ListenDrops delta %d" % (rec["listendrop"], drops))
            check(rec["accept_overflow"] == overflows, "accept_overflow %d == ListenOverflows delta %d"
                  % (rec["accept_overflow"], overflows))
            check(rec["passive_open"] == 2 and rec["accept_queue"] == 2 and rec["accept_queue_max"] == 1,
                  "two connections queued with backlog 1: %r" % rec)
            con = wait_record(s, "connect", 10, lambda r: r["active_open"] + r["active_open_failed"] == 8,
                              tgid=cli.pid, s_addr=ns.ADDR_B, s_port=6000)
            check(con["active_open"] == 2 and con["syn_retrans"] > 0, "2 connects established, SYNs retried: %r"
                  % con)

            # 2. UDP to a closed port: dropped for lack of a socket, as the namespace's NoPorts says.
            udp_before = ns.netstat(ns.b)["Udp"]["NoPorts"]
            send = ns.popen(ns.a, PEER + ["udp_send", ns.ADDR_B, "6001", "20", "100"])
            c = peer_json(send)
            noports = ns.netstat(ns.b)["Udp"]["NoPorts"] - udp_before
            check(noports == 20, "NoPorts delta %d" % noports)
            d = wait_record(s, "skb_drop", 10, lambda r: r["drops"] >= 20, protocol="udp", reason="NO_SOCKET",
                            port=6001)
            check(d["drops"] == noports, "no-socket drops %d == NoPorts %d" % (d["drops"], noports))
            u = wait_record(s, "udp", 10, lambda r: r["udp_sends"] >= 20, tgid=send.pid, s_port=c["lport"],
                            ep_type="udp")
            check(u["tx_bytes"] == 2000 and u["udp_sends"] == 20, "udp sender: %r" % u)
            # Short-lived sockets whose memory is reused: each keeps its own row and count.
            churn = ns.popen(ns.a, PEER + ["udp_churn", ns.ADDR_B, "6001", "40"])
            sent = peer_json(churn)["sent"]
            check(len(sent) >= 30, "churned sockets on distinct ports: %d" % len(sent))
            for lport, n in sent.items():
                u = wait_record(s, "udp", 10, lambda r: r["udp_sends"] >= n, tgid=churn.pid, s_port=lport,
                                ep_type="udp")
                check(u["udp_sends"] == n and u["tx_bytes"] == 10 * n, "churned socket %s sent %d: %r" % (lport, n, u))

            # 3. UDP both ways: bytes and datagrams on each socket.
            echo = ns.popen(ns.b, PEER + ["udp_echo", "6002", "10"])
            wait_ready(echo)
            ping = ns.popen(ns.a, PEER + ["udp_ping", ns.ADDR_B, "6002", "10", "300"])
            c = peer_json(ping)
            peer_json(echo)
            # tgid too: another process of the host (other tests run at the same time) may have the port
            u = wait_record(s, "udp", 10, lambda r: r["udp_rcvs"] >= 10, tgid=ping.pid, s_port=c["lport"],
                            ep_type="udp")
            check((u["udp_sends"], u["udp_rcvs"], u["tx_bytes"], u["rx_bytes"]) == (10, 10, 3000, 3000),
                  "udp client: %r" % u)
            u = wait_record(s, "udp", 10, lambda r: r["udp_rcvs"] >= 10, tgid=echo.pid, s_port=6002)
            check((u["udp_sends"], u["udp_rcvs"], u["tx_bytes"], u["rx_bytes"]) == (10, 10, 3000, 3000),
                  "udp server: %r" % u)

            # 4. A connect to a closed port fails.
            cli = ns.popen(ns.a, PEER + ["connect_closed", ns.ADDR_B, "6003"])
            peer_json(cli)
            con = wait_record(s, "connect", 10, tgid=cli.pid, s_addr=ns.ADDR_B, s_port=6003)
            check(con["active_open_failed"] == 1 and con["active_open"] == 0, "failed connect: %r" % con)
            d = wait_record(s, "skb_drop", 10, protocol="tcp", reason="NO_SOCKET", port=6003)
            check(d["drops"] >= 1, "the SYN to the closed port was dropped: %r" % d)
            check(s.probe("endpoint")["rejected_total"] == 0, "no record rejected")
        finally:
            s.cleanup()


test_endpoint_overflow_udp_connect.timeout = 90


def records_by_table(text):
    """Standalone probe stdout -> {table: [fields...]} (fields after the table name)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("|") and line.endswith("|"):
            f = line[1:-1].split("|")
            out.setdefault(f[0], []).append(f[1:])
    return out


def test_tcp_scope_aggregation_events_standalone():
    """tcpprobe run by hand: --pid keeps other processes' links out (filtered in the kernel), client
    ports are summed into one key by default (report_source_port 0), and retransmits past -D make a
    event_v2 record (entity tcp_link)."""
    from harness import PROBES
    with NetnsPair() as ns:
        srv = ns.popen(ns.b, PEER + ["serve", "5010", str(1 << 20), "2"])
        wait_ready(srv)
        other = ns.popen(ns.b, PEER + ["serve", "5011", "0", "1"])
        wait_ready(other)
        probe = subprocess.Popen([os.path.join(PROBES, "tcpprobe"), "-t", "1", "--pid", str(srv.pid), "-D", "1",
                                  "-P", "tcp_stats,tcp_abnormal"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(1.5)  # loaded and attached (the first report comes after a period)
            # Drop 5% of what the server sends (one segment per packet): its replies are retransmitted.
            ns.run(ns.b, ["ip", "link", "set", "dev", ns.veth_b, "gso_max_segs", "1"])
            ns.run(ns.a, ["nft", "add table inet ggtest; add chain inet ggtest in { type filter hook input "
                          "priority 0; }; add rule inet ggtest in tcp sport 5010 numgen random mod 100 < 5 "
                          "counter drop"])
            for _ in range(2):
                peer_json(ns.popen(ns.a, PEER + ["client", ns.ADDR_B, "5010", str(1 << 20), str(1 << 20)]))
            peer_json(ns.popen(ns.a, PEER + ["client", ns.ADDR_B, "5011", "4096", "0"]))
            peer_json(srv)
            peer_json(other)
            time.sleep(2.5)
        finally:
            probe.terminate()
            out, err = probe.communicate(timeout=10)
        check(probe.returncode == 0, "tcpprobe exit status %r: %s" % (probe.returncode, err.decode()[-2000:]))
        recs = records_by_table(out.decode())
        tx = recs.get("tcp_tx_rx", [])
        check(tx, "tcp_tx_rx records: %s" % err.decode()[-2000:])
        check({r[0] for r in tx} == {str(srv.pid)}, "only the --pid process: %r" % sorted({r[0] for r in tx}))
        # tgid role client_ip server_ip client_port server_port protocol comm rx tx segs_in segs_out opened closed
        last = [r for r in tx if r[5] == "5010"][-1]
        check(last[1] == "0" and last[4] == "0", "server role, client port summed: %r" % last[:8])
        rx, txb, opened, closed = int(last[8]), int(last[9]), int(last[12]), int(last[13])
        check(abs(rx - (2 << 20)) <= (2 << 20) * 0.01 and abs(txb - (2 << 20)) <= (2 << 20) * 0.01,
              "two links summed: rx %d tx %d" % (rx, txb))
        check(opened == 2 and closed == 2, "two links opened and closed: %d %d" % (opened, closed))
        abn = [r for r in recs.get("tcp_abn", []) if r[5] == "5010"]
        check(abn and int(abn[-1][8]) > 0, "server retransmitted: %r" % (abn[-1] if abn else None))
        # event_v2: entity_name, entity_id, metric, severity, body, body_zh, labels, event_type
        ev = [r for r in recs.get("event_v2", []) if r[0] == "tcp_link" and r[2] == "retran_packets"]
        check(ev and all(e[1].startswith("%d_0_" % srv.pid) and e[1].endswith("_0_5010_2") and e[3] == "WARN"
                         and "tgid=%d" % srv.pid in e[6] for e in ev), "drops events past drops_thr 1: %r" % ev)


HOLD = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers", "tcp_hold.py")]


def run_probe(argv):
    """tcpprobe standalone, returned once it has attached (its "started" log line)."""
    import tempfile
    from harness import PROBES
    # Records go to a file: a pipe nobody reads during the test would fill up and block the probe.
    out = tempfile.TemporaryFile()
    p = subprocess.Popen([os.path.join(PROBES, "tcpprobe")] + argv, stdout=out, stderr=subprocess.PIPE)
    p.out_file = out
    p.early_err = ""
    while True:
        line = p.stderr.readline().decode()
        p.early_err += line
        if not line or " started: " in line:
            break
    check(" started: " in p.early_err, "tcpprobe did not start: %s" % p.early_err[-2000:])
    return p


def stop_probe(probe):
    probe.terminate()
    _, err = probe.communicate(timeout=10)
    err = probe.early_err + err.decode()
    check(probe.returncode == 0, "tcpprobe exit status %r: %s" % (probe.returncode, err[-2000:]))
    probe.out_file.seek(0)
    out = probe.out_file.read().decode()
    probe.out_file.close()
    return records_by_table(out), err


def hist_mean_count(value):
    """(sum / count, count) of a histogram value "N le1 cum1 ... leN cumN sum count"."""
    p = value.split()
    total = int(p[-1])
    return (float(p[-2]) / total if total else 0.0), total


def test_tcp_links_established_before_start():
    """Links established before tcpprobe starts are found by its seeding iterator (iter/task_file),
    attributed to their processes and filtered by --pid; their bytes are the socket's lifetime totals
    (tcp_sock bytes_acked / bytes_received), the bytes moved before the start included."""
    a, r1, b, r2 = 300000, 70000, 500000, 90000
    with NetnsPair() as ns:
        srv = ns.popen(ns.b, HOLD + ["serve", "5020", str(a), str(r1), str(b), str(r2)])
        wait_ready(srv)
        other_srv = ns.popen(ns.b, HOLD + ["serve", "5021", "1000", "1000", "1000", "1000"])
        wait_ready(other_srv)
        cli = ns.popen(ns.a, HOLD + ["hold", ns.ADDR_B, "5020", str(a), str(r1), str(b), str(r2)],
                       stdin=subprocess.PIPE)
        other = ns.popen(ns.a, HOLD + ["hold", ns.ADDR_B, "5021", "1000", "1000", "1000", "1000"],
                         stdin=subprocess.PIPE)
        lport = json.loads(cli.stdout.readline().decode())["lport"]
        json.loads(other.stdout.readline().decode())
        # Established and part of the bytes moved: now the probe starts (client and server in scope).
        probe = run_probe(["-t", "1", "-c", "1", "-P", "tcp_stats,tcp_rtt", "--pid", "%d,%d" % (cli.pid, srv.pid)])
        try:
            for p in (cli, other):
                p.stdin.write(b"go\n")
                p.stdin.flush()
            c = peer_json(cli)
            peer_json(srv)
            peer_json(other)
            peer_json(other_srv)
            time.sleep(2.5)
        finally:
            recs, err = stop_probe(probe)
        found = [ln for ln in err.splitlines() if "established links found" in ln]
        check(found and " 2 established links found" in found[0], "seeding found the two in-scope ends: %r" % found)
        tx = recs.get("tcp_tx_rx", [])
        check({r[0] for r in tx} == {str(cli.pid), str(srv.pid)}, "only the --pid processes: %r"
              % sorted({r[0] for r in tx}))
        # tgid role client_ip server_ip client_port server_port protocol comm rx tx segs_in segs_out opened closed
        for pid, role, rx_want, tx_want in ((cli.pid, "1", r1 + r2, a + b), (srv.pid, "0", a + b, r1 + r2)):
            last = [r for r in tx if r[0] == str(pid)][-1]
            check(last[1:7] == [role, ns.ADDR_A, ns.ADDR_B, str(lport), "5020", "2"] and last[7] == "python3",
                  "key and comm of the seeded link: %r" % last[:8])
            rx, txb, opened, closed = int(last[8]), int(last[9]), int(last[12]), int(last[13])
            check(abs(rx - rx_want) <= rx_want * 0.01 and abs(txb - tx_want) <= tx_want * 0.01,
                  "role %s: rx %d (moved %d), tx %d (moved %d), before and after the start" % (role, rx, rx_want,
                                                                                             txb, tx_want))
            check(opened == 1 and closed == 1, "one link opened and closed: %d %d" % (opened, closed))
        rtt = [r for r in recs.get("tcp_rtt", []) if r[0] == str(cli.pid)]
        check(rtt and float(rtt[-1][8]) > 0, "srtt of the seeded link: %r" % (rtt[-1] if rtt else None))


test_tcp_links_established_before_start.timeout = 60


def test_tcp_delay_receiver_sleeps():
    """tcp_delay: a receiver that waits DELAY ms after data arrives before reading it; its receive
    delay histogram's mean is DELAY (slack for scheduling), the writer's send delay (send() to the
    peer's ACK) stays well below it. Also: the default sub-probes fill the RTT histogram from the
    snapshot, one sample per link and report, and naming tcp_rtt samples every incoming segment."""
    n, size, delay_ms = 6, 1000, 200  # one segment per message: no Nagle or delayed-ACK interplay
    with NetnsPair() as ns:
        probe = run_probe(["-t", "1", "-c", "1", "-P", "tcp_delay,tcp_stats,tcp_rtt"])
        dflt = run_probe(["-t", "1", "-c", "1"])
        try:
            srv = ns.popen(ns.b, HOLD + ["slow_reader", "5030", str(n), str(size), str(delay_ms)])
            wait_ready(srv)
            cli = ns.popen(ns.a, HOLD + ["writer", ns.ADDR_B, "5030", str(n), str(size)])
            c = peer_json(cli)
            s = peer_json(srv)
            time.sleep(2.5)
        finally:
            recs, err = stop_probe(probe)
            drecs, derr = stop_probe(dflt)
        key = [ns.ADDR_A, ns.ADDR_B, str(c["lport"]), "5030", "2"]
        # tgid role cip sip cport sport family comm net_recv_delay net_send_delay
        d = [r for r in recs.get("tcp_delay", []) if r[2:7] == key]
        check(d, "tcp_delay records for the link: %s" % err[-1500:])
        srv_rec = [r for r in d if r[0] == str(srv.pid) and r[1] == "0"][-1]
        cli_rec = [r for r in d if r[0] == str(cli.pid) and r[1] == "1"][-1]
        mean, cnt = hist_mean_count(srv_rec[8])
        waited = sum(s["waited_us"]) / len(s["waited_us"])
        check(cnt >= n - 1, "receive delay samples %d of %d reads: %r" % (cnt, n, d))
        check(waited - 5000 <= mean <= waited + 50000, "receive delay mean %.0f us, the reader waited %.0f us"
              % (mean, waited))
        # Send delay runs to the peer's ACK: here the reader's delayed ACK (interactive mode, up to 200 ms)
        # rides on its answer, sent after its DELAY ms wait; never longer than that wait and a round trip.
        smean, scnt = hist_mean_count(cli_rec[9])
        check(scnt >= n - 1 and 0 < smean <= waited + 50000, "send delay: %d samples, mean %.0f us (reader waited %.0f)"
              % (scnt, smean, waited))
        # The client never reads slowly: its receive delays (the one-byte answers) are short.
        cmean, ccnt = hist_mean_count(cli_rec[8])
        check(ccnt >= n - 1 and cmean < delay_ms * 1000 / 2, "client receive delay %.0f us (%d)" % (cmean, ccnt))
        # tcp_rtt named: srtt_hist samples incoming segments (here each of the n messages, > 10 ms apart).
        rtt = [r for r in recs.get("tcp_rtt", []) if r[2:7] == key and r[0] == str(srv.pid)]
        check(rtt and hist_mean_count(rtt[-1][10])[1] >= n, "per-segment srtt samples: %r" % (rtt[-1:],))
        # Default sub-probes: no tcp_delay table; srtt_hist has snapshot samples of the link.
        check("tcp_delay" not in drecs, "tcp_delay is not a default")
        rtt = [r for r in drecs.get("tcp_rtt", []) if r[2:7] == key and r[0] == str(cli.pid)]
        check(rtt, "default tcp_rtt records: %s" % derr[-1500:])
        smean, scnt = hist_mean_count(rtt[-1][10])
        check(1 <= scnt <= 4 and smean > 0, "srtt_hist from the snapshots: %d samples, mean %.0f" % (scnt, smean))


test_tcp_delay_receiver_sleeps.timeout = 60


def prefork_link_owner(port, period, hold_ms, settle):
    """A prefork server (listens in one process, accepts in a forked child that holds the link
    hold_ms) and one client: the server link's records and the child's pid."""
    with NetnsPair() as ns:
        probe = run_probe(["-t", str(period), "-c", "1", "-P", "tcp_stats"])
        try:
            srv = ns.popen(ns.b, HOLD + ["prefork", str(port), "100000", str(hold_ms)])
            wait_ready(srv)
            c = peer_json(ns.popen(ns.a, HOLD + ["client_hold", ns.ADDR_B, str(port), "100000"]))
            child = peer_json(srv)["child"]
            time.sleep(settle)
        finally:
            recs, err = stop_probe(probe)
        tx = [r for r in recs.get("tcp_tx_rx", []) if r[1] == "0" and r[2:7] == [ns.ADDR_A, ns.ADDR_B, str(c["lport"]),
                                                                               str(port), "2"]]
        check(tx, "server link reported: %s" % err[-1500:])
        check({r[0] for r in tx} == {str(child)}, "server link under the accepting child %d (listener %d): %r"
              % (child, srv.pid, [r[:14] for r in tx]))
        check(abs(int(tx[-1][8]) - 100000) <= 1 and int(tx[-1][13]) == 1, "rx bytes (FIN) and close: %r\n%s"
              % ([r[:14] for r in tx], err[-3000:]))


def test_tcp_server_link_owner_prefork():
    """A server that listens in one process and accepts in a forked child (nginx's model): the link is
    reported under the child, which holds it (found by the iterator at the next report), not under the
    listener's process."""
    prefork_link_owner(5040, 1, 2500, 1.5)


test_tcp_server_link_owner_prefork.timeout = 60


def test_tcp_server_link_owner_prefork_short():
    """The same, but the child closes the link at once, long before the first report (and the
    iterator) runs: it is named at its close (FIN_WAIT1, the closing process is current)."""
    prefork_link_owner(5041, 2, 0, 2.5)


test_tcp_server_link_owner_prefork_short.timeout = 60


def test_tcpprobe_idle_between_reports():
    """Between reports tcpprobe sleeps until the kernel says the closed-link ring is a quarter full: an
    idle probe (standalone: no heartbeat) does not wake up on a timer (the drain used to run every
    25-100 ms, 10-40 wakeups a second, on any host)."""
    probe = run_probe(["-t", "60", "--pid", str(os.getpid()), "-P", "tcp_stats"])
    try:
        def sleeps():
            with open("/proc/%d/status" % probe.pid) as f:  # the main thread's
                return int([x for x in f if x.startswith("voluntary_ctxt_switches")][0].split()[1])
        time.sleep(1)
        before = sleeps()
        time.sleep(4)
        woke = sleeps() - before
    finally:
        stop_probe(probe)
    check(woke <= 2, "tcpprobe woke %d times in 4 s without anything to do" % woke)


def test_tcp_connection_burst_nothing_lost():
    """Thousands of short connections within one report period, more closes than tcp_closed and its
    spare hold (8,192 + 256 entries): drained between reports, every link is counted, none lost."""
    import socket
    import threading
    n = 6000
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(512)
    port = lsn.getsockname()[1]

    def serve():
        for _ in range(n):
            c, _ = lsn.accept()
            c.recv(1)
            c.sendall(b"y")
            c.close()

    probe = run_probe(["-t", "5", "--pid", str(os.getpid()), "-P", "tcp_stats"])
    try:
        t = threading.Thread(target=serve)
        t.start()
        t0 = time.monotonic()
        for _ in range(n):
            with socket.create_connection(("127.0.0.1", port)) as c:
                c.sendall(b"x")
                c.recv(1)
        t.join()
        took = time.monotonic() - t0
        time.sleep(5.5)
    finally:
        lsn.close()
        recs, err = stop_probe(probe)
    check("closed links lost" not in err, "no closed link lost: %s" % err[-1500:])
    tx = recs.get("tcp_tx_rx", [])
    srv = [r for r in tx if r[1] == "0" and r[5] == str(port)]
    cli = [r for r in tx if r[1] == "1" and r[5] == str(port)]
    check(srv and cli, "both ends reported: %s" % err[-1500:])
    # tgid role client_ip server_ip client_port server_port protocol comm rx tx segs_in segs_out opened closed
    s, c = srv[-1], cli[-1]
    check(int(s[13]) == n and int(c[13]) == n, "%d connections in %.1f s: %s server and %s client links closed"
          % (n, took, s[13], c[13]))
    # One byte each way, counted as the kernel counts bytes_received/bytes_acked (sequence space): the
    # FIN takes one more each way (unless the link is gone before it is processed: within 1 %), and the
    # client's SYN is acknowledged through tcp_ack.
    got, want = (int(s[8]), int(s[9]), int(c[8]), int(c[9])), (2 * n, 2 * n, 2 * n, 3 * n)
    check(all(w - w // 100 <= g <= w for g, w in zip(got, want)),
          "one byte each way per connection: server rx/tx, client rx/tx %r, expected %r" % (got, want))


test_tcp_connection_burst_nothing_lost.timeout = 60


CONNECTOR = r"""
import ctypes, socket, sys, time
port, name = int(sys.argv[1]), sys.argv[2].encode()
def connect(n):
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"x")
            c.recv(1)
connect(3)  # out of scope: the comm does not match yet
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
print("renamed", flush=True)
sys.stdin.readline()  # the probe has rescanned: this process is in scope now
connect(5)
"""


def test_tcp_scope_change_forgets_cached_verdicts():
    """A process whose connections were out of scope comes into scope (--comm, rescanned every
    period): its next connections are tracked. The kernel caches each process's scope verdict (a hit
    costs a few loads instead of the scope maps' lookups); a scope change must void it, or the process
    stays out (the check fails if the cache is not keyed by the scope's generation)."""
    import socket
    import threading
    name = "ggvc%d" % (os.getpid() % 100000)
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(64)
    port = lsn.getsockname()[1]

    def serve():
        for _ in range(8):
            c, _ = lsn.accept()
            c.recv(1)
            c.sendall(b"y")
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    probe = run_probe(["-t", "1", "--comm", name, "-P", "tcp_stats"])
    cli = None
    try:
        cli = subprocess.Popen([sys.executable, "-c", CONNECTOR, str(port), name], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = cli.stdout.readline().decode().strip()
        check(line == "renamed", "connector: %r (exit status %r)" % (line, cli.poll()))
        # The rescan that finds it applies a new scope, which logs the iterator's count: wait for that.
        import select
        deadline = time.monotonic() + 15
        while "established links found" not in probe.early_err.split(" started: ")[-1]:
            check(time.monotonic() < deadline, "no rescan found the connector: %s" % probe.early_err[-1500:])
            if select.select([probe.stderr], [], [], 0.5)[0]:
                probe.early_err += probe.stderr.readline().decode()
        cli.stdin.write(b"go\n")
        cli.stdin.flush()
        check(cli.wait(timeout=20) == 0, "connector failed: %s" % cli.stderr.read().decode())
        t.join(timeout=10)
        time.sleep(2.5)
    finally:
        if cli and cli.poll() is None:
            cli.kill()
        lsn.close()
        recs, err = stop_probe(probe)
    tx = [r for r in recs.get("tcp_tx_rx", []) if r[1] == "1" and r[5] == str(port)]
    check(tx, "the connector's client links reported: %s" % err[-1500:])
    # tgid role client_ip server_ip client_port server_port protocol comm rx tx segs_in segs_out opened closed
    last = tx[-1]
    check(last[0] == str(cli.pid) and int(last[12]) == 5 and int(last[13]) == 5,
          "the 5 connections made in scope, not the 3 before: %r" % last[:14])


test_tcp_scope_change_forgets_cached_verdicts.timeout = 60
