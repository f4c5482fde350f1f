"""test_virt.py - virtualized_infos: a real paused qemu (-S, -machine none: no guest runs, no KVM needed)
named with -name guest=... and -uuid, reported through the supervisor after PUT /virt; and the binary
standalone on a fixture libvirt run directory (status XML with the qemu's pid, a stale domain, a link)."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import uuid

from harness import (BUILD, Supervisor, check, dump_probe_log, rest_call, rest_port, rest_put_conf, rest_section,
                     teardown, wait_for)

QEMU = "qemu-system-x86_64"


class Qemu:
    """A paused qemu with its own name and uuid, killed on exit."""

    def __init__(self, name, process=None):
        self.name = name
        self.process = process  # -name ...,process=X: the process renames itself (its comm)
        self.uuid = str(uuid.uuid4())
        self.proc = None

    def __enter__(self):
        check(shutil.which(QEMU), "%s installed (scripts/install-deps.sh: qemu-system-x86)" % QEMU)
        self.proc = subprocess.Popen(
            [QEMU, "-S", "-name", "guest=%s,debug-threads=on%s" % (self.name.replace(",", ",,"),
                                                                 ",process=" + self.process if self.process else ""),
             "-uuid",
             self.uuid.upper(), "-nographic", "-display", "none", "-machine", "none", "-monitor", "none",
             "-serial", "none", "-nodefaults"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        def up():
            if self.proc.poll() is not None:
                raise AssertionError("qemu exited: %s" % self.proc.stderr.read().decode(errors="replace"))
            with open("/proc/%d/comm" % self.proc.pid) as f:
                return f.read().startswith(self.process[:15] if self.process else "qemu")
        wait_for(up, 10, "qemu running")
        self.pid = self.proc.pid
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        return False


def test_virt_rest_qemu_name_and_uuid():
    state = tempfile.mkdtemp(prefix="gg-virt-state-")
    sup = None
    try:
        with Qemu("gg-virt-%d,x" % os.getpid()) as q, Qemu("gg-virt-r-%d" % os.getpid(), "ggvm%d" % os.getpid()) as r:
            sup = Supervisor(extra=rest_section(state)).start()
            port = rest_port(sup)
            rest_put_conf(port, "virt", {"params": {"report_period": 5}, "state": "running"})
            row = wait_for(lambda: ([r for r in sup.metric_records("virt_proc") if r["tgid"] == str(q.pid)]
                                    or [None])[-1], 20, "a virt_proc row of the qemu", interval=0.2)
            check(row["vm_name"] == q.name and row["uuid"] == q.uuid and row["value"] == 1,
                  "name %r uuid %s: %s" % (q.name, q.uuid, row))
            check(row["entity_name"] == "proc", "gala-gopher's entity: %s" % row)
            row = wait_for(lambda: ([x for x in sup.metric_records("virt_proc") if x["tgid"] == str(r.pid)]
                                    or [None])[-1], 20, "a virt_proc row of the renamed qemu", interval=0.2)
            check(row["vm_name"] == r.name and row["uuid"] == r.uuid, "renamed qemu (comm %s): %s" % (r.process, row))
            others = [r for r in sup.metric_records("virt_proc") if r["tgid"] in (str(os.getpid()), str(sup.proc.pid))]
            check(not others, "no row for processes that are not qemu: %s" % others)
            st, doc, raw, _ = rest_call(port, "PUT", "/virt", urllib.parse.urlencode(
                {"json": json.dumps({"snoopers": {"proc_id": [q.pid]}})}))
            check(st == 400, "virt takes no snoopers (seed: NA): %d %s" % (st, raw[:200]))
    except Exception:
        dump_probe_log(sup, "virtualized_infos")
        raise
    finally:
        teardown(sup, state)


STATUS = """<!--
WARNING: THIS IS AN AUTO-GENERATED FILE. CHANGES TO IT ARE LIKELY TO BE OVERWRITTEN AND LOST.
-->
<domstatus state='running' reason='booted' pid='%d'>
  <taint flag='high-privileges'/>
  <monitor path='/var/lib/libvirt/qemu/domain-1-x/monitor.sock' type='unix'/>
  <vcpus>
    <vcpu id='0' pid='%d'/>
  </vcpus>
  <domain type='kvm' id='1'>
    <name>%s</name>
    <uuid>%s</uuid>
    <metadata><app:x xmlns:app='http://example.org/'><name>not this</name></app:x></metadata>
    <memory unit='KiB'>1048576</memory>
  </domain>
</domstatus>
"""


def test_virt_fixture_libvirt_run_dir():
    d = tempfile.mkdtemp(prefix="gg-virt-run-")
    other = tempfile.mkdtemp(prefix="gg-virt-other-")
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        with Qemu("cmdline-name-%d" % os.getpid()) as q:
            lv_uuid = str(uuid.uuid4())
            with open(os.path.join(d, "web.xml"), "w") as f:
                f.write(STATUS % (q.pid, q.pid, "web &amp; db", lv_uuid))
            with open(os.path.join(d, "web.pid"), "w") as f:
                f.write(str(q.pid))
            with open(os.path.join(d, "gone.xml"), "w") as f:  # a domain whose qemu is not running
                f.write(STATUS % (dead.pid, dead.pid, "gone", str(uuid.uuid4())))
            with open(os.path.join(other, "evil.xml"), "w") as f:  # only reachable through a link
                f.write(STATUS % (os.getpid(), os.getpid(), "evil", str(uuid.uuid4())))
            os.symlink(os.path.join(other, "evil.xml"), os.path.join(d, "evil.xml"))
            p = subprocess.Popen([os.path.join(BUILD, "probes", "virtualized_infos"), "-t", "1", "--libvirt-dir", d],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(2.5)
            p.terminate()
            out, err = p.communicate(timeout=10)
            rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("|virt_proc|")]
            mine = [r for r in rows if r[1] == str(q.pid)]
            check(mine, "a row for the qemu: %s %s" % (out, err))
            check(mine[-1] == ["virt_proc", str(q.pid), lv_uuid, "web & db", "1"],
                  "libvirt's name and uuid win over the command line's: %s" % mine[-1])
            check(not [r for r in rows if r[1] in (str(dead.pid), str(os.getpid()))],
                  "no row for the stale domain nor through the link: %s" % rows)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)
