"""test_contracts.py - the probe contracts (probes/<bin>/contract.c) and what is derived from them: the
README's tables are current, every built probe has a contract, and --help lists the parameters."""
import os
import subprocess
import sys
import tempfile

from harness import BUILD, ROOT, PROBES, check

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
