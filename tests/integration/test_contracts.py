"""test_contracts.py - the probe contracts (probes/<bin>/contract.c) and what is derived from them: the
README's tables are current, every built probe has a contract, and --help lists the parameters."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import BUILD, ROOT, PROBES, StandaloneProbe, check

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import readme_tables  # noqa: E402


def test_readme_tables_current():
    out = subprocess.run([os.path.join(BUILD, "tools", "contract_doc")], capture_output=True, text=True,
                         check=True, timeout=10).stdout
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    check(readme_tables.splice(readme, out) == readme, "README.md's contract tables are stale: run `make readme`")
    # it can fail: a README without the current tables is caught
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(readme_tables.splice(readme, out.replace("report period", "reprot period", 1)))
        stale = f.name
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(out)
        tables = f.name
    try:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "readme_tables.py"), "--check", stale,
                            tables], capture_output=True, text=True, timeout=10)
        check(r.returncode == 1 and "stale" in r.stdout, "a stale README is refused: %r" % (r.stdout,))
    finally:
        os.unlink(stale)
        os.unlink(tables)


def test_every_probe_has_a_contract():
    probes = sorted(d for d in os.listdir(os.path.join(ROOT, "probes"))
                    if d != "lib" and os.path.isdir(os.path.join(ROOT, "probes", d)))
    out = subprocess.run([os.path.join(BUILD, "tools", "contract_doc")], capture_output=True, text=True,
                         check=True, timeout=10).stdout
    for p in probes:
        check(os.path.exists(os.path.join(ROOT, "probes", p, "contract.c")), "probes/%s/contract.c" % p)
        check("(`%s`)" % p in out, "%s's contract in the tables" % p)


def test_help_lists_contract_parameters():
    for bin_, params in (("tcpprobe", ["report_period", "drops_thr", "latency_thr", "report_source_port"]),
                         ("system_infos", ["report_period", "dev_name", "proc_top"]),
                         ("stackprobe", ["svg_period", "profile_retention", "mem_alloc"])):
        r = subprocess.run([os.path.join(PROBES, bin_), "--help"], capture_output=True, text=True, timeout=10)
        check(r.returncode == 0, "%s --help" % bin_)
        for p in params:
            check(p in r.stdout, "%s --help names %s" % (bin_, p))


def _contracts():
    """(binary, [every sub-probe], [output dir flags]) of every probe, from the contract tables."""
    out = subprocess.run([os.path.join(BUILD, "tools", "contract_doc")], capture_output=True, text=True,
                         check=True, timeout=10).stdout
    probes = []
    for line in out.splitlines():
        m = re.match(r"#### \S+ \(`([^`]+)`\)", line)
        if m:
            probes.append((m.group(1), [], []))
        elif line.startswith("Sub-probes") and probes:
            probes[-1][1].extend(re.findall(r"`([^`]+)`", line.split("Snoopers:")[0]))
        elif "| output dir |" in line and probes:
            probes[-1][2].extend(re.findall(r"\(`(--[a-z-]+)`\)", line))
    return probes


def test_every_probe_loads_every_sub_probe():
    """Each probe, with every sub-probe its contract names on, gets past loading and attaching its BPF
    programs (the verifier accepts them on this kernel) and logs "started:": the quick check after a BPF
    change (`python3 tests/integration/run.py loads_every`), which a program the verifier refuses fails
    within seconds instead of in the tests that need that probe."""
    probes = _contracts()
    check(len(probes) >= 16, "the contract tables list the probes: %r" % [p[0] for p in probes])
    tmp = tempfile.mkdtemp(prefix="gg-load-")
    try:
        for binary, subs, dirs in probes:
            argv = [os.path.join(PROBES, binary), "-t", "1"]
            if subs:
                argv += ["-P", ",".join(subs)]
            for flag in dirs:
                argv += [flag, os.path.join(tmp, binary + flag)]
            p = StandaloneProbe(argv[0], argv[1:], {})
            try:
                p.wait_started(30)
            finally:
                rc, log = p.stop()
            for bad in ("cannot load the BPF", "failed to load", "BPF program load failed"):
                check(bad not in log, "%s %s: %s" % (binary, " ".join(argv[1:]), log[-3000:]))
            print("%s: started with %s" % (binary, ",".join(subs) or "no sub-probes"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


test_every_probe_loads_every_sub_probe.timeout = 300
