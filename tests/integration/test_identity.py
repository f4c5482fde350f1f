"""test_identity.py - container and pod labels on tgid tables with the real supervisor and system_infos:
cgroups laid out as containerd (Kubernetes, systemd and cgroupfs drivers), CRI-O, docker and podman
create them, state files written as each runtime writes them (into a temporary directory configured as
the runtime's root), a test process moved into each cgroup; the labels are checked on the process's
series in /metrics, in Kafka JSON records and in the metadata message. Containers cannot run here, so
the layouts are made by hand; every cgroup is under a parent named after this test run and removed."""
import glob
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
import uuid

from harness import (KafkaMock, Supervisor, cgroup2_root, check, events, free_port, http_get, parse_prom, probe_entry,
                     rest_put_conf, teardown, wait_for)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
CONTAINERD_SANDBOX = "5ab0c0de" * 8  # its labels in fixtures/containerd/meta.db.gz: app=checkout, ...
IDENT = ("container_id", "container_name", "container_image", "pod_id", "pod", "pod_namespace")


def hexid():
    return "%064x" % random.getrandbits(256)


def oci_config(annotations, cgroups_path):
    """An OCI runtime spec as runc/crun read it from the bundle (the parts that matter here)."""
    return {
        "ociVersion": "1.1.0",
        "process": {"user": {"uid": 0, "gid": 0}, "args": ["/bin/sleep", "3600"], "cwd": "/",
                    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        "root": {"path": "rootfs"},
        "hostname": "x",
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
        "annotations": annotations,
        "linux": {"cgroupsPath": cgroups_path, "namespaces": [{"type": "pid"}, {"type": "mount"}]},
    }


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent="\t")


class Layouts:
    """Cgroups and runtime state of several containers, one sleeping process in each. As a context manager:
    at the end of the block what the test gave to own() is torn down, the last given first, then the
    layouts, even when the test failed."""

    def __init__(self):
        self.root = cgroup2_root()
        self.tag = "gg-ident-%d-%04x" % (os.getpid(), random.getrandbits(16))
        self.parent = os.path.join(self.root, self.tag + ".slice")
        self.state = tempfile.mkdtemp(prefix="gg-ident-state-")
        self.dirs = {k: os.path.join(self.state, k) for k in ("containerd", "crio", "storage", "docker",
                                                              "containerd_root")}
        for d in self.dirs.values():
            os.makedirs(d)
        self.procs = []
        self.want = {}  # pid -> expected labels
        self.owned = []
        os.mkdir(self.parent)

    def own(self, thing):
        """thing (a supervisor, a path, anything harness.teardown stops) torn down at the end; returns it."""
        self.owned.append(thing)
        return thing

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        teardown(*reversed(self.owned), self)

    def conf(self):
        return ('identity = { containerd_dir = "%s"; crio_dir = "%s"; storage_dir = "%s"; docker_dir = "%s"; '
                'containerd_root = "%s"; };' % (self.dirs["containerd"], self.dirs["crio"], self.dirs["storage"],
                                                self.dirs["docker"], self.dirs["containerd_root"]))

    def containerd_metadata(self):
        """containerd's metadata database (bbolt), as containerd writes it, with the pod sandbox
        CONTAINERD_SANDBOX (tests/fixtures/containerd: made by go.etcd.io/bbolt)."""
        import gzip
        d = os.path.join(self.dirs["containerd_root"], "io.containerd.metadata.v1.bolt")
        os.makedirs(d, exist_ok=True)
        with gzip.open(os.path.join(FIXTURES, "containerd", "meta.db.gz")) as src, \
                open(os.path.join(d, "meta.db"), "wb") as dst:
            shutil.copyfileobj(src, dst)

    def spawn(self, rel, want, argv=("sleep", "120")):
        """A process in cgroup <parent>/<rel> (made here), expected to carry the labels want."""
        cg = os.path.join(self.parent, rel) if rel else None
        if cg:
            os.makedirs(cg)
        p = subprocess.Popen(list(argv))
        self.procs.append(p)
        if cg:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(p.pid))
            with open("/proc/%d/cgroup" % p.pid) as f:
                check(("0::/%s.slice/%s\n" % (self.tag, rel)) in f.read(), "process %d moved into %s" % (p.pid, rel))
        self.want[p.pid] = dict(want)
        return p.pid

    def containerd_k8s(self, qos="besteffort", driver="systemd", sandbox=None):
        cid, uid = hexid(), str(uuid.uuid4())
        sandbox = sandbox or hexid()
        pod, ns, name, image = "web-%s" % cid[:5], "team-a", "nginx", "docker.io/library/nginx:1.25.3"
        u_ = uid.replace("-", "_")
        if driver == "systemd":
            pod_slice = ("kubepods-pod%s.slice" % u_ if qos == "guaranteed" else
                         "kubepods-%s.slice/kubepods-%s-pod%s.slice" % (qos, qos, u_))
            rel = "kubepods.slice/%s/cri-containerd-%s.scope" % (pod_slice, cid)
            cgpath = "kubepods-%s-pod%s.slice:cri-containerd:%s" % (qos, u_, cid)
        else:
            rel = ("kubepods/pod%s/%s" % (uid, cid) if qos == "guaranteed" else
                   "kubepods/%s/pod%s/%s" % (qos, uid, cid))
            cgpath = "/" + rel
        # containerd's CRI plugin (pkg/cri/annotations): written into the bundle's config.json
        ann = {
            "io.kubernetes.cri.container-type": "container",
            "io.kubernetes.cri.sandbox-id": sandbox,
            "io.kubernetes.cri.sandbox-namespace": ns,
            "io.kubernetes.cri.sandbox-uid": uid,
            "io.kubernetes.cri.sandbox-name": pod,
            "io.kubernetes.cri.container-name": name,
            "io.kubernetes.cri.image-name": image,
        }
        write_json(os.path.join(self.dirs["containerd"], "k8s.io", cid, "config.json"), oci_config(ann, cgpath))
        # the pause container of the pod has its own bundle (no container or image name)
        write_json(os.path.join(self.dirs["containerd"], "k8s.io", sandbox, "config.json"),
                   oci_config({"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-id": sandbox,
                               "io.kubernetes.cri.sandbox-name": pod, "io.kubernetes.cri.sandbox-namespace": ns,
                               "io.kubernetes.cri.sandbox-uid": uid,
                               "io.kubernetes.cri.sandbox-log-directory": "/var/log/pods/%s_%s_%s" % (ns, pod, uid)},
                              cgpath))
        return self.spawn(rel, {"container_id": cid, "container_name": name, "container_image": image,
                                "pod_id": uid, "pod": pod, "pod_namespace": ns})

    def crio(self, argv=("sleep", "120"), pod_labels=None):
        cid, uid, sandbox = hexid(), str(uuid.uuid4()), hexid()
        pod, ns, name, image = "api-%s" % cid[:5], "prod", "api", "quay.io/example/api:v2"
        u_ = uid.replace("-", "_")
        rel = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/crio-%s.scope" % (u_, cid)
        labels = {"io.kubernetes.container.name": name, "io.kubernetes.pod.name": pod,
                  "io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.uid": uid}
        ann = dict(labels)
        ann.update({
            "io.container.manager": "cri-o",
            "io.kubernetes.cri-o.ContainerID": cid,
            "io.kubernetes.cri-o.ContainerName": "k8s_%s_%s_%s_%s_0" % (name, pod, ns, uid),
            "io.kubernetes.cri-o.ContainerType": "container",
            "io.kubernetes.cri-o.ImageName": image,
            "io.kubernetes.cri-o.ImageRef": "sha256:" + hexid(),
            "io.kubernetes.cri-o.Labels": json.dumps(labels),
            "io.kubernetes.cri-o.SandboxID": sandbox,
            "io.kubernetes.cri-o.SandboxName": "k8s_POD_%s_%s_%s_0" % (pod, ns, uid),
        })
        # CRI-O saves the spec in the run root (the bundle) and in the graph root
        cfg = oci_config(ann, "kubepods-burstable-pod%s.slice:crio:%s" % (u_, cid))
        write_json(os.path.join(self.dirs["crio"], "overlay-containers", cid, "userdata", "config.json"), cfg)
        if pod_labels is not None:
            # the pod sandbox's spec (server/sandbox_run_linux.go): the pod's labels, with the kubelet's
            # io.kubernetes.pod.* ones, as one JSON string; the pod's annotations likewise
            plabels = dict(pod_labels)
            plabels.update({"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": ns,
                            "io.kubernetes.pod.uid": uid})
            sann = {
                "io.container.manager": "cri-o",
                "io.kubernetes.container.name": "POD",
                "io.kubernetes.cri-o.Annotations": json.dumps({"kubernetes.io/config.seen": "2024-01-01T00:00:00Z"}),
                "io.kubernetes.cri-o.ContainerID": sandbox,
                "io.kubernetes.cri-o.ContainerName": "k8s_POD_%s_%s_%s_0" % (pod, ns, uid),
                "io.kubernetes.cri-o.ContainerType": "sandbox",
                "io.kubernetes.cri-o.HostName": pod,
                "io.kubernetes.cri-o.KubeName": pod,
                "io.kubernetes.cri-o.Labels": json.dumps(plabels),
                "io.kubernetes.cri-o.Namespace": ns,
                "io.kubernetes.cri-o.SandboxID": sandbox,
                "io.kubernetes.cri-o.SandboxName": "k8s_POD_%s_%s_%s_0" % (pod, ns, uid),
                "io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.uid": uid,
            }
            write_json(os.path.join(self.dirs["crio"], "overlay-containers", sandbox, "userdata", "config.json"),
                       oci_config(sann, "kubepods-burstable-pod%s.slice:crio:%s" % (u_, sandbox)))
        return self.spawn(rel, {"container_id": cid, "container_name": name, "container_image": image,
                                "pod_id": uid, "pod": pod, "pod_namespace": ns}, argv)

    def docker_state(self, cid, name, image):
        write_json(os.path.join(self.dirs["docker"], "containers", cid, "config.v2.json"), {
            "StreamConfig": {}, "State": {"Running": True, "Pid": 1234, "Status": "running"},
            "ID": cid, "Created": "2024-01-01T00:00:00.000000000Z", "Path": "sleep", "Args": ["3600"],
            "Config": {"Hostname": cid[:12], "Env": ["PATH=/usr/bin"], "Cmd": ["sleep", "3600"], "Image": image,
                       "Labels": {"maintainer": "someone"}},
            "Image": "sha256:" + hexid(), "Name": "/" + name, "Driver": "overlay2", "RestartCount": 0,
        })

    def docker_k8s(self, pod_labels):
        """A pod of the kubelet's dockershim (or cri-dockerd): the pod's labels are the labels of its
        sandbox (pause) container, which the container's io.kubernetes.sandbox.id names."""
        cid, sandbox, uid = hexid(), hexid(), str(uuid.uuid4())
        pod, ns, name, image = "shim-%s" % cid[:5], "legacy", "app", "busybox:1.36"
        common = {"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.uid": uid}
        slabels = dict(pod_labels)
        slabels.update(common)
        slabels.update({"io.kubernetes.container.name": "POD", "io.kubernetes.docker.type": "podsandbox",
                        "annotation.kubernetes.io/config.source": "api"})
        clabels = dict(common)
        clabels.update({"io.kubernetes.container.name": name, "io.kubernetes.docker.type": "container",
                        "io.kubernetes.sandbox.id": sandbox, "annotation.io.kubernetes.container.hash": "1a2b3c"})
        for i, nm, img, lb in ((sandbox, "k8s_POD_%s_%s_%s_0" % (pod, ns, uid), "registry.k8s.io/pause:3.9", slabels),
                               (cid, "k8s_%s_%s_%s_%s_0" % (name, pod, ns, uid), image, clabels)):
            write_json(os.path.join(self.dirs["docker"], "containers", i, "config.v2.json"), {
                "State": {"Running": True, "Pid": 1234, "Status": "running"}, "ID": i,
                "Created": "2024-01-01T00:00:00.000000000Z", "Path": "sleep", "Args": ["3600"],
                "Config": {"Hostname": pod, "Env": ["PATH=/usr/bin"], "Cmd": ["sleep", "3600"], "Image": img,
                           "Labels": lb},
                "Image": "sha256:" + hexid(), "Name": "/" + nm, "Driver": "overlay2", "RestartCount": 0,
            })
        u_ = uid.replace("-", "_")
        rel = ("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/docker-%s.scope" % (u_, cid))
        return self.spawn(rel, {"container_id": cid, "container_name": name, "container_image": image,
                                "pod_id": uid, "pod": pod, "pod_namespace": ns})

    def docker(self, state=True):
        cid, name, image = hexid(), "web-%d" % random.randint(1, 999), "nginx:1.25"
        if state:
            self.docker_state(cid, name, image)
        pid = self.spawn("system.slice/docker-%s.scope" % cid,
                         {"container_id": cid, "container_name": name, "container_image": image,
                          "pod_id": "", "pod": "", "pod_namespace": ""})
        return pid, cid, name, image

    def podman(self):
        cid, name, image = hexid(), "pm-db-%d" % random.randint(1, 999), "docker.io/library/postgres:16"
        entry = {
            "id": cid, "names": [name], "image": hexid(), "layer": hexid(),
            "metadata": json.dumps({"image-name": image, "image-id": hexid(), "name": name,
                                    "created-at": 1700000000, "mountlabel": ""}),
            "created": "2024-01-01T00:00:00Z", "flags": {"MountLabel": "", "ProcessLabel": ""},
        }
        other = dict(entry, id=hexid(), names=["other"])
        write_json(os.path.join(self.dirs["storage"], "overlay-containers", "containers.json"), [other, entry])
        write_json(os.path.join(self.dirs["storage"], "overlay-containers", cid, "userdata", "config.json"),
                   oci_config({"io.container.manager": "libpod", "org.opencontainers.image.stopSignal": "15"},
                              "machine.slice:libpod:%s" % cid))
        # podman (cgroup v2, systemd) runs the payload in a "container" child of libpod-<id>.scope
        return self.spawn("machine.slice/libpod-%s.scope/container" % cid,
                          {"container_id": cid, "container_name": name, "container_image": image,
                           "pod_id": "", "pod": "", "pod_namespace": ""})

    def host(self):
        return self.spawn(None, {k: "" for k in IDENT})

    def cleanup(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for d, _, _ in sorted(os.walk(self.parent), key=lambda x: -len(x[0])):
            try:
                os.rmdir(d)
            except OSError:
                pass
        shutil.rmtree(self.state, ignore_errors=True)
        check(not os.path.exists(self.parent), "cgroups removed")


def proc_series(text, pid):
    samples, _ = parse_prom(text)
    return [dict(ls) for (n, ls), _ in samples.items() if n == "gala_gopher_proc_fd_count" and
            ("tgid", str(pid)) in ls]


def proc_probe(pids, subs="proc"):
    """system_infos reporting every second on the processes pids, with the sub-probes subs."""
    return probe_entry("system_infos", "-t 1 -P %s --pid %s" % (subs, ",".join(str(p) for p in pids)))


def scraped_sup(lay, pids, extra=None):
    """A started supervisor, owned by lay, whose system_infos reports on pids to its own web server (extra:
    more of its configuration, by default lay's identity section): (the supervisor, its /metrics URL)."""
    port = free_port()
    s = lay.own(Supervisor(probes=[proc_probe(pids)], metric_out="web_server",
                           extra="web_server = { port = %d; }; %s" % (port, lay.conf() if extra is None else extra)))
    return s.start(), "http://127.0.0.1:%d/metrics" % port


def wait_proc_series(url, pid):
    """The text of the first scrape of url that has a proc series of pid."""
    return wait_for(lambda: (lambda b: b if proc_series(b, pid) else None)(http_get(url)[1]), 20, "the proc series")


def test_labels_from_each_runtime_on_metrics():
    with Layouts() as lay:
        pids = [lay.containerd_k8s("besteffort", "systemd"), lay.containerd_k8s("guaranteed", "systemd"),
                lay.containerd_k8s("burstable", "cgroupfs"), lay.crio(), lay.docker()[0], lay.podman(), lay.host()]
        late_pid, late_cid, late_name, late_image = lay.docker(state=False)
        s, url = scraped_sup(lay, pids + [late_pid])

        def scraped():
            st, body = http_get(url)
            return body if st == 200 and all(proc_series(body, p) for p in pids + [late_pid]) else None
        text = wait_for(scraped, 20, "a proc series for every process")
        for pid in pids:
            ser = proc_series(text, pid)
            check(len(ser) == 1, "one series for %d: %r" % (pid, ser))
            got = {k: ser[0].get(k) for k in IDENT}
            check(got == lay.want[pid], "labels of %d:\n got  %r\n want %r" % (pid, got, lay.want[pid]))
        # a container seen before its runtime wrote its state: the id at once, the names once they exist
        got = {k: proc_series(text, late_pid)[0].get(k) for k in IDENT}
        check(got == dict(lay.want[late_pid], container_name="", container_image=""), "before the state: %r" % got)
        lay.docker_state(late_cid, late_name, late_image)

        def named():
            ser = proc_series(http_get(url)[1], late_pid)
            return ser and ser[0]["container_name"] == late_name and ser[0]["container_image"] == late_image
        t0 = time.monotonic()
        wait_for(named, 10, "the late container's names")
        check(time.monotonic() - t0 < 6, "names within the retry interval (2 s) plus a report period")
        st = s.status()["export"]["identity"]
        check(st["lookups"] > 0 and st["containers"] == 7 and st["state_errors"] == 0, "identity status %r" % st)
        # a process's cgroup is read once per proc_refresh_ms (5 s), not per record
        check(st["proc_reads"] < st["lookups"], "cached: %r" % st)


test_labels_from_each_runtime_on_metrics.timeout = 60


def test_labels_on_kafka_json_and_metadata():
    with Layouts() as lay:
        km = lay.own(KafkaMock())
        pids = [lay.containerd_k8s(), lay.crio(), lay.docker()[0], lay.podman(), lay.host()]
        extra = ('meta = { out_channel = "kafka"; }; kafka = { kafka_broker = "%s"; }; %s' %
                 (km.bootstrap, lay.conf()))
        lay.own(Supervisor(probes=[proc_probe(pids, "proc,host")], metric_out="kafka", extra=extra)).start()

        def records():
            recs = [json.loads(m) for m in km.consume("gala_gopher")]
            got = {int(r["tgid"]): r for r in recs if r["table_name"] == "system_proc"}
            return (recs, got) if set(pids) <= set(got) else None
        recs, got = wait_for(records, 20, "system_proc records of every process on Kafka", interval=0.5)
        for pid in pids:
            r = got[pid]
            check({k: r.get(k) for k in IDENT} == lay.want[pid], "Kafka record of %d: %r" % (pid, r))
        other = [r for r in recs if r["table_name"] == "system_os"]
        check(other and not any(k in other[0] for k in IDENT), "a table without tgid has no identity: %r" % other[:1])
        meta = [json.loads(x) for x in km.consume("gala_gopher_metadata")]
        mp = [m for m in meta if m["meta_name"] == "system_proc"]
        check(mp and mp[0]["labels"][-6:] == list(IDENT), "metadata lists the labels: %r" % mp[:1])
        mo = [m for m in meta if m["meta_name"] == "system_os"]
        check(mo and not set(IDENT) & set(mo[0]["labels"]), "no identity labels for system_os: %r" % mo[:1])


test_labels_on_kafka_json_and_metadata.timeout = 60


def test_identity_off():
    with Layouts() as lay:
        pid = lay.docker()[0]
        _, url = scraped_sup(lay, [pid], 'identity = { enabled = "off"; };')
        text = wait_proc_series(url, pid)
        check(not any(k in proc_series(text, pid)[0] for k in IDENT), "identity.enabled = off: no labels")


test_identity_off.timeout = 40


def test_cgroup_v1_docker_cgroupfs():
    """Hybrid host, docker with the cgroupfs driver on cgroup v1: the unified line says "/", a v1
    controller's line names /docker/<id>; the labels come from that line."""
    v1 = "/sys/fs/cgroup/pids"
    with open("/proc/self/mountinfo") as f:
        if not any(" %s " % v1 in l and " - cgroup " in l for l in f):
            return  # no v1 pids hierarchy here: nothing to test
    with Layouts() as lay:
        parent = os.path.join(v1, lay.tag)
        cid, name, image = hexid(), "v1-web", "httpd:2.4"
        cg = os.path.join(parent, "docker", cid)

        def remove_v1():
            for d in (cg, os.path.dirname(cg), parent):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            check(not os.path.exists(parent), "v1 cgroups removed")
        lay.own(remove_v1)  # after the process (owned next) is gone
        p = lay.own(subprocess.Popen(["sleep", "120"]))
        os.makedirs(cg)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
        with open("/proc/%d/cgroup" % p.pid) as f:
            text = f.read()
        check(":pids:/%s/docker/%s\n" % (lay.tag, cid) in text, "moved into the v1 cgroup: %r" % text)
        lay.docker_state(cid, name, image)
        _, url = scraped_sup(lay, [p.pid])
        text = wait_proc_series(url, p.pid)
        got = {k: proc_series(text, p.pid)[0].get(k) for k in IDENT}
        check(got == {"container_id": cid, "container_name": name, "container_image": image, "pod_id": "",
                      "pod": "", "pod_namespace": ""}, "labels from the v1 line: %r" % got)


test_cgroup_v1_docker_cgroupfs.timeout = 40


def test_labels_on_taskprobe_events():
    """taskprobe's offline event (labelled tgid=<n>) about a process of a CRI-O container: the container
    and pod labels are in Resource.labels, though the process is gone when the event is reported."""
    with Layouts() as lay:
        # a process that makes system calls and context switches, so that taskprobe reports it
        pid = lay.crio(("python3", "-c", "import time\nwhile True: time.sleep(0.01)"))
        probe = probe_entry("taskprobe", "-t 1 --pid %d -P base_metrics -e --offline-thr 100" % pid)
        s = lay.own(Supervisor(probes=[probe], metric_out="logs",
                               extra='event = { out_channel = "logs"; }; %s' % lay.conf())).start()
        recs = wait_for(lambda: [r for r in s.metric_records() if r.get("tgid") == str(pid)], 20,
                        "taskprobe records of the process")
        check(all({k: r.get(k) for k in IDENT} == lay.want[pid] for r in recs),
              "taskprobe's %s records carry the labels: %r" % ({r["table_name"] for r in recs}, recs[0]))
        for p in lay.procs:
            if p.pid == pid:
                p.kill()
                p.wait()
        ev = wait_for(lambda: [e for e in events(s) if e["Resource"]["labels"].get("tgid") == str(pid)], 15,
                      "the offline event")[0]
        got = {k: ev["Resource"]["labels"].get(k) for k in IDENT}
        check(got == lay.want[pid], "event labels:\n got  %r\n want %r" % (got, lay.want[pid]))
        check(ev["Resource"]["labels"]["entity_name"] == "proc", "event %r" % ev)


test_labels_on_taskprobe_events.timeout = 40


REDIS_PINGER = """import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
while True:
    s.sendall(b"*1\\r\\n$4\\r\\nPING\\r\\n")
    s.recv(64)
    time.sleep(0.05)
"""


def test_labels_on_request_spans():
    """l7probe's request spans (OTel JSON on the event channel) of a client in a CRI-O container carry
    container.id and container.name in their resource, as the container labels of its series."""
    import test_l7 as l7
    with Layouts() as lay:
        port = free_port()
        redis = lay.own(l7.Redis(lay.state, port))
        pid = lay.crio(("python3", "-c", REDIS_PINGER, str(port)))
        probe = probe_entry("l7probe", "-t 1 -p redis -P l7_rpc_metrics,l7_rpc_trace --trace-sample 1000 --pid %d" % pid)
        s = lay.own(Supervisor(probes=[probe], metric_out="logs",
                               extra='event = { out_channel = "logs"; }; %s' % lay.conf())).start()

        def spans():
            out = []
            for j in events(s):
                for rs in j.get("resourceSpans", []):
                    res = {a["key"]: list(a["value"].values())[0] for a in rs["resource"]["attributes"]}
                    if res.get("process.pid") == str(pid):
                        out.append(res)
            return out or None
        got = wait_for(spans, 20, "request spans of the process in the container")
        want = lay.want[pid]
        check(all(r.get("container.id") == want["container_id"] and r.get("container.name") == want["container_name"]
                  for r in got), "span resources %r, want container %s %s" % (got[:2], want["container_id"],
                                                                         want["container_name"]))
        check(redis.proc.pid not in [int(r["process.pid"]) for r in got], "spans of the server, out of the scope")
        print("  %d spans of %d, resource container.id %s..., container.name %s" % (len(got), pid,
                                                                                   want["container_id"][:12],
                                                                                   want["container_name"]))


test_labels_on_request_spans.timeout = 40


def test_flamegraph_query_total_container_layers():
    """stackprobe profiles a busy process of a containerd (Kubernetes) container; the query API's Total
    view puts it under "[Pod]<pod>" and "[Con]<container>" layers (gala-gopher's frame text), a host
    process not."""
    import urllib.parse
    from harness import rest_call
    busy = ("python3", "-c", "while True: pass")
    with Layouts() as lay:
        tmp = lay.own(tempfile.mkdtemp(prefix="gg-ident-flame-"))
        flame = os.path.join(tmp, "flame")
        os.makedirs(flame)
        pid = lay.containerd_k8s()
        # the busy loop replaces the sleeping process of containerd_k8s in the same cgroup
        cg = [d for d, _, _ in os.walk(lay.parent) if "cri-containerd-" in d][0]
        inside = subprocess.Popen(list(busy))
        lay.procs.append(inside)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(inside.pid))
        host = lay.spawn(None, {k: "" for k in IDENT}, busy)
        want = lay.want[pid]
        rport = free_port()
        lay.own(Supervisor(probes=[probe_entry("stackprobe", "-t 1 --store-period 2", switch="off")],
                           extra='rest_api_server = { port = %d; state_dir = "%s/rest"; output_base_dir = "%s"; }; '
                           '%s' % (rport, tmp, tmp, lay.conf()))).start()
        t0 = int(time.time())
        st, _, text, _ = rest_call(rport, "PUT", "/flamegraph", json.dumps({
            "cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_id": [inside.pid, host]},
            "params": {"flame_dir": flame}, "state": "running"}), {"Content-Type": "application/json"})
        check(st == 200, "PUT /flamegraph: %d %s" % (st, text))

        def total():
            args = urllib.parse.urlencode({"app": "Total", "event": "on-cpu", "time_start": t0 - 5,
                                           "time_end": int(time.time()) + 5})
            st, text = http_get("http://127.0.0.1:%d/flamegraph/query?%s" % (rport, args))
            check(st == 200, "query: %d %s" % (st, text[:300]))
            res = json.loads(text)["result"]
            names = {n["profile_location_str"] for n in res}
            return res if "[p] python3" in names and any(n.startswith("[Con]") for n in names) and \
                sum(1 for n in res if n["profile_location_str"] == "[p] python3") == 2 else None
        res = wait_for(total, 30, "both busy processes in the Total view, one under a container")
        by_id = {n["node_id"]: n for n in res}
        pod = [n for n in res if n["profile_location_str"] == "[Pod]%s" % want["pod"]]
        con = [n for n in res if n["profile_location_str"] == "[Con]%s" % want["container_name"]]
        check(len(pod) == 1 and pod[0]["parent_node_id"] == "", "[Pod] under the root: %r" % pod)
        check(len(con) == 1 and con[0]["parent_node_id"] == pod[0]["node_id"], "[Con] under [Pod]: %r" % con)
        parents = sorted(by_id.get(n["parent_node_id"], {"profile_location_str": "root"})["profile_location_str"]
                         for n in res if n["profile_location_str"] == "[p] python3")
        check(sorted(parents) == sorted(["[Con]%s" % want["container_name"], "Total"]),
              "one python3 under the container, the host one under the root: %r" % parents)
        # stackprobe's own folded files (and the SVGs drawn from them) name the pod and the container
        # too: the supervisor passes its identity section to the probe
        st, _, text, _ = rest_call(rport, "PUT", "/flamegraph", json.dumps({"state": "stopped"}),
                                   {"Content-Type": "application/json"})
        check(st == 200, "PUT stopped: %d %s" % (st, text))

        def stacks():
            out = {}
            for path in glob.glob(os.path.join(flame, "oncpu", "*.folded")):
                with open(path) as f:
                    for line in f:
                        out[line.rpartition(" ")[0]] = 1
            return out if any("] python3;" in k for k in out) else None
        st = wait_for(stacks, 15, "folded files written when stackprobe stops")
        mine = [k for k in st if k.split(";")[:3] == ["[Pod]%s" % want["pod"], "[Con]%s" % want["container_name"],
                                                      "[%d] python3" % inside.pid]]
        check(mine, "folded stacks of the container's process under [Pod]<pod>;[Con]<name>: %r" % sorted(st)[:3])
        check(all(k.startswith("[%d] python3;" % host) for k in st if "[%d] python3" % host in k),
              "the host process has no container frames")


test_flamegraph_query_total_container_layers.timeout = 60


def test_container_name_snooper():
    """snoopers.container_name (gala-gopher's): a substring of the container's name, from the runtimes'
    state files through the identity resolver; a matching container that appears later is in the scope
    within about a second; processes outside containers and other containers are not."""
    from harness import rest_call, rest_port, rest_section
    tag = "%05d" % random.randrange(100000)
    with Layouts() as lay:
        def docker_named(name):
            cid = hexid()
            lay.docker_state(cid, name, "nginx:1.25")
            return lay.spawn("system.slice/docker-%s.scope" % cid, {}), cid
        a, a_cid = docker_named("shop-%s-web" % tag)
        other, _ = docker_named("shop-%s-db" % tag)
        crio = lay.crio()  # named "api"
        host = lay.host()
        s = lay.own(Supervisor(extra="%s %s" % (rest_section(os.path.join(lay.state, "rest")), lay.conf()))).start()
        port = rest_port(s)

        def put(conf):
            return rest_put_conf(port, "baseinfo", conf, ok=False)

        def scope():
            st, doc, raw, _ = rest_call(port, "GET", "/baseinfo")
            check(st == 200, "GET /baseinfo: %d %s" % (st, raw[:300]))
            return doc["runtime"].get("scope") or {}

        st, raw = put({"snoopers": {"container_name": ["%s-web" % tag]}, "state": "running"})
        check(st == 200, "PUT: %d %s" % (st, raw))
        sc = wait_for(lambda: scope() if scope().get("pids") == [a] else None, 10, "the web container's process")
        cg = os.path.join(lay.parent, "system.slice/docker-%s.scope" % a_cid)
        check(sc["cgroup_ids"] == [os.stat(cg).st_ino], "its cgroup: %r" % sc)
        check(host not in sc["pids"] and crio not in sc["pids"] and other not in sc["pids"], "only it: %r" % sc)
        # a second container whose name matches, started later: in the scope within about 1 s
        t0 = time.monotonic()
        b, _ = docker_named("shop-%s-web-2" % tag)
        wait_for(lambda: sorted(scope().get("pids", [])) == sorted([a, b]), 5, "the later container")
        seen = time.monotonic() - t0
        check(seen <= 1.5, "later container seen after %.2f s" % seen)
        # both names by their common part; CRI-O's container name from its config.json annotations
        st, raw = put({"snoopers": {"container_name": ["shop-%s" % tag, "api"]}})
        check(st == 200, "PUT: %d %s" % (st, raw))
        want = sorted([a, b, other, crio])
        wait_for(lambda: sorted(scope().get("pids", [])) == want, 10, "every shop container and the CRI-O one")
        # refused: not a list of strings, empty, too long
        for bad in ([1], [""], ["x" * 129], "web"):
            st, raw = put({"snoopers": {"container_name": bad}})
            check(st == 400 and "container_name" in raw, "%r refused: %d %s" % (bad, st, raw))


test_container_name_snooper.timeout = 60


def move(pid, cg):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def test_cgroup_events_without_ttl():
    """identity.watch_cgroups (inotify on the cgroup hierarchies): with refresh intervals of an hour, a
    process moved into a docker container's cgroup made after the start carries the container's labels
    within about a second, and loses them when it is moved out and the cgroup removed. With the watch
    off (the same intervals), the labels do not follow: the events, not the TTL, did it."""
    with Layouts() as lay:
        pid = lay.host()
        for watch in ("on", "off"):
            conf = lay.conf().replace("};", 'proc_refresh_ms = 3600000; names_refresh_s = 86400; '
                                      'watch_cgroups = "%s"; };' % watch)
            s, url = scraped_sup(lay, [pid], conf)

            def labels():
                ser = proc_series(http_get(url)[1], pid)
                return {k: ser[0].get(k) for k in IDENT} if ser else None
            got = wait_for(labels, 20, "the proc series")
            check(got == {k: "" for k in IDENT}, "a host process: %r" % got)
            cid, name, image = hexid(), "ev-%s" % watch, "nginx:1.25"
            lay.docker_state(cid, name, image)
            cg = os.path.join(lay.parent, "system.slice", "docker-%s.scope" % cid)
            os.makedirs(cg)
            want = {"container_id": cid, "container_name": name, "container_image": image, "pod_id": "", "pod": "",
                    "pod_namespace": ""}
            t0 = time.monotonic()
            move(pid, cg)
            if watch == "off":
                time.sleep(4)
                got = labels()
                check(got["container_id"] == "", "watch off, hour-long TTL: still the host's labels: %r" % got)
                move(pid, lay.parent)
                os.rmdir(cg)
                st = s.status()["export"]["identity"]
                check(st["lookups"] > 2 and st["watches"] == 0 and st["cgroup_events"] == 0, "not watching: %r" % st)
                break
            wait_for(lambda: labels() == want, 5, "the container's labels after the move")
            seen = time.monotonic() - t0
            check(seen < 2.5, "labels %.2f s after the move (report period 1 s)" % seen)
            # status.json is written every second
            wait_for(lambda: (lambda x: x["watches"] > 0 and x["cgroup_events"] > 0 and x["containers"] == 1)(
                s.status()["export"]["identity"]), 5, "watches and events in status.json")
            # out of the container, which is then removed: the host's labels again, the cache entry gone
            t0 = time.monotonic()
            move(pid, lay.parent)
            os.rmdir(cg)
            wait_for(lambda: labels() == {k: "" for k in IDENT}, 5, "the host's labels after the removal")
            check(time.monotonic() - t0 < 2.5, "labels dropped %.2f s after the removal" % (time.monotonic() - t0))
            st = wait_for(lambda: (lambda x: x if x["containers"] == 0 else None)(s.status()["export"]["identity"]),
                          5, "the removed container dropped from the cache")
            s.cleanup()


test_cgroup_events_without_ttl.timeout = 90


def prom_families(text, name):
    """Label-name sets of every series of family name."""
    samples, _ = parse_prom(text)
    return [dict(ls) for (n, ls), _ in samples.items() if n == name]


def test_custom_and_pod_labels():
    """snoopers.custom_labels (fixed labels on every series of the probe) and snoopers.pod_labels (the
    pod's label values, read from the sandbox's state: CRI-O's sandbox spec, dockershim's pause
    container) as gala-gopher takes them. Every series of a family has the same label names ("" where a
    process has no pod, or its pod no such label); a new set of labels replaces the old at once."""
    from harness import rest_call, rest_port, rest_section
    with Layouts() as lay:
        crio = lay.crio(pod_labels={"app": "api", "app.kubernetes.io/name": "api-server", "tier": "backend"})
        shim = lay.docker_k8s({"app": "legacy-web", "pod-template-hash": "5d4f8"})
        lay.containerd_metadata()  # containerd keeps pod labels in its database (bbolt) only
        ctd = lay.containerd_k8s(sandbox=CONTAINERD_SANDBOX)
        ctd2 = lay.containerd_k8s()  # a sandbox the database does not have: ""
        host = lay.host()
        pids = [crio, shim, ctd, ctd2, host]
        port = free_port()
        s = lay.own(Supervisor(metric_out="web_server", extra="web_server = { port = %d; }; %s %s" % (
            port, rest_section(os.path.join(lay.state, "rest")), lay.conf()))).start()
        rport = rest_port(s)
        url = "http://127.0.0.1:%d/metrics" % port

        def put(conf):
            return rest_put_conf(rport, "baseinfo", conf, ok=False)

        conf = {"cmd": {"probe": ["proc", "host"]}, "params": {"report_period": 1}, "state": "running",
                "snoopers": {"proc_id": pids, "custom_labels": {"team": "payments", "env": "prod"},
                             "pod_labels": ["app", "app.kubernetes.io/name", "tier"]}}
        st, raw = put(conf)
        check(st == 200, "PUT: %d %s" % (st, raw))

        def all_series():
            text = http_get(url)[1]
            got = {p: proc_series(text, p) for p in pids}
            return (text, got) if all(got.values()) and prom_families(text, "gala_gopher_host_value") else None
        text, got = wait_for(all_series, 20, "proc series of every process and the host series")
        want_pod = {crio: {"app": "api", "app_kubernetes_io_name": "api-server", "tier": "backend"},
                    shim: {"app": "legacy-web", "app_kubernetes_io_name": "", "tier": ""},
                    ctd: {"app": "checkout", "app_kubernetes_io_name": "checkout-api", "tier": ""},
                    ctd2: {"app": "", "app_kubernetes_io_name": "", "tier": ""},
                    host: {"app": "", "app_kubernetes_io_name": "", "tier": ""}}
        for p in pids:
            ser = got[p]
            check(len(ser) == 1, "one series of %d: %r" % (p, ser))
            lbl = ser[0]
            check({k: lbl.get(k) for k in IDENT} == lay.want[p], "identity of %d: %r" % (p, lbl))
            check(lbl.get("team") == "payments" and lbl.get("env") == "prod", "custom labels of %d: %r" % (p, lbl))
            check({k: lbl.get(k) for k in want_pod[p]} == want_pod[p], "pod labels of %d: %r" % (p, lbl))
        # one label set per family: every series of a family has the same label names
        for fam in ("gala_gopher_proc_fd_count", "gala_gopher_host_value"):
            sets = {tuple(sorted(d)) for d in prom_families(text, fam)}
            check(len(sets) == 1, "%s has one label set: %r" % (fam, sets))
        host_ser = prom_families(text, "gala_gopher_host_value")[0]
        check(host_ser.get("team") == "payments" and "app" not in host_ser,
              "a table without tgid: the custom labels, no pod labels: %r" % host_ser)
        # another set of labels: the rows of the old set go at once, no series carries both
        conf["snoopers"]["custom_labels"] = {"team": "billing"}
        conf["snoopers"]["pod_labels"] = ["app"]
        st, raw = put(conf)
        check(st == 200, "PUT: %d %s" % (st, raw))

        def relabelled():
            text = http_get(url)[1]
            fam = prom_families(text, "gala_gopher_proc_fd_count")
            ok = len(fam) == len(pids) and all(d.get("team") == "billing" and "env" not in d and "tier" not in d
                                                for d in fam)
            return text if ok else None
        text = wait_for(relabelled, 10, "the new labels on every series, the old ones gone")
        for fam in ("gala_gopher_proc_fd_count", "gala_gopher_host_value"):
            sets = {tuple(sorted(d)) for d in prom_families(text, fam)}
            check(len(sets) == 1, "%s has one label set after the change: %r" % (fam, sets))
        # GET shows them; refused: bad names, reserved names, too many, pod keys that collide
        st, doc, raw, _ = rest_call(rport, "GET", "/baseinfo")
        check(doc["snoopers"]["custom_labels"] == {"team": "billing"} and doc["snoopers"]["pod_labels"] == ["app"],
              "GET: %s" % raw)
        bad = [{"custom_labels": {"1x": "a"}}, {"custom_labels": {"__x": "a"}}, {"custom_labels": {"a-b": "a"}},
               {"custom_labels": {"pod": "a"}}, {"custom_labels": {"machine_id": "a"}},
               {"custom_labels": {"a": 1}}, {"custom_labels": {"a": "x" * 257}}, {"custom_labels": ["a"]},
               {"custom_labels": {"l%d" % i: "v" for i in range(11)}},
               {"pod_labels": ["-app"]}, {"pod_labels": ["a/b/c"]}, {"pod_labels": ["app", "app"]},
               {"pod_labels": ["a.b", "a_b"]}, {"pod_labels": ["container_name"]},
               {"pod_labels": ["x%d" % i for i in range(11)]}, {"pod_labels": "app"},
               {"custom_labels": {"app": "x"}, "pod_labels": ["app"]}]
        for b in bad:
            st, raw = put({"snoopers": b})
            check(st == 400 and ("custom_labels" in raw or "pod_labels" in raw), "%r refused: %d %s" % (b, st, raw))
        st, raw = put({"blacklist": {"custom_labels": {"a": "b"}}})
        check(st == 400 and "blacklist" in raw, "labels in a blacklist refused: %d %s" % (st, raw))


test_custom_and_pod_labels.timeout = 60
