"""test_settings.py - gala-gopher settings a migrating user has in his file, with the real supervisor:
global.rest_api_on = false (no REST listener at all), a channel set to "off" (no web_server listener),
metric.out_channel = "json" (gala-gopher's nested metric lines in the log files, histograms included),
and global.machine_id = "dmi-ip" (DMI product uuid + host IPv4, gala-gopher's machine id)."""
import json
import os
import shutil
import socket
import tempfile
import time

from harness import Supervisor, check, free_port, probe_entry, rest_section, wait_for
from test_export import HIST_META, emitter, new_sup
from test_identity import IDENT, Layouts, proc_probe


def set_global(s, text):
    """Add keys to the harness's global section."""
    with open(s.conf) as f:
        conf = f.read()
    conf = conf.replace("stop_grace_ms = 1000;", "stop_grace_ms = 1000; " + text, 1)
    with open(s.conf, "w") as f:
        f.write(conf)


def listening(port):
    c = socket.socket()
    c.settimeout(1)
    try:
        c.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        c.close()


def test_rest_api_off_and_channel_off():
    state = tempfile.mkdtemp(prefix="gg-settings-")
    rport, wport = free_port(), free_port()
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1 -P host")], metric_out="off",
                   extra="%s web_server = { port = %d; };" % (rest_section(state, rport), wport))
    set_global(s, "rest_api_on = false;")
    s.start()
    try:
        wait_for(lambda: s.probe("system_infos")["state"] == "running", 10, "system_infos running")
        time.sleep(1)
        st = s.status()
        check(not st["rest_api_server"]["listening"] and "rest_api_on" in st["rest_api_server"]["error"],
              "status says the REST API is off: %r" % st["rest_api_server"])
        check(not listening(rport), "nothing listens on the REST port %d" % rport)
        check(not listening(wport), "metric.out_channel = off: nothing listens on the web_server port")
        check(st["export"]["metric"]["channel"] == "off", "metric channel off: %r" % st["export"]["metric"])
        check("unknown key 'global.rest_api_on'" not in s.sup_log(), "rest_api_on is a known key")
    finally:
        s.cleanup()
    # the same file with rest_api_on = true (a libconfig boolean, as gala-gopher writes it): listening
    rport = free_port()
    s = Supervisor(metric_out="logs", extra=rest_section(state, rport))
    set_global(s, "rest_api_on = true;")
    s.start()
    try:
        wait_for(lambda: listening(rport), 10, "REST API listening with rest_api_on = true")
    finally:
        s.cleanup()
        shutil.rmtree(state, ignore_errors=True)


test_rest_api_off_and_channel_off.timeout = 40


def test_json_metric_channel():
    with Layouts() as lay:
        pid = lay.docker()[0]
        line = "|test_hist|k1|a\"b|2 10 3 100 5 1234.5 6|3 0.5 10 0.9 20 0.99 30 100 7|1.5|"
        s = lay.own(new_sup(lambda s: [emitter(s, "hist", [line])[0]], metric_out="json", extra_meta=[HIST_META],
                            probes=[proc_probe([pid])], extra=lay.conf()))
        s.start()
        recs = wait_for(lambda: (lambda r: r if {"test_hist", "system_proc"} <= {x["table_name"] for x in r} else None)(
            s.metric_records()), 20, "nested lines of test_hist and system_proc in metrics.log")
        h = [r for r in recs if r["table_name"] == "test_hist"][0]
        check(set(h) == {"timestamp", "entity_name", "table_name", "labels", "metrics", "histos"}, "keys %r" % h)
        check(h["entity_name"] == "test_hist" and isinstance(h["timestamp"], int), "names %r" % h)
        with open("/etc/machine-id") as f:
            mid = f.read().strip()
        check(h["labels"] == {"k": "k1", "l": "a\"b", "machine_id": mid, "hostname": socket.gethostname()},
              "labels %r" % h["labels"])
        check(h["metrics"] == {"q": "3 0.5 10 0.9 20 0.99 30 100 7", "g": 1.5}, "metrics %r" % h["metrics"])
        check(h["histos"] == {"lat": {"10": 3, "100": 5, "count": 6, "sum": 1234.5}}, "histos %r" % h["histos"])
        p = [r for r in recs if r["table_name"] == "system_proc"][-1]
        got = {k: p["labels"].get(k) for k in IDENT}
        check(got == lay.want[pid], "identity labels in the nested form: %r" % got)
        check(p["labels"]["tgid"] == str(pid) and "fd_count" in p["metrics"] and p["histos"] == {},
              "system_proc nested: %r" % p)
        check(s.status()["export"]["metric"]["channel"] == "logs", "json goes to the log files")


test_json_metric_channel.timeout = 40


def first_ipv4():
    """The first IPv4 address outside 127/8 in interface order (`ip -4 -o addr` order)."""
    import subprocess
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        addr = line.split()[3].split("/")[0]
        if not addr.startswith("127."):
            return addr
    return None


def test_machine_id_dmi_ip():
    d = tempfile.mkdtemp(prefix="gg-settings-")
    uuid_file = os.path.join(d, "product_uuid")
    with open(uuid_file, "w") as f:
        f.write("4c4c4544-0042-3510-8051-b4c04f4e4d32\n")
    ip = first_ipv4()
    check(ip, "this machine has an IPv4 address")
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1 -P host")], metric_out="logs")
    set_global(s, 'machine_id = "dmi-ip"; product_uuid_file = "%s";' % uuid_file)
    s.start()
    try:
        recs = wait_for(lambda: s.metric_records("system_os"), 15, "a system_os record")
        want = "4c4c4544-0042-3510-8051-b4c04f4e4d32-" + ip
        check(recs[0]["machine_id"] == want, "machine_id %r, want %r" % (recs[0]["machine_id"], want))
    finally:
        s.cleanup()
    # without the DMI file: /etc/machine-id, with a warning
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1 -P host")], metric_out="logs")
    set_global(s, 'machine_id = "dmi-ip"; product_uuid_file = "%s/absent";' % d)
    s.start()
    try:
        recs = wait_for(lambda: s.metric_records("system_os"), 15, "a system_os record")
        with open("/etc/machine-id") as f:
            check(recs[0]["machine_id"] == f.read().strip(), "fallback to /etc/machine-id: %r" % recs[0])
        check("dmi-ip" in s.sup_log(), "the fallback is logged")
    finally:
        s.cleanup()
        os.unlink(uuid_file)
        os.rmdir(d)


test_machine_id_dmi_ip.timeout = 40
