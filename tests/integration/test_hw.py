"""test_hw.py - hwprobe under the supervisor, started with PUT /hw: carrier changes of a veth pair whose
host end is watched while the test takes its peer (in a network namespace of the test's own) down and
up a known number of times: exact carrier_up/down counts (against sysfs) and one event per carrier loss.
Memory controller errors cannot be caused here: tests/unit/test_hw_decode.c feeds mc_event records."""
import os
import re
import subprocess
import tempfile
import time

from harness import (Supervisor, TestFailure, check, dump_probe_log, events, rest_port, rest_put_conf, rest_section,
                     teardown, wait_for)

TOGGLES = 3


class VethToNetns:
    """A veth pair: h<tag> in the host's namespace (what hwprobe sees), its peer p<tag> in a new netns
    ns<tag>; both removed on exit."""

    def __init__(self):
        tag = "%x%x" % (os.getpid() & 0xffff, int.from_bytes(os.urandom(2), "little"))
        self.ns, self.host, self.peer = "ggh" + tag, "ghh" + tag, "ghp" + tag

    def ip(self, *argv, ns=None):
        cmd = ["ip"] + (["-n", ns] if ns else []) + list(argv)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise TestFailure("%s: %s" % (" ".join(cmd), r.stderr.strip()))

    def __enter__(self):
        try:
            self.ip("netns", "add", self.ns)
            self.ip("link", "add", self.host, "type", "veth", "peer", "name", self.peer, "netns", self.ns)
            self.ip("link", "set", self.host, "up")
            self.ip("link", "set", self.peer, "up", ns=self.ns)
        except TestFailure:
            self.__exit__(None, None, None)
            raise
        return self

    def counts(self):
        def rd(f):
            with open("/sys/class/net/%s/%s" % (self.host, f)) as fh:
                return int(fh.read())
        return rd("carrier_up_count"), rd("carrier_down_count")

    def __exit__(self, *exc):
        subprocess.run(["ip", "link", "del", self.host], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        return False


def test_hw_carrier_counts_and_events():
    state = tempfile.mkdtemp(prefix="gg-hw-state-")
    sup = None
    try:
        with VethToNetns() as v:
            # event.timeout 1 s: one event per carrier loss when they are more than a second apart
            sup = Supervisor(extra=rest_section(state) + '\nevent = { out_channel = "logs"; timeout = 1; };').start()
            port = rest_port(sup)
            conf = {"cmd": {"probe": ["hw_nic", "hw_mem"]}, "params": {"report_period": 5}, "state": "running"}
            rest_put_conf(port, "hw", conf)

            def rows(after=0):
                return [r for r in sup.metric_records("nic_failure") if r["name"] == v.host and
                        r["timestamp"] > after]
            first = wait_for(lambda: (rows() or [None])[-1], 20, "a nic_failure row of %s" % v.host, interval=0.2)
            check(first["driver"] == "veth" and first["dev_name"] == v.host, "labels: %s" % first)
            up0, down0 = v.counts()
            check((int(first["carrier_up_count"]), int(first["carrier_down_count"])) == (up0, down0),
                  "first row %s == sysfs %s" % (first, (up0, down0)))
            for _ in range(TOGGLES):
                v.ip("link", "set", v.peer, "down", ns=v.ns)
                time.sleep(0.3)
                v.ip("link", "set", v.peer, "up", ns=v.ns)
                time.sleep(1.5)
            up1, down1 = v.counts()
            check((up1 - up0, down1 - down0) == (TOGGLES, TOGGLES), "sysfs counted the toggles: %s -> %s" %
                  ((up0, down0), (up1, down1)))
            t = time.time() * 1000
            last = wait_for(lambda: (rows(t) or [None])[-1], 20, "a nic_failure row after the toggles", interval=0.2)
            check((int(last["carrier_up_count"]), int(last["carrier_down_count"])) == (up1, down1),
                  "row after %s == sysfs %s" % (last, (up1, down1)))

            def mine():
                return [e for e in events(sup) if e["Resource"]["labels"].get("entity_id") == v.host and
                        e["Resource"]["metric"] == "gala_gopher_hw_carrier_down_count"]
            evs = wait_for(lambda: mine() if len(mine()) >= TOGGLES else None, 15, "%d carrier events" % TOGGLES,
                           interval=0.2)
            downs = sum(int(re.search(r"went down (\d+) time", e["Body"]).group(1)) for e in evs)
            check(len(evs) == TOGGLES and downs == TOGGLES,
                  "one event per carrier loss: %s" % [e["Body"] for e in evs])
            check(all(e["SeverityText"] == "WARN" for e in evs), "events are warnings: %s" % evs)
            # live: hw_mem only; the device's rows and carrier events stop
            conf["cmd"]["probe"] = ["hw_mem"]
            rest_put_conf(port, "hw", conf)
            wait_for(lambda: "sub-probes hw_mem\n" in sup.probe_log("hwprobe") or
                     "sub-probes hw_mem " in sup.probe_log("hwprobe"), 20, "hwprobe applies hw_mem only")
            t = time.time() * 1000
            v.ip("link", "set", v.peer, "down", ns=v.ns)
            time.sleep(0.3)
            v.ip("link", "set", v.peer, "up", ns=v.ns)
            time.sleep(11)  # two report periods
            check(not rows(t), "no nic_failure rows with hw_nic off: %s" % rows(t)[-1:])
            check(len(mine()) == TOGGLES, "no carrier event with hw_nic off: %s" % [e["Body"] for e in mine()])
            log = sup.probe_log("hwprobe")
            check("cannot attach" not in log, "tracepoints attached: %s" % log[-2000:])
    except Exception:
        dump_probe_log(sup, "hwprobe")
        raise
    finally:
        teardown(sup, state)
