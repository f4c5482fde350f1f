"""test_jvm.py - jvmprobe under the supervisor, started with PUT /jvm, against a Java program (Debian's
OpenJDK, compiled here with javac) that starts a known number of threads, loads a known number of classes
and calls System.gc() a known number of times; the absolute values are compared with jstat, which reads
the same perf data file without attaching. A second JVM runs in its own pid and mount namespaces with a
private /tmp: only reachable through /proc/<pid>/root under its namespaced pid."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import ROOT, Supervisor, TestFailure, check, rest_call, rest_port, rest_put_conf, rest_section, wait_for

THREADS, CLASSES, GCS = 6, 25, 3
JAVA_SRC = os.path.join(ROOT, "tests", "integration", "java", "JvmLoad.java")


class JavaProg:
    """JvmLoad compiled in a temporary directory and run (optionally in new pid + mount namespaces with
    a tmpfs on /tmp); killed and removed on exit."""

    def __init__(self, private_tmp=False, preexec_fn=None):
        self.private_tmp = private_tmp
        self.preexec_fn = preexec_fn
        self.dir = None
        self.proc = None

    def __enter__(self):
        for tool in ("java", "javac", "jstat"):
            check(shutil.which(tool), "%s installed (scripts/install-deps.sh)" % tool)
        self.dir = tempfile.mkdtemp(prefix="gg-jvm-")
        os.chmod(self.dir, 0o755)
        shutil.copy(JAVA_SRC, self.dir)
        srcs = ["JvmLoad.java"]
        for name in ["Warm"] + ["Gen%d" % i for i in range(CLASSES)]:
            with open(os.path.join(self.dir, name + ".java"), "w") as f:
                f.write("public class %s { }\n" % name)
            srcs.append(name + ".java")
        subprocess.run(["javac", "-d", "."] + srcs, cwd=self.dir, check=True, capture_output=True, timeout=120)
        java = ["java", "-XX:+UseG1GC", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", ".", "JvmLoad",
                str(THREADS), str(CLASSES), str(GCS)]
        if self.private_tmp:
            # the class directory is bound on /mnt (private to the new mount namespace) before the tmpfs
            # hides the test's /tmp
            argv = ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private", "sh", "-c",
                    'mount --bind "$PWD" /mnt && mount -t tmpfs tmpfs /tmp && cd /mnt && exec "$@"', "sh"] + java
        else:
            argv = java
        self.proc = subprocess.Popen(argv, cwd=self.dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=self.preexec_fn)
        line = self.proc.stdout.readline()
        check(line.strip() == "ready", "JvmLoad ready (got %r, stderr %s)" % (line, self.proc.stderr.read()
                                                                               if not line else ""))
        self.pid = self.java_pid()
        return self

    def java_pid(self):
        """The JVM's host pid: the process itself, or unshare's child (sh exec'ed java)."""
        if not self.private_tmp:
            return self.proc.pid
        def child():
            try:
                with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                    kids = f.read().split()
            except FileNotFoundError:
                return None
            for k in kids:
                try:
                    with open("/proc/%s/comm" % k) as f:
                        if f.read().strip() == "java":
                            return int(k)
                except FileNotFoundError:
                    pass
            return None
        return wait_for(child, 10, "the JVM under unshare")

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        check(line.strip() == "done", "JvmLoad done (got %r)" % line)

    def nspid(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
        raise TestFailure("no NSpid")

    def __exit__(self, *exc):
        if self.proc:
            # SIGTERM: the JVM removes its perf data file as it exits (SIGKILL would leave it in /tmp)
            for p in {self.pid, self.proc.pid} if getattr(self, "pid", None) else {self.proc.pid}:
                try:
                    os.kill(p, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if getattr(self, "pid", None):
                def gone():
                    if os.path.exists("/proc/%d" % self.pid):
                        try:
                            os.kill(self.pid, signal.SIGKILL if time.time() > self.deadline else 0)
                        except ProcessLookupError:
                            pass
                        return False
                    return True
                self.deadline = time.time() + 10
                wait_for(gone, 20, "the JVM gone", interval=0.1)
                if not self.private_tmp:  # left only by a JVM that had to be killed
                    try:
                        os.unlink("/tmp/hsperfdata_root/%d" % self.pid)
                    except FileNotFoundError:
                        pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def jstat(pid, opt):
    """jstat -<opt> <pid> as {column: value} (jstat reads the perf data file; nothing attaches)."""
    out = subprocess.run(["jstat", "-" + opt, str(pid)], capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, "jstat -%s %d: %s" % (opt, pid, out.stderr))
    head, vals = out.stdout.split("\n")[:2]
    return dict(zip(head.split(), (float(v) for v in vals.split())))


class Jvm:
    """The supervisor with the REST API and jvmprobe scoped to some pids."""

    def __init__(self, pids, snoopers=None):
        self.pids = pids
        self.snoopers = snoopers or {"proc_id": pids}
        self.sup = None
        self.state = None

    def __enter__(self):
        self.state = tempfile.mkdtemp(prefix="gg-jvm-state-")
        self.sup = Supervisor(extra=rest_section(self.state)).start()
        port = rest_port(self.sup)
        conf = {"params": {"report_period": 5}, "snoopers": self.snoopers, "state": "running"}
        rest_put_conf(port, "jvm", conf)
        def confirmed():
            st, doc, raw, _ = rest_call(port, "GET", "/jvm")
            return doc if st == 200 and doc and doc.get("runtime", {}).get("config_confirmed") else None
        wait_for(confirmed, 20, "jvmprobe confirms its configuration", interval=0.1)
        return self

    def rows(self, table, after_ms, **keys):
        return [r for r in self.sup.metric_records(table) if r["timestamp"] > after_ms and
                all(str(r.get(k)) == str(v) for k, v in keys.items())]

    def row(self, table, after_ms, what, **keys):
        return wait_for(lambda: (self.rows(table, after_ms, **keys) or [None])[-1], 20, what, interval=0.2)

    def __exit__(self, *exc):
        if exc[0] is not None and self.sup:
            print(self.sup.probe_log("jvmprobe")[-3000:], file=sys.stderr)
        if self.sup:
            self.sup.cleanup()
        shutil.rmtree(self.state, ignore_errors=True)
        return False


def check_jvm(j, prog, private):
    pid = prog.pid
    t0 = time.time() * 1000
    th0 = j.row("jvm_thread", t0, "jvm_thread before", tgid=pid)
    cl0 = j.row("jvm_class", t0, "jvm_class before", tgid=pid)
    gc0 = j.row("jvm_gc", t0, "jvm_gc before", tgid=pid, gc="G1 full collection pauses")
    check(th0["name"] == "JvmLoad", "name label is the main class: %s" % th0)
    info = j.row("jvm_info", t0, "jvm_info", tgid=pid)
    check(info["vendor"] == "Debian" and "OpenJDK" in info["runtime"], "jvm_info: %s" % info)
    check(int(gc0["gc_coll_secs_count"]) == 1, "one full GC before (the warm-up's): %s" % gc0)
    prog.go()
    t1 = time.time() * 1000
    th = j.row("jvm_thread", t1, "jvm_thread after", tgid=pid)
    cl = j.row("jvm_class", t1, "jvm_class after", tgid=pid)
    gc = j.row("jvm_gc", t1, "jvm_gc after", tgid=pid, gc="G1 full collection pauses")
    rt = j.row("jvm_runtime", t1, "jvm_runtime after", tgid=pid)
    heap = j.row("jvm_mem", t1, "jvm_mem heap", tgid=pid, area="heap")
    # the known deltas, exactly
    check(int(th["threads_current"]) - int(th0["threads_current"]) == THREADS,
          "threads_current +%d: %s -> %s" % (THREADS, th0, th))
    check(int(th["threads_daemon"]) - int(th0["threads_daemon"]) == THREADS // 2,
          "threads_daemon +%d: %s -> %s" % (THREADS // 2, th0, th))
    check(int(th["threads_started_total"]) - int(th0["threads_started_total"]) == THREADS,
          "threads_started_total +%d" % THREADS)
    check(int(cl["class_loaded_total"]) - int(cl0["class_loaded_total"]) == CLASSES,
          "class_loaded_total +%d: %s -> %s" % (CLASSES, cl0, cl))
    check(int(gc["gc_coll_secs_count"]) == 1 + GCS, "full collections == 1 + %d System.gc(): %s" % (GCS, gc))
    check(float(gc["gc_coll_secs_sum"]) > 0, "full GC time > 0: %s" % gc)
    check(int(rt["safepoints_total"]) >= GCS, "a safepoint per full GC at least: %s" % rt)
    # scoped by proc_id: no other JVM of the machine (other tests may run some) is reported
    strays = {r["tgid"] for r in j.sup.metric_records("jvm_thread")} - {str(pid)}
    check(not strays, "only the JVM in scope is reported, not %s" % strays)
    # G1's counters pad each size by a word or so (a capacity is never 0): within 64 bytes
    check(0 <= int(heap["mem_bytes_max"]) - (256 << 20) < 64, "heap max == -Xmx256m: %s" % heap)
    # absolute values against jstat (reads the same file; the program is idle now)
    if not private:
        c, g = jstat(pid, "class"), jstat(pid, "gc")
        check(int(c["Loaded"]) == int(cl["class_loaded_total"]) - int(cl["class_unloaded_total"]) ==
              int(cl["class_current_loaded"]), "jstat Loaded %s vs %s" % (c, cl))
        check(int(g["FGC"]) == int(gc["gc_coll_secs_count"]), "jstat FGC %s vs %s" % (g, gc))
        check(abs(g["FGCT"] - float(gc["gc_coll_secs_sum"])) < 0.0015, "jstat FGCT %s vs %s" % (g, gc))
        pool = j.row("jvm_mem_pool", t1, "old pool", tgid=pid, pool="old.space")
        check(abs(g["OU"] * 1024 - int(pool["mem_pool_bytes_used"])) <= 1024, "jstat OU %s vs %s" % (g, pool))


def test_jvm_known_threads_classes_gcs():
    with JavaProg() as prog, Jvm([prog.pid]) as j:
        check_jvm(j, prog, False)


def test_jvm_in_private_pid_and_mount_namespace():
    with JavaProg(private_tmp=True) as prog, Jvm([prog.pid]) as j:
        check(prog.nspid() != prog.pid, "the JVM has its own pid namespace")
        check(not os.path.exists("/tmp/hsperfdata_root/%d" % prog.nspid()) or prog.nspid() == prog.pid,
              "its perf data file is not in the host's /tmp")
        check_jvm(j, prog, True)


def test_jvm_stale_file_of_a_dead_jvm_not_reported():
    """A JVM killed with -9 leaves its perf data file; a new process given its pid must not be reported
    with the dead VM's counters. Here: a copy of a live JVM's file under the pid of a `sleep` started
    after it (same user), in the same hsperfdata directory."""
    sleeper = None
    stale = None
    with JavaProg() as prog:
        src = "/tmp/hsperfdata_root/%d" % prog.pid
        check(os.path.exists(src), "the JVM's perf data file %s" % src)
        time.sleep(3.5)  # the sleeper starts clearly after the VM (the probe allows 2 s of clock slack)
        sleeper = subprocess.Popen(["sleep", "300"])
        try:
            stale = "/tmp/hsperfdata_root/%d" % sleeper.pid
            check(not os.path.exists(stale), "no file for the new pid yet")
            shutil.copyfile(src, stale)
            os.chmod(stale, 0o600)
            with Jvm([prog.pid, sleeper.pid]) as j:
                t0 = time.time() * 1000
                j.row("jvm_thread", t0, "the live JVM", tgid=prog.pid)
                j.row("jvm_thread", time.time() * 1000, "a second report", tgid=prog.pid)
                check(not j.rows("jvm_thread", 0, tgid=sleeper.pid), "the stale file was reported for pid %d" %
                      sleeper.pid)
        finally:
            if stale and os.path.exists(stale):
                os.unlink(stale)
            sleeper.kill()
            sleeper.wait()


def test_jvm_container_id_snooper():
    """snoopers.container_id: the JVM in a docker-like cgroup is reported, one outside it is not."""
    from test_sli import Container
    with Container() as c, JavaProg(preexec_fn=c._join) as inside, JavaProg() as outside:
        with Jvm([], snoopers={"container_id": [c.cid()]}) as j:
            t0 = time.time() * 1000
            j.row("jvm_thread", t0, "the JVM in the container", tgid=inside.pid)
            j.row("jvm_thread", time.time() * 1000, "a second report", tgid=inside.pid)
            tgids = {r["tgid"] for r in j.sup.metric_records("jvm_thread")}
            check(tgids == {str(inside.pid)}, "only the container's JVM (%d, not %d): %s" %
                  (inside.pid, outside.pid, tgids))
