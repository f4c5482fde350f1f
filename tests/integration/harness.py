"""harness.py - starts the real supervisor on a temporary configuration and reads what it reports."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
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


def bpf_prog_ids(pid):
    """Ids of the BPF programs process pid holds a descriptor of (a program's or a link's: "prog_id:" in
    its fdinfo); none for pid 0."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(d) if pid and os.path.isdir(d) else []:
        try:
            with open(os.path.join(d, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def proc_cpu_seconds(pid):
    """User + system CPU time a process has used so far, in seconds (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def proc_oncpu_ns(pid):
    """On-CPU ns of every thread of pid (/proc/PID/task/*/schedstat: exact, where /proc/PID/stat counts
    clock ticks, too coarse for short windows)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def proc_status_kb(pid, key="VmRSS"):
    """A memory figure of /proc/PID/status (VmRSS, VmHWM, ...) in kB; 0 where it has none (a zombie)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


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


def _bpffs_mounted():
    try:
        with open("/proc/mounts") as f:
            return any(line.split()[1:3] == ["/sys/fs/bpf", "bpf"] for line in f)
    except OSError:
        return False


def _section_given(extra, name):
    return re.search(r"(^|[\s;}])%s\s*[=:]" % name, extra) is not None


class Supervisor:
    """A gala-gopher process with its own directories under a temporary root. Nothing it uses is
    shared with another supervisor or with an agent installed on the machine: run, log, REST state and
    output directories are under its temporary root, the BPF pin directory is its own directory on
    bpffs, and the web server and REST API listen on free ports (the defaults, 8888 and 9999 and
    /var/lib/gala-gopher, may belong to an agent that ran here before). A test that writes its own
    web_server or rest_api_server section must give the port and (REST) state_dir itself."""

    def __init__(self, probes=(), extend=(), metric_out="logs", extra_meta=(), extra="", probes_dir=PROBES,
                 logs_extra=""):
        web, rest = _section_given(extra, "web_server"), _section_given(extra, "rest_api_server")
        if web:
            check(re.search(r"\bport\s*=", extra.split("web_server", 1)[1].split("}", 1)[0]),
                  "a test's web_server section must set a free port")
        if rest:
            sect = extra.split("rest_api_server", 1)[1].split("}", 1)[0]
            check(re.search(r"\bport\s*=", sect) and "state_dir" in sect,
                  "a test's rest_api_server section must set port and state_dir")
        self.dir = tempfile.mkdtemp(prefix="gg-test-")
        self.run_dir = os.path.join(self.dir, "run")
        self.state_dir = os.path.join(self.dir, "state")
        if not web:
            extra += "\nweb_server = { port = %d; };" % free_port()
        if not rest:
            extra += "\n" + rest_section(self.state_dir, 0, 'output_base_dir = "%s";' % os.path.join(self.dir, "out"))
        # the pin directory must be on bpffs for a probe to pin there: one of our own under /sys/fs/bpf
        self.pin_dir = (tempfile.mkdtemp(prefix="gg-test-", dir="/sys/fs/bpf") if _bpffs_mounted()
                        else os.path.join(self.dir, "pin"))
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
           probes_dir = "%s"; pin_path = "%s"; check_interval = 1; check_timeout = 2; stop_grace_ms = 1000; };
metric = { out_channel = "%s"; kafka_topic = "gala_gopher"; };
logs = { metric_dir = "%s/metrics"; event_dir = "%s/event"; meta_dir = "%s/meta"; debug_dir = "%s/debug"; %s };
%s
probes = (
%s
);
extend_probes = (
%s
);
"""
                % (self.run_dir, self.meta_dir, probes_dir, self.pin_dir, metric_out, self.log_dir, self.log_dir,
                   self.log_dir, self.log_dir, logs_extra, extra, ",\n".join(probes), ",\n".join(extend))
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
        shutil.rmtree(self.pin_dir, ignore_errors=True)
        if reports:
            raise TestFailure("sanitizer report:\n" + "\n".join(reports))


# ---- exporters: HTTP, Prometheus text, Kafka mock broker ------------------------------------------------

def free_port():
    """A TCP port nobody listens on right now (on 127.0.0.1)."""
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def http_get(url, timeout=5, context=None):
    """(status, body text) of a GET; status 0 when the connection failed."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, ConnectionError, OSError):
        return 0, ""


def parse_prom(text):
    """Prometheus text exposition -> ({(name, ((label, value), ...)): float}, {family: type}). Label
    values are unescaped; raises TestFailure on a line it cannot read."""
    samples, types = {}, {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            _, _, fam, typ = line.split(" ", 3)
            types[fam] = typ
            continue
        if line.startswith("#"):
            continue
        i = 0
        while i < len(line) and line[i] not in "{ ":
            i += 1
        name, labels = line[:i], []
        if i < len(line) and line[i] == "{":
            i += 1
            while line[i] != "}":
                eq = line.index("=", i)
                lname = line[i:eq]
                check(line[eq + 1] == '"', "bad label in %r" % line)
                j, val = eq + 2, []
                while line[j] != '"':
                    if line[j] == "\\":
                        val.append({"n": "\n", "\\": "\\", '"': '"'}[line[j + 1]])
                        j += 2
                    else:
                        val.append(line[j])
                        j += 1
                labels.append((lname, "".join(val)))
                i = j + 1
                if line[i] == ",":
                    i += 1
            i += 1
        value = line[i:].strip().split(" ")[0]
        key = (name, tuple(sorted(labels)))
        check(key not in samples, "series twice in one exposition: %r" % (key,))
        samples[key] = float(value.replace("Inf", "inf"))
    return samples, types


def prom_value(samples, name, **labels):
    """The value of the one series of `name` whose labels include `labels`; None when there is none."""
    found = [v for (n, ls), v in samples.items() if n == name and all((k, str(x)) in ls for k, x in labels.items())]
    check(len(found) <= 1, "%d series of %s match %r" % (len(found), name, labels))
    return found[0] if found else None


class KafkaMock:
    """tests/helpers/kafka_mock: librdkafka's mock cluster (a real Kafka-protocol broker) on loopback."""

    def __init__(self, topics=("gala_gopher", "gala_gopher_event", "gala_gopher_metadata"), brokers=1):
        args = [os.path.join(TEST_BINS, "kafka_mock"), "-b", str(brokers)]
        for t in topics:
            args += ["-t", t]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.bootstrap = self.proc.stdout.readline().strip()
        check(":" in self.bootstrap, "kafka_mock printed no bootstrap address")

    def _cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        check(reply == "ok", "kafka_mock %r: %r" % (line, reply))

    def down(self, broker="all"):
        self._cmd("down %s" % broker)

    def up(self, broker="all"):
        self._cmd("up %s" % broker)

    def consume(self, topic, timeout=30):
        """Every message of topic from the beginning (kcat -C -e -J), as a list of payload strings."""
        out = subprocess.run(["kcat", "-b", self.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-J",
                              "-q"], capture_output=True, text=True, timeout=timeout)
        msgs = []
        for line in out.stdout.splitlines():
            if line.strip():
                msgs.append(json.loads(line)["payload"])
        return msgs

    def stop(self):
        stop_with_line(self.proc, "quit")


# ---- processes: servers, clients and probes run by hand --------------------------------------------------

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def json_lines(path):
    """The JSON objects of a file of one a line, whole lines only (a writer may be halfway through the
    last); none when the file is not there yet."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.endswith("\n"):
                    out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def events(sup):
    """The events sup wrote to its events.log (logs channel), whole lines only, oldest first."""
    return json_lines(os.path.join(sup.log_dir, "event", "events.log"))


def start_logged(argv, log, timeout=20, what=None, **popen):
    """A probe run by hand (stdout discarded) that logs into the file log: started and waited for until it
    logs "started:"; SystemExit with its log when it exits or does not start within timeout s."""
    what = what or os.path.basename(argv[0])
    with open(log, "w") as err:
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, **popen)
    deadline = time.monotonic() + timeout
    while True:
        with open(log, errors="replace") as f:
            text = f.read()
        if "started:" in text:
            return p
        if p.poll() is not None or time.monotonic() > deadline:
            if p.poll() is None:
                p.kill()
                p.wait()
            raise SystemExit("%s did not start: %s" % (what, text[-2000:]))
        time.sleep(0.05)


def flood_supervisor(n, records, keys, ipc_queue=None, **kw):
    """A Supervisor (kw: its other arguments) with n flood probes (tests/helpers/bad_probe -m flood: records
    records each over keys distinct keys, as fast as they can) and their table (test_bad.meta);
    ipc_queue: global.ipc_queue in batches."""
    bad = os.path.join(TEST_BINS, "bad_probe")
    probes = ['    { name = "flood%d"; command = "%s"; param = "-m flood -n %d -k %d -l warn"; switch = "on"; }'
              % (i, bad, records, keys) for i in range(n)]
    s = Supervisor(probes=probes, extra_meta=[os.path.join(ROOT, "tests", "schema", "test_bad.meta")], **kw)
    if ipc_queue:
        with open(s.conf) as f:
            conf = f.read()
        with open(s.conf, "w") as f:
            f.write(conf.replace("stop_grace_ms = 1000;", "stop_grace_ms = 1000; ipc_queue = %d;" % ipc_queue, 1))
    return s


def stop_proc(proc, sig=signal.SIGTERM, timeout=10, group=False, kill_group=None):
    """Ask proc (its process group with group) to stop with sig; SIGKILL (to the group with kill_group,
    default group) after timeout seconds. Returns the exit status."""
    if proc.poll() is not None:
        return proc.returncode
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        if group if kill_group is None else kill_group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        return proc.wait()


def stop_with_line(proc, line, timeout=5):
    """A helper that stops when it reads `line` on stdin; killed when it does not within timeout."""
    if proc.poll() is None:
        try:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            proc.wait(timeout)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


def dump_probe_log(sup, probe, tail=3000):
    """The end of probe's log under sup on stderr, for the report of a test that failed (nothing when the
    test failed before it started sup)."""
    if sup:
        print(sup.probe_log(probe)[-tail:], file=sys.stderr)


def teardown(*things):
    """Stops what a test started, in the order given, skipping None: a path is removed, a Popen killed and
    reaped, a function called, anything else stopped by the first of cleanup(), close(), finish(), stop()
    or kill() it has. All are stopped even when one fails; the first failure is raised after."""
    first = None
    for t in things:
        try:
            if t is None:
                continue
            if isinstance(t, str):
                shutil.rmtree(t, ignore_errors=True)
            elif isinstance(t, subprocess.Popen):
                if t.poll() is None:
                    t.kill()
                t.wait()
            elif callable(t):
                t()
            else:
                getattr(t, next(m for m in ("cleanup", "close", "finish", "stop", "kill") if hasattr(t, m)))()
        except Exception as e:  # noqa: BLE001 - stop the rest, then raise it
            first = first or e
    if first:
        raise first


def end_input(proc, timeout=5):
    """Closes the stdin of proc (a helper that exits at the end of its input) and reaps it; killed when it
    has not exited within timeout s."""
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class PidPeer:
    """A helper process (tests/helpers) that prints "pid=<pid> [key=value ...]" once started (self.started),
    works when it reads "go" and exits at the end of its input."""

    def __init__(self, argv, what, spawn=subprocess.Popen, **popen):
        self.proc = spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **popen)
        line = self.proc.stdout.readline()
        check(line.startswith("pid="), "%s did not start: %r" % (what, line))
        self.started = dict(kv.split("=", 1) for kv in line.split())
        self.pid = int(self.started["pid"])

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self):
        end_input(self.proc)


class LinePeer:
    """A helper process that speaks in lines (tests/integration/scripts): it prints {"ready": pid} when set
    up, answers each line it reads with one JSON object, and ends on "bye" (killed when it does not within
    close_timeout s)."""
    close_timeout = 5

    def __init__(self, argv, what="client", **popen):
        self.what = what
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, **popen)
        self.ready = json.loads(self.read_line('{"ready"', "not ready"))
        self.pid = self.ready["ready"]

    def read_line(self, prefix, fault):
        line = self.proc.stdout.readline()
        check(line.startswith(prefix), "%s %s: %r %s" % (
            self.what, fault, line, self.proc.stderr.read() if self.proc.poll() is not None else ""))
        return line

    def ask(self, text="go"):
        """Send one line; the JSON object it answers."""
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return json.loads(self.read_line("{", "failed"))

    def go(self):
        return self.ask("go")

    def close(self):
        stop_with_line(self.proc, "bye", self.close_timeout)


def meta_fields(path):
    """table -> [field names] in meta order, read from a .meta file."""
    tables = {}
    cur = None
    with open(path) as f:
        for line in f:
            m = re.search(r'table_name:\s*"([^"]+)"', line)
            if m:
                cur = tables.setdefault(m.group(1), [])
                continue
            m = re.search(r'name:\s*"([^"]+)"', line)
            if m and cur is not None and "entity_name" not in line:
                cur.append(m.group(1))
    return tables


class StandaloneProbe:
    """A probe run by hand (no supervisor): its stdout records, checked against the fields of its
    tables (fields: table -> [names]), parsed into dicts as they come; on_record may add to each."""

    def __init__(self, binary, args, fields, on_record=None):
        self.name = os.path.basename(binary)
        self.fields = fields
        self.on_record = on_record
        self.err_path = tempfile.mktemp(prefix="gg-%s-" % self.name, suffix=".log")
        self.err = open(self.err_path, "w")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GALA_GOPHER_")}
        self.proc = subprocess.Popen([binary] + args, stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
        self.recs = []
        self.bad = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.rstrip("\n").split("|")
            table = parts[1] if len(parts) > 2 else None
            vals = parts[2:-1]
            with self.lock:
                if table not in self.fields or len(vals) != len(self.fields[table]) or parts[0] or parts[-1]:
                    self.bad.append(line)
                    continue
                rec = dict(zip(self.fields[table], vals))
                rec["table"] = table
                if self.on_record:
                    self.on_record(rec)
                self.recs.append(rec)

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def wait_started(self, timeout=20):
        wait_for(lambda: "started:" in self.stderr() or self.proc.poll() is not None, timeout, self.name + " start")
        check(self.proc.poll() is None, "%s exited at start: %s" % (self.name, self.stderr()[-3000:]))

    def rows(self, table=None, **keys):
        """The records of table (every table: None) whose fields equal keys, oldest first."""
        with self.lock:
            return [r for r in self.recs
                    if (table is None or r["table"] == table) and all(r.get(k) == str(v) for k, v in keys.items())]

    def latest(self, table, tgid=None, **keys):
        if tgid is not None:
            keys["tgid"] = tgid
        found = self.rows(table, **keys)
        return found[-1] if found else None

    def stop(self):
        """SIGTERM, then (returncode, stderr); fails on a sanitizer report."""
        stop_proc(self.proc)
        self.reader.join(timeout=5)
        log = self.stderr()
        self.err.close()
        os.unlink(self.err_path)
        for m in SANITIZER_MARKERS:
            check(m not in log, "sanitizer report from %s:\n%s" % (self.name, log[max(log.find(m) - 200, 0):][:3000]))
        return self.proc.returncode, log


def make_cert(tmp):
    """A self-signed certificate for localhost in tmp: (key path, certificate path)."""
    key, crt = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
                    "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True)
    return key, crt


def nginx_conf(tmp, port, ssl_port=None, keepalive_requests=100000, http2=False):
    """An nginx configuration in tmp (returned: its path) for one worker serving tmp/www/small.html (a
    small file) on 127.0.0.1:port, and on ssl_port over TLS (a self-signed certificate) when given;
    everything nginx writes stays in tmp. HTTP/1.1 with sendfile on, or with http2 HTTP/2 only: h2c
    (prior knowledge) on port, h2 (ALPN) on ssl_port."""
    root = os.path.join(tmp, "www")
    os.makedirs(root)
    os.chmod(tmp, 0o755)  # the worker runs as www-data
    with open(os.path.join(root, "small.html"), "w") as f:
        f.write("<html><body>" + "x" * 600 + "</body></html>\n")
    h2 = " http2" if http2 else ""
    ssl_server = ""
    if ssl_port:
        key, crt = make_cert(tmp)
        ssl_server = "server { listen 127.0.0.1:%d ssl%s; ssl_certificate %s; ssl_certificate_key %s; root %s; }" % (
            ssl_port, h2, crt, key, root)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""
worker_processes 1;
daemon off;
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    %(sendfile)s
    keepalive_requests %(keepalive)d;
    client_body_temp_path %(tmp)s/body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    server { listen 127.0.0.1:%(port)d%(h2)s; root %(root)s; }
    %(ssl)s
}
""" % {"tmp": tmp, "port": port, "root": root, "ssl": ssl_server, "keepalive": keepalive_requests, "h2": h2,
       "sendfile": "http2_max_requests %d;" % keepalive_requests if http2 else "sendfile on;"})
    return conf


def wait_port(port, proc, what, timeout=20):
    """Wait until 127.0.0.1:port accepts a connection; fails at once when proc (its server) has exited."""
    def ok():
        check(proc.poll() is None, "%s exited at start" % what)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False
    wait_for(ok, timeout, "%s on port %d" % (what, port))


def start_nginx(tmp, port, ssl_port=None, keepalive_requests=100000, http2=False, prefix=()):
    """nginx on nginx_conf's configuration (prefix: a command it runs under, e.g. taskset), in its own
    process group, serving: (its master's Popen, its one worker's pid)."""
    conf = nginx_conf(tmp, port, ssl_port, keepalive_requests, http2)
    proc = subprocess.Popen(list(prefix) + ["nginx", "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    wait_port(port, proc, "nginx")

    def workers():
        # the master listens before it forks its worker: the port answers a moment before
        with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
            return [int(x) for x in f.read().split()] or None
    kids = wait_for(workers, 10, "nginx's worker")
    check(len(kids) == 1, "expected one nginx worker, found %r" % kids)
    return proc, kids[0]


def cgroup2_root():
    """Where cgroup v2 is mounted (the first cgroup2 line of /proc/self/mounts), or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if parts[2] == "cgroup2":
                return parts[1]
    return None


def rmdir_retry(path, tries=50):
    """Remove an (empty) directory a process may still be leaving (a cgroup): retried every 0.1 s."""
    for _ in range(tries):
        try:
            os.rmdir(path)
            return True
        except OSError:
            time.sleep(0.1)
    return False


# ---- network namespaces and loop devices (net and io probe tests) --------------------------------------

def _unique_tag():
    return "%x%x" % (os.getpid() & 0xffff, int.from_bytes(os.urandom(2), "little"))


def ns_pids(ns):
    """Pids of the processes inside network namespace ns (empty when it is gone)."""
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()] if r.returncode == 0 else []


class NetnsPair:
    """Two network namespaces with unique names joined by a veth pair: `a` has 10.77.0.1/24, `b`
    10.77.0.2/24 (private to the namespaces). Everything, processes inside included, is removed on
    exit, also when the test fails."""

    ADDR_A = "10.77.0.1"
    ADDR_B = "10.77.0.2"

    def __init__(self):
        tag = _unique_tag()
        self.a = "gga" + tag
        self.b = "ggb" + tag
        self.veth_a = "gva" + tag
        self.veth_b = "gvb" + tag

    def __enter__(self):
        try:
            for ns in (self.a, self.b):
                subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            subprocess.run(["ip", "link", "add", self.veth_a, "netns", self.a, "type", "veth", "peer", "name",
                            self.veth_b, "netns", self.b], check=True, capture_output=True)
            for ns, dev, addr in ((self.a, self.veth_a, self.ADDR_A), (self.b, self.veth_b, self.ADDR_B)):
                for argv in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", addr + "/24", "dev", dev],
                             ["ip", "link", "set", dev, "up"]):
                    subprocess.run(self.cmd(ns, argv), check=True, capture_output=True)
        except subprocess.CalledProcessError as e:
            self.__exit__(None, None, None)
            raise TestFailure("netns setup failed: %s: %s" % (" ".join(e.cmd), e.stderr))
        return self

    def cmd(self, ns, argv):
        return ["ip", "netns", "exec", ns] + list(argv)

    def run(self, ns, argv, timeout=30, check_rc=True):
        r = subprocess.run(self.cmd(ns, argv), capture_output=True, text=True, timeout=timeout)
        if check_rc and r.returncode != 0:
            raise TestFailure("%s failed (%d): %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
        return r.stdout

    def popen(self, ns, argv, **kw):
        """A process in ns; `ip netns exec` execs it, so its pid is the command's own pid."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(self.cmd(ns, argv), **kw)

    def netstat(self, ns):
        """/proc/net/snmp and /proc/net/netstat of ns as {"Tcp": {...}, "TcpExt": {...}, ...}."""
        out = {}
        for f in ("/proc/net/snmp", "/proc/net/netstat"):
            lines = self.run(ns, ["cat", f]).splitlines()
            for head, vals in zip(lines[0::2], lines[1::2]):
                names, values = head.split(), vals.split()
                out.setdefault(names[0].rstrip(":"), {}).update(
                    {n: int(v) for n, v in zip(names[1:], values[1:])})
        return out

    def __exit__(self, *exc):
        for ns in (self.a, self.b):
            for pid in ns_pids(ns):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        return False


class LoopFs:
    """A file-backed loop device (unique backing file) with an ext4 file system mounted on a
    temporary directory; unmounted and detached on exit, also when the test fails."""

    def __init__(self, size_mb=64):
        self.size_mb = size_mb
        self.dir = tempfile.mkdtemp(prefix="gg-loop-")
        self.image = os.path.join(self.dir, "image")
        self.mnt = os.path.join(self.dir, "mnt")
        self.dev = None
        self.mounted = False

    def __enter__(self):
        try:
            with open(self.image, "wb") as f:
                f.truncate(self.size_mb << 20)
            self.dev = subprocess.run(["losetup", "--find", "--show", self.image], check=True, capture_output=True,
                                      text=True).stdout.strip()
            # No lazy initialisation: it would write in the background during the test.
            subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.dev],
                           check=True, capture_output=True)
            os.makedirs(self.mnt)
            subprocess.run(["mount", self.dev, self.mnt], check=True, capture_output=True)
            self.mounted = True
        except (subprocess.CalledProcessError, OSError) as e:
            self.__exit__(None, None, None)
            raise TestFailure("loop device setup failed: %s" % (getattr(e, "stderr", "") or e))
        return self

    def majmin(self):
        st = os.stat(self.dev)
        return os.major(st.st_rdev), os.minor(st.st_rdev)

    def name(self):
        return os.path.basename(self.dev)

    def diskstats(self):
        """This device's /proc/diskstats fields as a dict (sectors are 512 bytes)."""
        names = ["reads", "reads_merged", "read_sectors", "read_ms", "writes", "writes_merged", "write_sectors",
                 "write_ms", "in_flight", "io_ms", "weighted_ms", "discards", "discards_merged",
                 "discard_sectors", "discard_ms", "flushes", "flush_ms"]
        with open("/proc/diskstats") as f:
            for line in f:
                p = line.split()
                if p[2] == self.name():
                    return dict(zip(names, (int(x) for x in p[3:])))
        raise TestFailure("%s not in /proc/diskstats" % self.dev)

    def __exit__(self, *exc):
        if self.mounted:
            subprocess.run(["umount", self.mnt], capture_output=True)
            self.mounted = False
        if self.dev:
            subprocess.run(["losetup", "-d", self.dev], capture_output=True)
            self.dev = None
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


# ---- REST API -------------------------------------------------------------------------------------------

def rest_section(state_dir, port=0, extra=""):
    """A rest_api_server section: port 0 (any free port, read back with rest_port), its own state_dir."""
    return 'rest_api_server = { bind_addr = "127.0.0.1"; port = %d; state_dir = "%s"; %s };' % (
        port, state_dir, extra)


def rest_port(sup, timeout=10):
    """The port the supervisor's REST API listens on (from status.json)."""
    def ok():
        try:
            r = sup.status().get("rest_api_server") or {}
        except (ValueError, FileNotFoundError):
            return None
        return r.get("port") if r.get("listening") else None
    return wait_for(ok, timeout, "REST API listening (status.json rest_api_server.port)")


def start_rest(sup):
    """Starts sup and waits until its REST API listens: (its port, its base URL)."""
    sup.start()
    port = rest_port(sup)
    return port, "http://127.0.0.1:%d" % port


def rest_call(port, method, path, body=None, headers=None, timeout=10):
    """(status, parsed JSON or None, raw text, response headers) of one REST request on a new connection."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {}
        h.update(headers or {})
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        raw = r.read().decode("utf-8", "replace")
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        return r.status, doc, raw, dict(r.getheaders())
    finally:
        conn.close()


def rest_put_conf(port, probe, conf, ok=True):
    """PUT /probe with conf as REST clients send it (json=<conf>, URL-encoded): (status, reply text);
    with ok, anything but 200 fails the test."""
    import urllib.parse
    st, _, raw, _ = rest_call(port, "PUT", "/" + probe, urllib.parse.urlencode({"json": json.dumps(conf)}))
    check(not ok or st == 200, "PUT /%s: %d %s" % (probe, st, raw[:400]))
    return st, raw


def rest_supervisor(tmp, probe, param="-t 1"):
    """A started supervisor with REST (state in tmp/state) whose one probe is off until a PUT starts it."""
    return Supervisor(probes=[probe_entry(probe, param, switch="off")],
                      extra=rest_section(os.path.join(tmp, "state"))).start()


def put_running(sup, rest_name, probe, conf, timeout=20):
    """PUT conf on /<rest_name>, then wait until probe runs with it applied; the probe's status."""
    rest_put_conf(rest_port(sup), rest_name, conf)
    return sup.wait_probe(probe, lambda p: p["config_version_applied"] >= 1 and p["pid"], timeout,
                          "running, configured")


def rest_put(port, name, body):
    """PUT /name with body (a dict) as a raw JSON body: (status, reply text)."""
    status, _, raw, _ = rest_call(port, "PUT", "/" + name, json.dumps(body))
    return status, raw
