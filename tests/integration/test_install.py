"""test_install.py - `make install DESTDIR=` lays out the expected tree and `make uninstall` takes it back;
the Debian package (`make deb`) installed on this machine with dpkg -i: systemd-analyze verify and
security on its unit, the installed agent run from its installed configuration (free ports, every probe
on) in an emulation of the unit's sandbox (capability bounding set, no_new_privs, read-only /, private
/tmp, its three directories bind-mounted from temporary ones), /metrics from every probe, then dpkg -r
and dpkg -P leave nothing behind. Also the Dockerfile and the Kubernetes manifest."""
import configparser
import fcntl
import filecmp
import glob
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from harness import (BUILD, ROOT, TestFailure, check, free_port, group_members, http_get, parse_prom,
                     prom_value, wait_for)

PKG = "gala-gopher"
PROBE_NAMES = sorted(d for d in os.listdir(os.path.join(ROOT, "probes"))
                     if d != "lib" and os.path.isdir(os.path.join(ROOT, "probes", d)))
META_FILES = sorted(f for f in os.listdir(os.path.join(ROOT, "schema")) if f.endswith(".meta"))
# Probes with nothing to report on a host without their targets (a JVM, a qemu process): up, no records.
TARGET_PROBES = {"jvmprobe", "virtualized_infos", "pg_stat_probe", "trace_haproxy"}  # need a target to report
# Paths the package owns or its scripts create; none may exist before the test, none after purge.
SYSTEM_PATHS = ["/usr/bin/gala-gopher", "/opt/gala-gopher", "/usr/share/doc/gala-gopher", "/etc/gala-gopher",
                "/lib/systemd/system/gala-gopher.service", "/etc/systemd/system/gala-gopher.service",
                "/run/gala-gopher",
                "/etc/systemd/system/multi-user.target.wants/gala-gopher.service",
                "/var/lib/systemd/deb-systemd-helper-enabled/gala-gopher.service.dsh-also",
                "/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/gala-gopher.service",
                "/var/lib/systemd/deb-systemd-helper-masked/gala-gopher.service",
                "/usr/share/gala-gopher", "/usr/share/man/man8/gala-gopher.8.gz",
                "/usr/share/man/man5/gala-gopher.conf.5.gz"]
# Removed by purge (the agent's state and logs). Empty before the test (supervisors of other tests may
# have made /var/lib/gala-gopher as their default state_dir): made again after. Holding files of others:
# shielded from the purge (see purge()).
PURGED_DIRS = ["/var/lib/gala-gopher", "/var/log/gala-gopher"]
# Written (with the test's pid) while the test has the package installed: a run that was killed before
# its clean-up is recognised by the next one, which purges what it left instead of skipping forever.
OWNER = "/run/lock/gala-gopher-test-install.owner"


def make(*args, timeout=600):
    """make in the checkout on the build under test (build/san is built with SAN=1)."""
    rel = os.path.relpath(BUILD, ROOT)
    argv = ["make", "-s", "--no-print-directory", "-j2", "BUILD=" + rel]
    if os.path.basename(rel) == "san":
        argv.append("SAN=1")
    r = subprocess.run(argv + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    check(r.returncode == 0, "make %s: %s" % (" ".join(args), (r.stdout + r.stderr)[-3000:]))
    return r


def version():
    with open(os.path.join(ROOT, "VERSION")) as f:
        return f.read().strip()


def files_under(top):
    out = set()
    for d, _, names in os.walk(top):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


def read_unit(path):
    """The unit's [Service] settings (a setting given twice keeps the last value)."""
    cp = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    cp.optionxform = str
    cp.read(path)
    return cp


def verify_unit(path):
    """systemd-analyze verify: exit 0 and nothing said about this unit (it runs without systemd as PID 1)."""
    r = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True, timeout=60)
    ours = [ln for ln in (r.stdout + r.stderr).splitlines() if "gala-gopher" in ln]
    check(r.returncode == 0 and not ours, "systemd-analyze verify %s (%d): %s" % (path, r.returncode,
                                                                                 (r.stdout + r.stderr)[-2000:]))


def _listdir(rel):
    d = os.path.join(ROOT, rel)
    return os.listdir(d) if os.path.isdir(d) else []


def exposure(path):
    """systemd-analyze security --offline: the unit's overall exposure (0 best .. 10), without systemd
    running. The unit's hardening may not regress past MEDIUM (it is 5.2 with the capabilities a root
    eBPF agent needs)."""
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", path], capture_output=True, text=True,
                       timeout=60)
    m = re.search(r"Overall exposure level for [\w.-]+: ([\d.]+) (\w+)", r.stdout)
    check(m, "systemd-analyze security: %s%s" % (r.stdout[-1500:], r.stderr[-1500:]))
    check(float(m.group(1)) <= 5.5, "unit exposure %s %s (5.4 with the cgroup delegation): %s" % (m.group(1), m.group(2), r.stdout[-3000:]))
    return float(m.group(1))


def test_make_install_tree():
    tmp = tempfile.mkdtemp(prefix="gg-install-")
    try:
        dest = os.path.join(tmp, "root")
        make("install", "DESTDIR=" + dest)
        dashboards = sorted(f for f in _listdir("scripts/deploy/grafana") if f.endswith(".json"))
        rules = sorted(f for f in _listdir("scripts/deploy/prometheus") if f.endswith(".rules.yml"))
        expected = {"usr/bin/gala-gopher", "etc/gala-gopher/gala-gopher.conf", "lib/systemd/system/gala-gopher.service",
                    "usr/share/doc/gala-gopher/README.md", "usr/share/man/man8/gala-gopher.8.gz",
                    "usr/share/man/man5/gala-gopher.conf.5.gz"}
        expected |= {"opt/gala-gopher/probes/" + p for p in PROBE_NAMES}
        expected |= {"opt/gala-gopher/meta/" + m for m in META_FILES}
        expected |= {"usr/share/gala-gopher/grafana/" + d for d in dashboards}
        expected |= {"usr/share/gala-gopher/prometheus/" + r for r in rules}
        check(dashboards and rules, "no dashboards or alerting rules to install")
        got = files_under(dest)
        check(got == expected, "installed tree: missing %s, unexpected %s" % (sorted(expected - got),
                                                                              sorted(got - expected)))
        for p in PROBE_NAMES:
            f = os.path.join(dest, "opt/gala-gopher/probes", p)
            check(filecmp.cmp(f, os.path.join(BUILD, "probes", p), shallow=False), "%s is not the built probe" % f)
            check(stat.S_IMODE(os.stat(f).st_mode) == 0o755, "%s mode" % f)
        check(filecmp.cmp(os.path.join(dest, "usr/bin/gala-gopher"), os.path.join(BUILD, "gala-gopher"), shallow=False),
              "installed supervisor is not the built one")
        conf = os.path.join(dest, "etc/gala-gopher/gala-gopher.conf")
        check(stat.S_IMODE(os.stat(conf).st_mode) == 0o640, "configuration mode")
        with open(conf) as f:
            text = f.read()
        check("../" not in text, "relative path left in the installed configuration")
        for want in ('run_dir = "/run/gala-gopher"', 'meta_path = "/opt/gala-gopher/meta"',
                     'probes_dir = "/opt/gala-gopher/probes"', 'debug_dir = "/var/log/gala-gopher/debug"'):
            check(want in text, "installed configuration lacks %s" % want)

        # The installed configuration is valid against the installed schemas (paths moved into DESTDIR).
        moved = os.path.join(tmp, "moved.conf")
        with open(moved, "w") as f:
            f.write(text.replace('"/opt/gala-gopher/', '"%s/opt/gala-gopher/' % dest))
        r = subprocess.run([os.path.join(dest, "usr/bin/gala-gopher"), "-c", moved, "--check"], capture_output=True,
                           text=True, timeout=30)
        m = re.search(r" (\d+) tables from ", r.stdout)
        check(r.returncode == 0 and m and int(m.group(1)) > 0, "--check of the installed config: %s%s" % (
            r.stdout, r.stderr))

        # The unit names the installed binary and configuration; verified with those paths moved too.
        unit = os.path.join(dest, "lib/systemd/system/gala-gopher.service")
        svc = read_unit(unit)["Service"]
        check(svc["ExecStart"] == "/usr/bin/gala-gopher -c /etc/gala-gopher/gala-gopher.conf", svc["ExecStart"])
        check(svc["LimitMEMLOCK"] == "infinity" and svc["Restart"] == "on-failure" and svc["ProtectSystem"] == "strict",
              "unit hardening settings")
        with open(unit) as f:
            utext = f.read()
        moved_unit = os.path.join(tmp, "gala-gopher.service")
        with open(moved_unit, "w") as f:
            f.write(utext.replace("/usr/bin/gala-gopher", dest + "/usr/bin/gala-gopher"))
        verify_unit(moved_unit)
        print("unit exposure (systemd-analyze security): %.1f" % exposure(moved_unit))

        # Installing again keeps a changed configuration and puts the new one next to it.
        with open(conf, "a") as f:
            f.write("# changed by the administrator\n")
        make("install", "DESTDIR=" + dest)
        with open(conf) as f:
            check(f.read().endswith("# changed by the administrator\n"), "make install overwrote the configuration")
        check(os.path.exists(conf + ".dist"), "no gala-gopher.conf.dist next to the kept configuration")

        # Uninstall removes everything but the changed configuration; without it, nothing is left.
        make("uninstall", "DESTDIR=" + dest)
        check(files_under(dest) == {"etc/gala-gopher/gala-gopher.conf"},
              "after uninstall: %s" % sorted(files_under(dest)))
        os.unlink(conf)
        make("uninstall", "DESTDIR=" + dest)
        check(not os.path.exists(os.path.join(dest, "opt/gala-gopher")), "/opt/gala-gopher left after uninstall")
        make("install", "DESTDIR=" + dest)
        make("uninstall", "DESTDIR=" + dest)
        check(not files_under(dest), "unchanged install + uninstall left %s" % sorted(files_under(dest)))

        # PREFIX moves the supervisor and the unit follows it.
        dest2 = os.path.join(tmp, "root2")
        make("install", "DESTDIR=" + dest2, "PREFIX=/usr/local")
        check(os.access(os.path.join(dest2, "usr/local/bin/gala-gopher"), os.X_OK), "PREFIX=/usr/local: no binary")
        svc = read_unit(os.path.join(dest2, "lib/systemd/system/gala-gopher.service"))["Service"]
        check(svc["ExecStart"].startswith("/usr/local/bin/gala-gopher -c "), "PREFIX=/usr/local: " + svc["ExecStart"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


test_make_install_tree.timeout = 600


# ---- the Debian package on this machine -----------------------------------------------------------

def dpkg_status():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", PKG], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def dpkg(*args, prefix=(), env=None):
    """dpkg (run through `prefix`), retried while another dpkg or apt run on this machine holds the lock."""
    deadline = time.monotonic() + 240
    while True:
        r = subprocess.run(list(prefix) + ["dpkg"] + list(args), capture_output=True, text=True, timeout=240,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive", **(env or {})))
        if r.returncode == 0:
            return r
        if "lock" in r.stderr and time.monotonic() < deadline:
            time.sleep(2)
            continue
        raise TestFailure("dpkg %s (%d): %s" % (" ".join(args), r.returncode, (r.stdout + r.stderr)[-2000:]))


def lib_packages(binary):
    """Debian packages of the shared libraries `binary` links directly (its DT_NEEDED entries, found
    where ldd finds them; dpkg -S on /lib and /usr/lib alike: Debian 12 is merged-/usr)."""
    dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    check(needed, "%s has no DT_NEEDED entries" % binary)
    where = dict(re.findall(r"^\s*(\S+) => (/\S+)", subprocess.run(["ldd", binary], capture_output=True, text=True,
                                                                     check=True).stdout, re.M))
    cands = {}
    for lib in needed:
        check(lib in where, "ldd does not resolve %s of %s" % (lib, binary))
        path = where[lib]
        c = [path, os.path.realpath(path)]
        c += ["/usr" + x for x in c if not x.startswith("/usr/")]
        c += [x[4:] for x in c if x.startswith("/usr/")]
        cands[lib] = c
    # one dpkg -S for all of them: it prints "package:arch: path" for the paths it knows
    out = subprocess.run(["dpkg", "-S"] + sorted({x for c in cands.values() for x in c}), capture_output=True,
                         text=True).stdout
    owner = {}
    for line in out.splitlines():
        pkg, _, path = line.partition(": ")
        owner[path.strip()] = pkg.split(":")[0].split(",")[0].strip()
    pkgs = set()
    for lib, c in cands.items():
        found = [owner[x] for x in c if x in owner]
        check(found, "no package owns %s (linked by %s)" % (where[lib], binary))
        pkgs.add(found[0])
    return pkgs


def agent_config(installed_text, web_port, rest_port):
    """The installed configuration with free ports and every installed native probe switched on; its
    directories stay the installed ones (the test maps them to temporary ones with bind mounts)."""
    t = installed_text
    t = re.sub(r"(web_server\s*=\s*\{[^}]*?port\s*=\s*)\d+", r"\g<1>%d" % web_port, t)
    t = re.sub(r"(rest_api_server\s*=\s*\{[^}]*?port\s*=\s*)\d+", r"\g<1>%d" % rest_port, t)
    check("port = %d" % web_port in t and "port = %d" % rest_port in t, "ports not replaced")
    params = {"stackprobe": "-t 2 -P oncpu"}
    entries = ",\n".join('    { name = "%s"; param = "%s"; switch = "on"; }' % (p, params.get(p, "-t 2"))
                         for p in sorted(os.listdir("/opt/gala-gopher/probes")))
    t, n = re.subn(r"\nprobes\s*=\s*\(.*?\n\);", "\nprobes =\n(\n%s\n);" % entries, t, flags=re.S)
    check(n == 1, "no probes list in the installed configuration")
    return t


# The unit's file system sandbox, as far as it can be had without systemd: a private mount namespace
# in which the directories systemd would create (RuntimeDirectory, StateDirectory, LogsDirectory) are
# bind mounts of temporary ones, /tmp is private (PrivateTmp) and everything else is read-only
# (ProtectSystem=strict, ProtectHome=read-only; /sys, /proc and /dev are separate mounts and stay as
# they are). $1 is the temporary directory (not under /tmp, which gets hidden), the rest the command.
SANDBOX = """set -e
mount --bind "$1/run" /run/gala-gopher
mount --bind "$1/state" /var/lib/gala-gopher
mount --bind "$1/log" /var/log/gala-gopher
mount -t tmpfs -o mode=1777,size=64m gg-private-tmp /tmp
mount -o remount,bind,ro /
shift
exec "$@"
"""
UNIT_DIRS = ["/run/gala-gopher", "/var/lib/gala-gopher", "/var/log/gala-gopher"]


def cap_bounding_set(svc):
    caps = svc["CapabilityBoundingSet"].split()
    check(caps and all(c.startswith("CAP_") for c in caps), "CapabilityBoundingSet: %r" % caps)
    return caps


def run_agent(argv, tmp, web, probes, preexec_fn=None, what="agent"):
    """Runs a supervisor (argv; its configuration writes under tmp and serves /metrics on web) until
    every probe in `probes` is up with accepted records (TARGET_PROBES: up), checks none restarted or had records rejected,
    stops it with SIGTERM (exit 0, no probe left) and fails on sanitizer reports. Returns the metric
    families it exported."""
    errf = open(os.path.join(tmp, "stderr.txt"), "w")
    proc = subprocess.Popen(argv, stdout=errf, stderr=errf, start_new_session=True, preexec_fn=preexec_fn)

    def scrape():
        code, body = http_get("http://127.0.0.1:%d/metrics" % web)
        if code != 200:
            return None
        # The agent's own families only: a probe table's series are checked by their own tests.
        samples, _ = parse_prom("\n".join(ln for ln in body.splitlines()
                                          if ln.startswith(("gala_gopher_probe_", "gala_gopher_build_info"))))
        fams = {ln.split("{")[0].split(" ")[0] for ln in body.splitlines() if ln and not ln.startswith("#")}
        for p in probes:
            if prom_value(samples, "gala_gopher_probe_up", probe=p) != 1:
                return None
            if p not in TARGET_PROBES and not prom_value(samples, "gala_gopher_probe_records_accepted_total",
                                                         probe=p):
                return None
        return samples, fams

    try:
        try:
            samples, fams = wait_for(lambda: proc.poll() is None and scrape(), 60, "every probe up with records")
        except TestFailure:
            with open(os.path.join(tmp, "stderr.txt")) as f:
                err = f.read()[-3000:]
            logs = ""
            for path in sorted(glob.glob(os.path.join(tmp, "log/debug/probes/*.log"))):
                with open(path, errors="replace") as f:
                    logs += "== %s\n%s\n" % (os.path.basename(path), f.read()[-1500:])
            raise TestFailure("%s: %s\n%s" % (what, err, logs))
        for p in probes:
            check(prom_value(samples, "gala_gopher_probe_restarts_total", probe=p) == 0, "%s: %s restarted" % (what, p))
            check(not any(n == "gala_gopher_probe_records_rejected_total" and ("probe", p) in ls and v
                          for (n, ls), v in samples.items()), "%s: %s had records rejected" % (what, p))
        check(prom_value(samples, "gala_gopher_build_info", version=version()) == 1, "%s: build_info" % what)

        proc.send_signal(signal.SIGTERM)
        check(proc.wait(20) == 0, "%s: exit status on SIGTERM: %s" % (what, proc.returncode))
        with open(os.path.join(tmp, "run/status.json")) as f:
            pgids = [p["pid"] for p in json.load(f)["probes"] if p.get("pid")]
        check(not any(group_members(g) for g in pgids), "%s: probes left running after SIGTERM" % what)
        reports = []
        for path in [os.path.join(tmp, "stderr.txt")] + sorted(glob.glob(os.path.join(tmp, "log/debug/probes/*.log"))):
            with open(path, errors="replace") as f:
                text = f.read()
            reports += ["%s: %s" % (os.path.basename(path), text[text.find(m):][:1500])
                        for m in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:") if m in text]
        check(not reports, "%s: sanitizer reports:\n%s" % (what, "\n".join(reports)))
        return fams
    finally:
        errf.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_deb_install_run_remove():
    lockf = open("/run/lock/gala-gopher-test-install.lock", "w")
    wait_for(lambda: _try_lock(lockf), 300, "the install test lock (another run of this test)", interval=1)
    try:
        _purge_leftover_of_killed_run()
        status = dpkg_status()
        present = [p for p in SYSTEM_PATHS if os.path.lexists(p)]
        if status or present:
            print("SKIP test_deb_install_run_remove: gala-gopher is already installed on this machine "
                  "(dpkg: %r, present: %s); not touching it" % (status, present))
            return
        foreign = foreign_files()
        if foreign:
            print("test_install: shielding files of others in %s from the purge" % sorted(foreign))
        empty_before = [(d, stat.S_IMODE(os.stat(d).st_mode)) for d in PURGED_DIRS
                        if os.path.isdir(d) and d not in foreign]
        with open(OWNER, "w") as f:
            f.write("%d\n" % os.getpid())
        try:
            _deb_cycle(foreign)
        finally:
            if dpkg_status():
                try:
                    purge(foreign)
                except TestFailure as e:
                    print("test_install: clean-up purge: %s" % e)
            if not dpkg_status():
                os.unlink(OWNER)
            for d, mode in empty_before:
                os.makedirs(d, exist_ok=True)
                os.chmod(d, mode)
    finally:
        fcntl.flock(lockf, fcntl.LOCK_UN)
        lockf.close()


test_deb_install_run_remove.timeout = 900


# Files someone else keeps in the directories purge removes (another test's flame graphs in
# /var/log/gala-gopher, say): the test does not skip for them, it shields them.
def foreign_files():
    return {d: files_under(d) for d in PURGED_DIRS if os.path.isdir(d) and os.listdir(d)}


def purge(foreign):
    """dpkg -P; when PURGED_DIRS hold files that are not the test's, inside a mount namespace in which
    those directories are empty bind mounts, so that postrm's rm -rf cannot reach the files."""
    if not foreign:
        return dpkg("-P", PKG)
    # A file of ours in each shielded directory must survive (the shield works); others' files are
    # compared from just before the purge, without stackprobe's outputs, which other tests' stackprobes
    # expire and rotate at any moment.
    sentinels = []
    for d in foreign:
        path = os.path.join(d, ".gg-purge-sentinel-%d" % os.getpid())
        with open(path, "w") as f:
            f.write("not the package's\n")
        sentinels.append(path)
    before = {d: {f for f in files_under(d) if not f.startswith(("flamegraph/", "stacktrace/"))} for d in foreign}
    shield = tempfile.mkdtemp(prefix="gg-purge-", dir="/var/tmp")
    # sh -c SCRIPT purge SHIELD dpkg -P gala-gopher: each of $GG_SHIELD_DIRS gets an empty directory of
    # SHIELD mounted over it, then dpkg runs
    script = ('set -e; t=$1; shift; n=0; for d in $GG_SHIELD_DIRS; do n=$((n+1)); mkdir "$t/$n"; '
              'mount --bind "$t/$n" "$d"; done; exec "$@"')
    try:
        dpkg("-P", PKG, prefix=["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "purge", shield],
             env={"GG_SHIELD_DIRS": " ".join(sorted(foreign))})
    finally:
        shutil.rmtree(shield, ignore_errors=True)
    kept = [p for p in sentinels if os.path.exists(p)]
    for p in kept:
        os.unlink(p)
    check(len(kept) == len(sentinels), "purge removed a file of ours in a shielded directory: %s" %
          sorted(set(sentinels) - set(kept)))
    for d, had in before.items():
        lost = sorted(f for f in had - files_under(d) if not f.startswith(".gg-purge-sentinel-"))
        check(not lost, "purge removed files of others in %s: %s" % (d, lost[:10]))


def _purge_leftover_of_killed_run():
    try:
        with open(OWNER) as f:
            pid = int(f.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        return
    if pid and os.path.exists("/proc/%d" % pid):
        return  # still running (the lock should have kept us out)
    print("test_install: purging the package a killed run (pid %d) left installed" % pid)
    if dpkg_status():
        purge(foreign_files())
    os.unlink(OWNER)


def _try_lock(f):
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _deb_cycle(foreign):
    make("deb")
    deb = os.path.join(BUILD, "%s_%s_%s.deb" % (PKG, version(), subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()))
    check(os.path.exists(deb), "make deb made no %s" % deb)
    fields = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"], capture_output=True, text=True,
                            check=True).stdout
    depends = {d.strip().split(" ")[0] for d in re.search(r"^Depends: (.*)$", fields, re.M).group(1).split(",")}
    conffiles = subprocess.run(["dpkg-deb", "-I", deb, "conffiles"], capture_output=True, text=True).stdout.split()
    check(conffiles == ["/etc/gala-gopher/gala-gopher.conf"], "conffiles: %r" % conffiles)

    dpkg("-i", deb)
    check(dpkg_status() == "install ok installed", "after dpkg -i: %r" % dpkg_status())
    owned = set(subprocess.run(["dpkg", "-L", PKG], capture_output=True, text=True, check=True).stdout.split())
    for p in ["/usr/bin/gala-gopher", "/etc/gala-gopher/gala-gopher.conf",
              "/lib/systemd/system/gala-gopher.service", "/usr/share/man/man8/gala-gopher.8.gz",
              "/usr/share/man/man5/gala-gopher.conf.5.gz"] + \
            ["/opt/gala-gopher/probes/" + p for p in PROBE_NAMES] + ["/opt/gala-gopher/meta/" + m for m in META_FILES]:
        check(p in owned and os.path.exists(p), "%s not installed by the package" % p)
    # Every library the installed binaries link comes from a package the control file depends on.
    for b in ["/usr/bin/gala-gopher"] + ["/opt/gala-gopher/probes/" + p for p in PROBE_NAMES]:
        missing = lib_packages(b) - depends
        check(not missing, "%s links libraries of %s, not in Depends (%s)" % (b, sorted(missing), sorted(depends)))
    # postinst enabled the service for the next boot (systemd is not PID 1 here, so nothing started).
    check(os.path.islink("/etc/systemd/system/multi-user.target.wants/gala-gopher.service"), "service not enabled")

    r = subprocess.run(["/usr/bin/gala-gopher", "--version"], capture_output=True, text=True)
    check(r.stdout.strip() == "gala-gopher " + version(), "--version: %r" % r.stdout)
    r = subprocess.run(["/usr/bin/gala-gopher", "--help"], capture_output=True, text=True)
    for opt in ("--config", "--check", "--help", "--version"):
        check(opt in r.stdout, "--help does not list %s" % opt)

    verify_unit("/lib/systemd/system/gala-gopher.service")
    exposure("/lib/systemd/system/gala-gopher.service")
    svc = read_unit("/lib/systemd/system/gala-gopher.service")["Service"]
    caps = cap_bounding_set(svc)

    tmp = tempfile.mkdtemp(prefix="gg-deb-", dir="/var/tmp")
    made = []
    try:
        for d in ("run", "state", "log"):
            os.mkdir(os.path.join(tmp, d), 0o750)
        for d in UNIT_DIRS:
            if not os.path.isdir(d):
                os.makedirs(d, 0o750)
                made.append(d)
        web, rest = free_port(), free_port()
        with open("/etc/gala-gopher/gala-gopher.conf") as f:
            conf_text = agent_config(f.read(), web, rest)
        conf = os.path.join(tmp, "gala-gopher.conf")
        with open(conf, "w") as f:
            f.write(conf_text)
        # The unit's ExecStartPre and ExecStart with this configuration, in the sandbox above, under the
        # unit's capability bounding set, no_new_privs and LimitMEMLOCK (what systemd would apply).
        setpriv = ["setpriv", "--no-new-privs", "--bounding-set",
                   "-all," + ",".join("+" + c[4:].lower() for c in caps), "--inh-caps", "-all"]

        def unit_cmd(key):
            argv = svc[key].split()
            check(argv[:3] == ["/usr/bin/gala-gopher", "-c", "/etc/gala-gopher/gala-gopher.conf"],
                  "%s: %r" % (key, argv))
            return ["unshare", "--mount", "--propagation", "private", "sh", "-c", SANDBOX, "sandbox", tmp] + \
                setpriv + argv[:2] + [conf] + argv[3:]

        def limits():
            # LimitMEMLOCK=infinity; a container without CAP_SYS_RESOURCE (this CI) keeps its limit,
            # which kernels >= 5.11 do not apply to BPF memory anyway.
            try:
                resource.setrlimit(resource.RLIMIT_MEMLOCK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            except (ValueError, OSError):
                pass

        r = subprocess.run(unit_cmd("ExecStartPre"), capture_output=True, text=True, timeout=30, preexec_fn=limits)
        check(r.returncode == 0, "ExecStartPre (--check): %s%s" % (r.stdout, r.stderr))
        fams = run_agent(unit_cmd("ExecStart"), tmp, web, PROBE_NAMES, preexec_fn=limits,
                         what="installed agent in the unit's sandbox")
        for want in ("gala_gopher_cpu_", "gala_gopher_mem_", "gala_gopher_tcp_link_", "gala_gopher_block_",
                     "gala_gopher_proc_", "gala_gopher_endpoint_"):
            check(any(f.startswith(want) for f in fams), "no %s* series on /metrics" % want)
        # stacktrace/ and flamegraph/ are left out: other tests' stackprobes (a REST PUT without svg_dir)
        # write there at the same time; a sandbox that leaked would show in debug/ and status.json too
        ours = re.compile(r"^(debug|metrics|event|meta|rest)/|^(status\.json|children|\w+\.ipc)$")
        for d in UNIT_DIRS:
            wrote = [f for f in files_under(d) - foreign.get(d, set()) if ours.match(f)]
            check(not wrote, "the sandboxed agent wrote into the real %s: %s" % (d, wrote[:10]))

        # Every file the agent wrote under its log directory is one it rotates itself (no logrotate);
        # stackprobe's outputs are bounded by the probe (720 files per directory, store retention), and
        # tprofiling's too (its event file and timeline files within output_max_mb, default 256 MiB).
        rotated = re.compile(r"^(debug/gala-gopher\.log|debug/probes/[\w-]+\.log|metrics/metrics\.log|"
                             r"event/events\.log|meta/metadata\.log)(\.\d+)?$")
        stray = [f for f in files_under(os.path.join(tmp, "log"))
                 if not rotated.match(f) and not f.startswith(("stacktrace/", "flamegraph/", "tprofiling/"))]
        check(not stray, "files under the log directory the agent does not rotate: %s" % stray)
        check(os.path.exists(os.path.join(tmp, "log/debug/gala-gopher.log")), "no supervisor log in LogsDirectory")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in made:
            try:
                os.rmdir(d)
            except OSError:
                pass

    # remove: the programs go, the changed-or-not conffile stays (policy), the unit is masked.
    dpkg("-r", PKG)
    check(dpkg_status() == "deinstall ok config-files", "after dpkg -r: %r" % dpkg_status())
    for p in ["/usr/bin/gala-gopher", "/opt/gala-gopher", "/lib/systemd/system/gala-gopher.service",
              "/usr/share/gala-gopher"]:
        check(not os.path.lexists(p), "%s left after dpkg -r" % p)
    check(os.path.exists("/etc/gala-gopher/gala-gopher.conf"), "dpkg -r removed the conffile")
    # purge: nothing is left, systemd's enable and mask state included.
    purge(foreign)
    check(dpkg_status() == "", "after dpkg -P: %r" % dpkg_status())
    left = [p for p in SYSTEM_PATHS + PURGED_DIRS if os.path.lexists(p) and p not in foreign]
    check(not left, "left after dpkg -P: %s" % left)


# ---- container image recipe and Kubernetes manifest -----------------------------------------------

def _dockerfile_stages(path):
    """[(FROM line, [apt packages installed], [instructions])] of a Dockerfile, continuation lines joined."""
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("FROM "):
            stages.append((line, [], []))
            continue
        check(stages, "instruction before FROM: %s" % line)
        stages[-1][2].append(line)
        m = re.search(r"apt-get install ([^&]*)", line)
        if m:
            stages[-1][1].extend(w for w in m.group(1).split() if not w.startswith("-"))
    return stages


def test_dockerfile_recipe():
    stages = _dockerfile_stages(os.path.join(ROOT, "scripts/deploy/Dockerfile"))
    check(len(stages) == 2, "two stages, got %d" % len(stages))
    (build_from, build_pkgs, build_ins), (run_from, run_pkgs, run_ins) = stages
    check(build_from == "FROM debian:12 AS build" and run_from == "FROM debian:12-slim",
          "%s / %s" % (build_from, run_from))
    # The build stage has the build half of install-deps.sh: compilers, BPF tools, every -dev library.
    with open(os.path.join(ROOT, "scripts/install-deps.sh")) as f:
        deps = f.read()
    wanted = {"make", "gcc", "clang", "llvm", "bpftool", "pkg-config"}
    wanted |= {p for p in re.findall(r"\blib[\w.+-]+-dev\b", deps) if p not in ("libcmocka-dev", "libclang-rt-14-dev")}
    check(wanted <= set(build_pkgs), "build stage lacks %s" % sorted(wanted - set(build_pkgs)))
    for ins in build_ins:
        if ins.startswith("COPY "):
            for src in ins.split()[1:-1]:
                check(os.path.exists(os.path.join(ROOT, src)), "COPY of a missing %s" % src)
    make_ins = [i for i in build_ins if i.startswith("RUN make") and "install DESTDIR=/out" in i]
    check(len(make_ins) == 1, "build stage does not make install")
    # The build stage's make has every file it needs: a dry run in a tree of exactly what it copies.
    tmp = tempfile.mkdtemp(prefix="gg-docker-")
    try:
        for ins in build_ins:
            if ins.startswith("COPY "):
                srcs, dst = ins.split()[1:-1], ins.split()[-1]
                for src in srcs:
                    to = os.path.join(tmp, src if dst in ("./", ".") else dst)
                    if os.path.isdir(os.path.join(ROOT, src)):
                        shutil.copytree(os.path.join(ROOT, src), to)
                    else:
                        shutil.copy(os.path.join(ROOT, src), to)
        argv = make_ins[0].split()[1:]
        argv = ["make", "-n"] + [a for a in argv if a != "make" and not a.startswith("-j")]
        r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "the Dockerfile's %s in a tree of what it copies: %s"
              % (" ".join(argv), r.stderr[-2000:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # The run stage has every library the binaries link, and no compiler or -dev package.
    need = set()
    for b in [os.path.join(BUILD, "gala-gopher")] + [os.path.join(BUILD, "probes", p) for p in PROBE_NAMES]:
        need |= lib_packages(b)
    need = {p for p in need if not p.startswith(("libasan", "libubsan"))}  # sanitizer builds
    check(need <= set(run_pkgs), "run stage lacks %s" % sorted(need - set(run_pkgs)))
    check(not [p for p in run_pkgs if p.endswith("-dev") or p in ("gcc", "clang", "make")],
          "build tools in the run stage")
    copies = [i.split()[1:] for i in run_ins if i.startswith("COPY --from=build")]
    check(sorted(c[1] for c in copies) == ["/out/etc/gala-gopher", "/out/opt/gala-gopher", "/out/usr/bin/gala-gopher"],
          "run stage copies %r" % copies)
    # Every package name is one Debian 12 has (this machine's apt lists are Debian 12's).
    known = set(re.findall(r"^Package: (\S+)$", subprocess.run(
        ["apt-cache", "show", "--no-all-versions"] + sorted(set(build_pkgs + run_pkgs)), capture_output=True,
        text=True).stdout, re.M))
    unknown = sorted(set(build_pkgs + run_pkgs) - known)
    check(not unknown, "packages apt does not know: %s" % unknown)
    entry = [i for i in run_ins if i.startswith(("ENTRYPOINT", "CMD"))]
    check(entry == ['ENTRYPOINT ["/usr/bin/gala-gopher"]', 'CMD ["-c", "/etc/gala-gopher/gala-gopher.conf"]'],
          "%r" % entry)


def _under(path, mounts):
    """The volumeMount whose mountPath holds path (the deepest)."""
    best = None
    for m in mounts:
        mp = m["mountPath"].rstrip("/")
        if (path == mp or path.startswith(mp + "/")) and (best is None or len(mp) > len(best["mountPath"])):
            best = m
    return best


def test_kubernetes_manifest():
    import yaml
    with open(os.path.join(ROOT, "scripts/deploy/kubernetes/gala-gopher.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    by_kind = {d["kind"]: d for d in docs}
    check(sorted(by_kind) == ["ConfigMap", "DaemonSet", "Namespace", "ServiceAccount"] and len(docs) == 4,
          "kinds: %r" % [d["kind"] for d in docs])
    api = {"Namespace": "v1", "ServiceAccount": "v1", "ConfigMap": "v1", "DaemonSet": "apps/v1"}
    ns = by_kind["Namespace"]["metadata"]["name"]
    for d in docs:
        check(d["apiVersion"] == api[d["kind"]], "%s apiVersion %s" % (d["kind"], d["apiVersion"]))
        check(d["metadata"].get("name"), "%s has no name" % d["kind"])
        if d["kind"] != "Namespace":
            check(d["metadata"].get("namespace") == ns, "%s not in namespace %s" % (d["kind"], ns))

    ds = by_kind["DaemonSet"]
    spec, tmpl = ds["spec"], ds["spec"]["template"]
    check(spec["selector"]["matchLabels"].items() <= tmpl["metadata"]["labels"].items(), "selector does not match")
    pod = tmpl["spec"]
    check(pod["hostPID"] is True and pod["hostNetwork"] is True, "hostPID and hostNetwork")
    check(pod["serviceAccountName"] == by_kind["ServiceAccount"]["metadata"]["name"], "service account")
    check(pod["dnsPolicy"] == "ClusterFirstWithHostNet", "dnsPolicy with hostNetwork")
    (ctr,) = pod["containers"]
    check(ctr["image"].rsplit(":", 1)[1] == version(), "image tag %s is not VERSION %s" % (ctr["image"], version()))
    sc = ctr["securityContext"]
    check(sc.get("privileged") is True and sc.get("readOnlyRootFilesystem") is True, "securityContext %r" % sc)
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = ctr["volumeMounts"]
    check(len(vols) == len(pod["volumes"]), "duplicate volume names")
    for m in mounts:
        check(m["name"] in vols, "volumeMount %s has no volume" % m["name"])
    by_path = {m["mountPath"]: m for m in mounts}
    host = {m["mountPath"]: vols[m["name"]].get("hostPath", {}).get("path") for m in mounts}
    for path in ("/sys", "/sys/fs/bpf", "/sys/kernel/tracing", "/sys/kernel/debug", "/etc/machine-id",
                 "/var/lib/gala-gopher", "/var/log/gala-gopher", "/run/containerd"):
        check(host.get(path) == path, "%s is not the host's %s" % (path, host.get(path)))
    for path in ("/etc/machine-id", "/run/containerd", "/run/crio", "/var/lib/docker/containers", "/etc/gala-gopher"):
        check(by_path[path].get("readOnly") is True, "%s is not read-only" % path)

    # The configuration: the ConfigMap's file is the one the container is told to read, it passes the
    # supervisor's --check, and every directory the agent writes is a writable volume (read-only root).
    cm = by_kind["ConfigMap"]
    cfg_vol = [v for v in pod["volumes"] if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
    check(len(cfg_vol) == 1, "no volume of the ConfigMap")
    cfg_mount = [m for m in mounts if m["name"] == cfg_vol[0]["name"]][0]["mountPath"]
    check(ctr["args"] == ["-c", cfg_mount + "/gala-gopher.conf"] and "gala-gopher.conf" in cm["data"],
          "args %r" % ctr["args"])
    text = cm["data"]["gala-gopher.conf"]
    tmp = tempfile.mkdtemp(prefix="gg-k8s-")
    pins = []
    try:
        conf = os.path.join(tmp, "gala-gopher.conf")
        with open(conf, "w") as f:
            f.write(text.replace('"/opt/gala-gopher/meta"', '"%s/schema"' % ROOT)
                    .replace('"/opt/gala-gopher/probes"', '"%s/probes"' % BUILD))
        r = subprocess.run([os.path.join(BUILD, "gala-gopher"), "-c", conf, "--check"], capture_output=True, text=True,
                           timeout=30)
        check(r.returncode == 0 and not r.stderr.strip(),
              "--check of the ConfigMap's configuration: %s%s" % (r.stdout, r.stderr))
        # and it runs: every probe it switches on starts with its flags and sends records (ports and
        # directories moved under tmp, the web server on loopback: this test must not listen outside).
        web, rest = free_port(), free_port()
        run = text.replace('"/opt/gala-gopher/meta"', '"%s/schema"' % ROOT).replace(
            '"/opt/gala-gopher/probes"', '"%s/probes"' % BUILD).replace('"/run/gala-gopher"', '"%s/run"' % tmp).replace(
            '"/var/log/gala-gopher', '"%s/log' % tmp).replace('"/var/lib/gala-gopher"', '"%s/state"' % tmp)
        run = re.sub(r'(web_server\s*=\s*\{)[^}]*\}', r'\1 bind_addr = "127.0.0.1"; port = %d; }' % web, run)
        run = re.sub(r"(rest_api_server\s*=\s*\{[^}]*?port\s*=\s*)\d+", r"\g<1>%d" % rest, run)
        # a pin directory of its own, on bpffs when there is one (probes may pin shared maps there)
        pin = tempfile.mkdtemp(prefix="gg-k8s-", dir="/sys/fs/bpf" if os.path.ismount("/sys/fs/bpf") else tmp)
        pins.append(pin)
        run = run.replace('"/sys/fs/bpf/gala-gopher"', '"%s"' % pin)
        check("/var/" not in run and '"/run' not in run and "/sys/fs/bpf/gala-gopher" not in run,
              "a system path left in the test copy")
        with open(conf, "w") as f:
            f.write(run)
        on = re.findall(r'name\s*=\s*"(\w+)";[^}]*switch\s*=\s*"on"', text.split("probes =", 1)[1])
        check(len(on) >= 5, "probes switched on in the ConfigMap: %r" % on)
        run_agent([os.path.join(BUILD, "gala-gopher"), "-c", conf], tmp, web, on, what="the ConfigMap's configuration")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for pin in pins:
            shutil.rmtree(pin, ignore_errors=True)
    dirs = re.findall(r'\b(run_dir|metric_dir|event_dir|meta_dir|debug_dir|state_dir|output_base_dir)'
                      r'\s*=\s*"([^"]+)"', text)
    check(len(dirs) == 7, "directories in the ConfigMap's configuration: %r" % dirs)
    for key, d in dirs:
        m = _under(d, mounts)
        check(m and not m.get("readOnly") and not m["mountPath"] == "/", "%s %s is not on a writable volume" % (key, d))
    for p in re.findall(r'name\s*=\s*"(\w+)"', text.split("probes =", 1)[1]):
        check(p in PROBE_NAMES, "ConfigMap names probe %s, which is not built" % p)
    port = int(re.search(r"web_server\s*=\s*\{[^}]*port\s*=\s*(\d+)", text).group(1))
    check('bind_addr = "0.0.0.0"' in re.search(r"web_server\s*=\s*\{[^}]*\}", text).group(0),
          "metrics not on the node's addresses")
    check(re.search(r'rest_api_server\s*=\s*\{[^}]*bind_addr = "127\.0\.0\.1"', text), "REST API must stay on loopback")
    check(ctr["ports"][0]["containerPort"] == port and
          tmpl["metadata"]["annotations"]["prometheus.io/port"] == str(port) and
          ctr["readinessProbe"]["httpGet"]["port"] == port, "metrics port differs between config, pod and probes")
