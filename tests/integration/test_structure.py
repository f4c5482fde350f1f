"""test_structure.py - the shape of the code: no include cycle between the project's own files and no
include across the layers (probes/ -> supervisor/, ipc/ -> probes/, ...) (scripts/include_cycles.py),
checked on the tree and shown to catch a cycle and a crossing it is given."""
import os
import subprocess
import sys
import tempfile

from harness import BUILD, ROOT, check

SCRIPT = os.path.join(ROOT, "scripts", "include_cycles.py")


def run(root):
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True, timeout=60)


def write_tree(root, files):
    """files: path under root -> its text."""
    for path, text in files.items():
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


# a.c and b.c call each other without including each other's header (through a shared one)
CALL_CYCLE = {
    "supervisor/common.h": "void a_fn(void);\nvoid b_fn(void);\n",
    "supervisor/a.c": '#include "common.h"\nvoid a_fn(void) { b_fn(); }\n',
    "supervisor/b.c": '#include "common.h"\nvoid b_fn(void) { }\nvoid b_more(void) { a_fn(); }\n',
    "supervisor/c.c": '#include "common.h"\nvoid c_fn(void) { a_fn(); }\n',
}

# a.c -> b.h, b.c -> a.h: a cycle; c.c -> d.h -> (header only) e.h -> and e.c -> c.h: one through a header
# without a .c; f.c -> g.h (header only) -> f.h: no cycle (types only); a probe reaching into the supervisor.
INCLUDE_CYCLES = {
    "supervisor/a.c": '#include "a.h"\n#include "b.h"\n',
    "supervisor/a.h": "",
    "supervisor/b.c": '#include "b.h"\n#include "a.h"\n',
    "supervisor/b.h": "",
    "supervisor/export/c.c": '#include "c.h"\n#include "d.h"\n',
    "supervisor/export/c.h": "",
    "supervisor/export/d.h": '#include "e.h"\n',
    "supervisor/rest/e.c": '#include "e.h"\n#include "c.h"\n',
    "supervisor/rest/e.h": "",
    "probes/lib/f.c": '#include "f.h"\n#include "g.h"\n',
    "probes/lib/f.h": "",
    "probes/lib/g.h": '#include "f.h"\n#include <stdio.h>\n',
    "probes/p/main.c": '#include "../../supervisor/a.h"\n',
}


def test_no_include_cycles():
    r = run(ROOT)
    check(r.returncode == 0, "include cycles between files or across layers:\n" + r.stdout)
    check(" 0 include cycles, 0 layer crossings" in r.stdout, r.stdout)


def test_no_call_cycles():
    """Two files calling each other through a header they share (supervisor.h) show in the objects."""
    objdir = os.path.join(BUILD, "obj")
    check(os.path.isdir(objdir), "no objects in %s: build first" % objdir)
    # l7probe's parser registry (l7_proto.c lists the parsers, the parsers call its helpers) is left to
    # the l7 work: a plug-in table, not two modules that should not know each other.
    r = subprocess.run([sys.executable, SCRIPT, "--objects", objdir, "--allow", "probes/l7probe/", ROOT],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and ", 0 call cycles" in r.stdout, "files calling each other:\n" + r.stdout)


def test_call_cycle_detector_catches_cycles():
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, CALL_CYCLE)
        for m in ("a", "b", "c"):
            os.makedirs(os.path.join(d, "obj", "supervisor"), exist_ok=True)
            subprocess.run(["cc", "-c", os.path.join(d, "supervisor", m + ".c"), "-o",
                            os.path.join(d, "obj", "supervisor", m + ".o")], check=True, timeout=60)
        r = subprocess.run([sys.executable, SCRIPT, "--objects", os.path.join(d, "obj"), d], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 1 and "call cycle: supervisor/a <-> supervisor/b\n" in r.stdout, r.stdout)
        check(", 1 call cycles" in r.stdout, r.stdout)


def test_include_cycle_detector_catches_cycles():
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, INCLUDE_CYCLES)
        r = run(d)
        check(r.returncode == 1, "cycles found: %r" % r.stdout)
        check("include cycle: supervisor/a <-> supervisor/b" in r.stdout, r.stdout)
        check("include cycle: supervisor/export/c <-> supervisor/rest/e" in r.stdout, r.stdout)
        check("probes/lib/f" not in r.stdout and " 2 include cycles, 1 layer crossings" in r.stdout, r.stdout)
        check("layer: probes/p/main.c includes supervisor/a.h" in r.stdout, r.stdout)
