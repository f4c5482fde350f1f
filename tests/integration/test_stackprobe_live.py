"""test_stackprobe_live.py - stackprobe's mem_live (bytes allocated and not freed, per stack) against
tests/helpers/leak_sites.c, which allocates known sizes at known call sites and frees a known part:
the graph holds exactly the unfreed bytes at each site, nothing for the sites that freed everything,
and the blocks freed by a process that exited are forgotten."""
import os
import shutil
import subprocess
import tempfile
import time

from harness import TEST_BINS, check, wait_for
from test_stackprobe import Standalone, folded, records

LEAK_SITES = os.path.join(TEST_BINS, "leak_sites")


class LeakSites:
    def __init__(self):
        self.proc = subprocess.Popen([LEAK_SITES], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        check(line.startswith("pid="), "leak_sites did not start: %r" % line)
        self.pid = int(line.split("=")[1])

    def run(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        check(line.startswith("done "), "leak_sites facts: %r" % line)
        return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}

    def finish(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_mem_live_exact_bytes_per_site():
    tmp = tempfile.mkdtemp(prefix="gg-stack-live-")
    flame = os.path.join(tmp, "flame")
    w = LeakSites()
    sp = None
    try:
        # mem_alloc too: both graphs from the same uprobes
        sp = Standalone(tmp, ["--pid", str(w.pid), "-P", "mem", "--mem-alloc", "1", "--mem-live", "1",
                              "--svg-period", "600", "--store-period", "1", "--flame-dir", flame,
                              "--svg-dir", os.path.join(tmp, "svg"), "-t", "1"])
        # the uprobes are attached when the probe says it started
        facts = w.run()
        time.sleep(1.5)  # a drain after the end
        w.finish()  # the process exits: its sites and blocks are forgotten at the next drain
        time.sleep(2.2)
        out = sp.stop()
        sp = None
    finally:
        if sp:
            sp.proc.kill()
        w.finish()
    print("leak_sites held: %r" % facts)
    # the store has one snapshot file per store period: the ones while the process ran name its sites
    snaps = []
    for path in sorted(os.listdir(os.path.join(flame, "store", "mem-live"))):
        with open(os.path.join(flame, "store", "mem-live", path)) as f:
            f.readline()
            snap = {}
            for line in f:
                if line.strip():
                    stack, v = line.rstrip("\n").rsplit("\t", 1)
                    snap[stack] = snap.get(stack, 0) + int(v)
            snaps.append(snap)
    expect = {"site_keep;malloc": facts["keep"], "site_half;calloc": facts["half"],
              "site_grow;realloc": facts["grow"]}
    check(facts == {"keep": 100000, "half": 300000, "grow": 327680, "aligned": 0, "shrink": 0},
          "the helper's own count: %r" % facts)

    def sites(snap):
        got = {}
        for stack, v in snap.items():
            frames = stack.split("\t")[-1].split(";")
            for i, fr in enumerate(frames):
                if fr.startswith("site_"):
                    key = fr + ";" + ";".join(x.replace("[l] ", "") for x in frames[i + 1:])
                    got[key] = got.get(key, 0) + v
        return got

    seen = [sites(s) for s in snaps]
    print("mem_live snapshots (site;leaf -> bytes): %r" % seen)
    check(any(s == expect for s in seen), "a snapshot with exactly the unfreed bytes per site: %r" % seen)
    # stats rows (every second): value is the bytes held now; once the process exited, nothing
    stats = [r for r in records(out, "stackprobe_stats") if r[1] == "mem_live"]
    print("mem_live stats rows (blocks recorded, bytes held): %r" % [(r[2], r[3]) for r in stats])
    check(stats and max(int(r[3]) for r in stats) >= sum(expect.values()), "bytes held while it ran: %r" % stats)
    check(int(stats[-1][3]) == 0, "after the process exited its sites are gone: %r" % stats[-1])
    # mem_alloc from the same uprobes: every byte requested at the sites (frees do not subtract)
    alloc = folded(flame, "mem_alloc")
    req = sum(v for s, v in alloc.items() if ";site_" in s)
    want = 100 * 1000 + 200 * 3000 + 50 * 4096 + 50 * 8192 + 30 * 2048 + 20 * 3000
    check(req == want, "mem_alloc bytes at the sites %d vs %d requested" % (req, want))
    health = records(out, "stackprobe_health")
    check(health and health[-1][-1] == "0", "no live allocation lost: %r" % health[-1:])
    shutil.rmtree(tmp, ignore_errors=True)


test_mem_live_exact_bytes_per_site.timeout = 60
