"""test_stackprobe_unwind.py - stackprobe's .eh_frame unwinding of user stacks without frame pointers:
a program compiled here with -fomit-frame-pointer shows its whole call chain (main -> a -> b -> leaf,
down from _start), which frame pointers alone do not give; Debian's perl and python3 (built without
frame pointers) come out with under 5 % [unknown] frames; the tables are shared per ELF file."""
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import ROOT, check, wait_for
from test_stackprobe import Standalone

# main -> a -> b -> leaf; each caller uses the callee's result afterwards, so no call is a tail call
PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
volatile unsigned long sink;
static double cpu_s(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) unsigned long leaf(unsigned long x) {
    for (unsigned i = 0; i < 200000; i++) x = x * 6364136223846793005ul + i;
    return x;
}
__attribute__((noinline)) void nap(void) { usleep(2000); sink++; }
__attribute__((noinline)) unsigned long b(unsigned long x) {
    unsigned long r = leaf(x ^ 7);
    static unsigned calls;
    if (++calls % 8 == 0) nap();
    sink = r; return r + x;
}
__attribute__((noinline)) unsigned long a(unsigned long x) { unsigned long r = b(x + 3); sink = r; return r * 3; }
int main(int argc, char **argv) {
    char line[8];
    double until = argc > 1 ? atof(argv[1]) : 2.0, t0;
    unsigned long x = 1;
    printf("ready\n"); fflush(stdout);
    if (!fgets(line, sizeof(line), stdin)) return 1;
    t0 = cpu_s();
    while (cpu_s() - t0 < until) x = a(x);
    printf("done %lu\n", x); fflush(stdout);
    if (!fgets(line, sizeof(line), stdin)) return 0;
    return 0;
}
"""

PERL = "sub f { my $s = 0; $s += $_ * $_ for 1..1000; return $s } my $t = times; while ((times)[0] - $t < %s) { f() } sleep 1000"
PYTHON = ("import time, json\ndef f(n): return sorted(str(i * i) for i in range(n))\nt = time.process_time()\n"
          "while time.process_time() - t < %s: f(300); json.dumps({'a': list(range(100))})\ntime.sleep(1000)")


def health_fields():
    """Field names of stackprobe_health in record order (the .meta file)."""
    text = open(os.path.join(ROOT, "schema", "stackprobe.meta")).read()
    block = text[text.index('table_name: "stackprobe_health"') + 10:]
    if "table_name:" in block:
        block = block[:block.index("table_name:")]
    return re.findall(r'\bname: "([a-z_0-9]+)"', block)[1:]  # [0] is the entity name


def last_health(out):
    names = health_fields()
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("|stackprobe_health|")]
    check(rows, "no stackprobe_health record")
    return dict(zip(names, rows[-1][2:]))  # [0] the table, [1] the probe key


class Probe(Standalone):
    def __init__(self, tmp, tag, args):
        self.flame = os.path.join(tmp, "flame-" + tag)
        super().__init__(tmp, ["-t", "1", "--svg-period", "600", "--flame-dir", self.flame, "--svg-dir",
                               os.path.join(tmp, "svg-" + tag)] + args, tag=tag, timeout=60)

    def folded(self, pid, event="oncpu"):
        """[(user frames outermost first, value)] of pid's stacks (kernel frames left out)."""
        out = []
        d = os.path.join(self.flame, event)
        for name in os.listdir(d) if os.path.isdir(d) else []:
            if not name.endswith(".folded"):
                continue
            for line in open(os.path.join(d, name)):
                stack, _, v = line.rstrip("\n").rpartition(" ")
                frames = stack.split(";")
                if frames[0].startswith("[%d] " % pid):
                    out.append(([f for f in frames[1:] if not f.endswith("_[k]")], int(v)))
        return out


def run_workload(tmp, dwarf, cpu_s):
    """The omit-frame-pointer program under stackprobe (--dwarf-unwind dwarf): its stacks."""
    prog = os.path.join(tmp, "chain")
    w = subprocess.Popen([prog, str(cpu_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(w.stdout.readline().strip() == "ready", "workload did not start")
        p = Probe(tmp, "chain%d" % dwarf, ["-P", "oncpu,offcpu", "--min-block-us", "500", "--pid", str(w.pid),
                                           "--dwarf-unwind", str(dwarf)])
        w.stdin.write("go\n")
        w.stdin.flush()
        line = w.stdout.readline()
        check(line.startswith("done"), "workload: %r" % line)
        out = p.stop()  # the last drain while the workload is still there
        return p.folded(w.pid), p.folded(w.pid, "offcpu"), out
    finally:
        w.kill()
        w.wait()


def chain_share(stacks):
    """Share of the samples in leaf whose stack is the whole chain _start .. main;a;b;leaf."""
    total = sum(v for fr, v in stacks if fr and fr[-1] == "leaf")
    whole = sum(v for fr, v in stacks if fr[-4:] == ["main", "a", "b", "leaf"] and fr[0] == "_start")
    return (whole / total if total else 0.0), total


def test_unwind_omit_frame_pointer_chain():
    """-fomit-frame-pointer: with .eh_frame unwinding the chain is complete in at least 95 % of the
    samples in leaf; with frame pointers only (the control) it is not (b and a are lost)."""
    tmp = tempfile.mkdtemp(prefix="gg-unwind-")
    try:
        with open(os.path.join(tmp, "chain.c"), "w") as f:
            f.write(PROG)
        subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables",
                        "-fno-optimize-sibling-calls", "-fno-inline", "-o", os.path.join(tmp, "chain"),
                        os.path.join(tmp, "chain.c")], check=True)
        stacks, off, out = run_workload(tmp, 1, 2.0)
        share, total = chain_share(stacks)
        # off-CPU: the switch-out in usleep (libc, no frame pointers) called from nap, from b
        off_total = sum(v for fr, v in off if "nap" in fr)
        off_whole = sum(v for fr, v in off if "nap" in fr and fr[0] == "_start" and
                        fr[fr.index("nap") - 3:fr.index("nap")] == ["main", "a", "b"])
        print("off-CPU: %d us in nap, %.1f%% with the whole chain" % (off_total, 100.0 * off_whole / max(off_total, 1)))
        check(off_total > 0 and off_whole >= 0.9 * off_total, "off-CPU chain: %r" % off[:5])
        h = last_health(out)
        print("eh_frame: chain complete in %.1f%% of %d samples in leaf; health %s" % (
            100 * share, total, {k: v for k, v in h.items() if k.startswith("unwind")}))
        check(total >= 50, "too few samples in leaf: %d" % total)
        check(share >= 0.95, "complete chain in %.1f%% of samples: %r" % (100 * share, stacks[:5]))
        check(int(h["unwind_stacks"]) > 0 and int(h["unwind_procs"]) >= 1 and int(h["unwind_files"]) >= 2,
              "health: %r" % h)
        check(int(h["unwind_errors"]) == 0 and int(h["unwind_lost"]) == 0, "health: %r" % h)
        # nothing was mapped after the tables were built (the control of test_unwind_dlopen_counted)
        check(int(h["unwind_stale"]) == 0, "health: %r" % h)
        stacks, _, out = run_workload(tmp, 0, 1.0)
        share, total = chain_share(stacks)
        print("frame pointers only: chain complete in %.1f%% of %d samples in leaf" % (100 * share, total))
        check(total >= 20, "too few samples in leaf: %d" % total)
        check(share < 0.5, "frame pointers alone found the chain in %.1f%%: the control is void" % (100 * share))
        check(int(last_health(out)["unwind_stacks"]) == 0, "--dwarf-unwind 0 still unwound")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


test_unwind_omit_frame_pointer_chain.timeout = 180


# python3 computes for 1 s of CPU in pure Python (its tables are built meanwhile), then imports decimal
# (dlopen of _decimal.so, after the tables) and computes with it for 1.5 s of CPU
DLOPEN = ("import os, sys, time\nwhile not os.path.exists(%r): time.sleep(0.02)\nt = time.process_time()\n"
          "while time.process_time() - t < 1.0: sorted(str(i * i) for i in range(300))\n"
          "from decimal import Decimal, getcontext\ngetcontext().prec = 60\nt = time.process_time()\n"
          "while time.process_time() - t < 1.5: sum(Decimal(i).sqrt() for i in range(1, 200))\n"
          "print('done', flush=True)\ntime.sleep(1000)")


def test_unwind_dlopen_counted():
    """A library mapped after the process's tables were built (python3's `import decimal`): the stacks
    through it are counted in unwind_stale (they may stop at its frames until the tables are rebuilt),
    and once rebuilt the tables hold the library (its frames under python3's are complete again)."""
    tmp = tempfile.mkdtemp(prefix="gg-unwind-")
    w = None
    try:
        go = os.path.join(tmp, "go")
        w = subprocess.Popen(["python3", "-c", DLOPEN % go], stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        check(not any("_decimal" in f for f in exec_files(w.pid)), "_decimal mapped before the start")
        probe = Probe(tmp, "dlopen", ["--pid", str(w.pid)])
        open(go, "w").close()
        line = w.stdout.readline()
        check(line.startswith("done"), "workload: %r" % line)
        out = probe.stop()
        h = last_health(out)
        stacks = probe.folded(w.pid)
        dec = [(fr, v) for fr, v in stacks if any("_decimal" in f or "mpd_" in f or "dec_" in f for f in fr)]
        dec_n = sum(v for fr, v in dec)
        dec_complete = sum(v for fr, v in dec if fr[0] == "_start")
        print("unwind_stale %s; %d samples in _decimal, %.1f%% complete" % (
            h["unwind_stale"], dec_n, 100.0 * dec_complete / max(dec_n, 1)))
        check(int(h["unwind_stale"]) > 0, "a library mapped after the tables was not counted: %r" % h)
        check(dec_n >= 30, "too few samples in _decimal: %d of %r" % (dec_n, stacks[:3]))
        check(dec_complete >= 0.5 * dec_n, "the rebuilt tables do not hold _decimal: %d of %d complete" % (
            dec_complete, dec_n))
    finally:
        if w and w.poll() is None:
            w.kill()
            w.wait()
        shutil.rmtree(tmp, ignore_errors=True)


test_unwind_dlopen_counted.timeout = 120


def exec_files(pid):
    files = set()
    for line in open("/proc/%d/maps" % pid):
        parts = line.split()
        if len(parts) >= 6 and "x" in parts[1] and parts[5].startswith("/"):
            files.add(parts[5])
    return files


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_unwind_debian_interpreters():
    """perl (twice) and python3 from Debian, CPU-bound scripts: under 5 % [unknown] user frames and at
    least 90 % complete stacks (down to _start) each; the rows of a file mapped by both perls are loaded
    once (unwind_files is at most the number of distinct files)."""
    tmp = tempfile.mkdtemp(prefix="gg-unwind-")
    procs = []
    try:
        go = os.path.join(tmp, "go")
        # each waits for the go file, so that the probe is running before they burn CPU
        wait = "while (! -e '%s') { select(undef, undef, undef, 0.02) } " % go
        procs = [subprocess.Popen(["perl", "-e", wait + PERL % 2.0]) for _ in range(2)]
        # python3 imports json (dlopen of _json.so) before the probe starts: stacks through a module mapped
        # after the start stop at its frames until the probe has loaded its tables (5-11 % of this run's
        # samples), which is the refresh's lag, not what this test measures
        procs.append(subprocess.Popen(["python3", "-c", "import os, time, json\nwhile not os.path.exists(%r): "
                                       "time.sleep(0.02)\n" % go + PYTHON % 2.0]))
        time.sleep(0.3)  # mapped their libraries
        args = []
        for p in procs:
            args += ["--pid", str(p.pid)]
        probe = Probe(tmp, "interp", args)
        open(go, "w").close()
        # each sleeps when done, so that its maps are still there for the last drain
        wait_for(lambda: all(cpu_s(p.pid) >= 1.95 for p in procs), 90, "the scripts' CPU time")
        files = set()
        for p in procs:
            files |= exec_files(p.pid)
        per_proc = sum(len(exec_files(p.pid)) for p in procs)
        out = probe.stop()
        h = last_health(out)
        for p, name in zip(procs, ("perl", "perl", "python3")):
            stacks = probe.folded(p.pid)
            frames = sum(len(fr) * v for fr, v in stacks)
            unknown = sum(sum(1 for f in fr if f.startswith("[unknown]")) * v for fr, v in stacks)
            samples = sum(v for fr, v in stacks)
            complete = sum(v for fr, v in stacks if fr and fr[0] == "_start")
            print("%s: %d samples, %.1f%% [unknown] of %d frames, %.1f%% complete" % (
                name, samples, 100.0 * unknown / max(frames, 1), frames, 100.0 * complete / max(samples, 1)))
            check(samples >= 30, "%s: too few samples (%d)" % (name, samples))
            check(unknown < 0.05 * frames, "%s: %d of %d frames unknown" % (name, unknown, frames))
            incomplete = sorted(((v, fr) for fr, v in stacks if not fr or fr[0] != "_start"), reverse=True)
            for v, fr in incomplete[:3]:
                print("  incomplete (%d): %s" % (v, ";".join(fr)[:300]))
            check(complete >= 0.9 * samples, "%s: %d of %d stacks complete" % (name, complete, samples))
        print("health: %r; %d distinct files, %d per process summed" % (
            {k: v for k, v in h.items() if k.startswith("unwind")}, len(files), per_proc))
        check(int(h["unwind_files"]) <= len(files) < per_proc, "files loaded %s, distinct %d, summed %d" % (
            h["unwind_files"], len(files), per_proc))
        check(int(h["unwind_overflow"]) == 0 and int(h["unwind_errors"]) == 0, "health: %r" % h)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


test_unwind_debian_interpreters.timeout = 180
