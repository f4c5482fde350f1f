"""harness.py - starts the real supervisor on a temporary configuration and reads what it reports."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("GG_BUILD", "build"))
GOPHER = os.path.join(BUILD, "gala-gopher")
PROBES = os.path.join(BUILD, "probes")
TEST_BINS = os.path.join(BUILD, "tests")


class TestFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def wait_for(pred, timeout, what, interval=0.05):
    """Poll pred() until it returns a true value; fail naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise TestFailure("timed out after %.1fs waiting for %s (last: %r)" % (timeout, what, last))


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def group_members(pgid):
    """Live (non-zombie) processes of process group pgid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d))
    return out


def probe_entry(name, param="", switch="on", check_cmd=None, params=None):
    e = '    { name = "%s"; param = "%s"; switch = "%s";' % (name, param, switch)
    if check_cmd is not None:
        e += ' check_cmd = "%s";' % check_cmd.replace('"', '\\"')
    if params:
        e += " params = { %s };" % " ".join("%s = %s;" % (k, json.dumps(v)) for k, v in params.items())
    return e + " }"


def extend_entry(name, command, param="", switch="on", check_cmd=None):
    e = '    { name = "%s"; command = "%s"; param = "%s"; switch = "%s";' % (name, command, param, switch)
    if check_cmd is not None:
        e += ' check_cmd = "%s";' % check_cmd.replace('"', '\\"')
    return e + " }"


class Supervisor:
    """A gala-gopher process with its own directories under a temporary root."""

    def __init__(self, probes=(), extend=(), metric_out="logs", extra_meta=(), extra="", probes_dir=PROBES):
        self.dir = tempfile.mkdtemp(prefix="gg-test-")
        self.run_dir = os.path.join(self.dir, "run")
        self.meta_dir = os.path.join(self.dir, "meta")
        self.log_dir = os.path.join(self.dir, "log")
        os.makedirs(self.meta_dir)
        for f in os.listdir(os.path.join(ROOT, "schema")):
            if f.endswith(".meta"):
                shutil.copy(os.path.join(ROOT, "schema", f), self.meta_dir)
        for f in extra_meta:
            shutil.copy(f, self.meta_dir)
        self.conf = os.path.join(self.dir, "gala-gopher.conf")
        with open(self.conf, "w") as f:
            f.write(
                """
global = { log_file_name = "gala-gopher.log"; log_level = "debug"; run_dir = "%s"; meta_path = "%s";
           probes_dir = "%s"; check_interval = 1; check_timeout = 2; stop_grace_ms = 1000; };
metric = { out_channel = "%s"; kafka_topic = "gala_gopher"; };
logs = { metric_dir = "%s/metrics"; event_dir = "%s/event"; meta_dir = "%s/meta"; debug_dir = "%s/debug"; };
%s
probes = (
%s
);
extend_probes = (
%s
);
"""
                % (self.run_dir, self.meta_dir, probes_dir, metric_out, self.log_dir, self.log_dir,
                   self.log_dir, self.log_dir, extra, ",\n".join(probes), ",\n".join(extend))
            )
        self.proc = None

    def start(self, wait=True):
        self.stderr = open(os.path.join(self.dir, "stderr.txt"), "w")
        self.proc = subprocess.Popen([GOPHER, "-c", self.conf], stdout=self.stderr, stderr=self.stderr,
                                     start_new_session=True)
        if wait:
            wait_for(lambda: self.proc.poll() is not None or os.path.exists(self.status_path()), 10,
                     "status.json")
            check(self.proc.poll() is None, "supervisor exited at start: %s" % self.stderr_text())
        return self

    def status_path(self):
        return os.path.join(self.run_dir, "status.json")

    def status(self):
        with open(self.status_path()) as f:
            return json.load(f)

    def probe(self, name):
        for p in self.status()["probes"]:
            if p["name"] == name:
                return p
        raise TestFailure("probe %s not in status" % name)

    def wait_probe(self, name, pred, timeout, what):
        def ok():
            try:
                p = self.probe(name)
            except (json.JSONDecodeError, FileNotFoundError):
                return None
            return p if pred(p) else None
        return wait_for(ok, timeout, "%s: %s" % (name, what))

    def stderr_text(self):
        try:
            with open(os.path.join(self.dir, "stderr.txt")) as f:
                return f.read()[-4000:]
        except FileNotFoundError:
            return ""

    def probe_log(self, name):
        try:
            with open(os.path.join(self.log_dir, "debug", "probes", name + ".log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def sup_log(self):
        try:
            with open(os.path.join(self.log_dir, "debug", "gala-gopher.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def metric_records(self, table=None):
        out = []
        path = os.path.join(self.log_dir, "metrics", "metrics.log")
        try:
            with open(path) as f:
                for line in f:
                    if not line.endswith("\n"):
                        break
                    rec = json.loads(line)
                    if table is None or rec["table_name"] == table:
                        out.append(rec)
        except FileNotFoundError:
            pass
        return out

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise TestFailure("supervisor did not exit within %ds of signal %d" % (timeout, sig))
        return self.proc.returncode if self.proc else None

    def sanitizer_reports(self):
        """ASan/UBSan/LSan reports in the supervisor's stderr or any probe log (sanitizer builds)."""
        found = []
        paths = [os.path.join(self.dir, "stderr.txt")]
        pdir = os.path.join(self.log_dir, "debug", "probes")
        if os.path.isdir(pdir):
            paths += [os.path.join(pdir, f) for f in os.listdir(pdir)]
        for path in paths:
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:
                continue
            for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                i = text.find(marker)
                if i >= 0:
                    found.append("%s: %s" % (os.path.basename(path), text[max(0, i - 200):i + 1500]))
        return found

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        reports = self.sanitizer_reports()
        # Any probe still alive is a test failure elsewhere; do not leave it running.
        try:
            st = self.status()
            for p in st["probes"]:
                if p["pid"] and pid_alive(p["pid"]):
                    os.killpg(p["pid"], signal.SIGKILL)
        except Exception:
            pass
        if os.environ.get("GG_KEEP_TMP") or reports:
            print("kept", self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        if reports:
            raise TestFailure("sanitizer report:\n" + "\n".join(reports))
