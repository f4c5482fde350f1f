"""test_stackprobe_live.py - stackprobe's mem_live (bytes allocated and not freed, per stack) against
tests/helpers/leak_sites.c, which allocates known sizes at known call sites and frees a known part:
the graph holds exactly the unfreed bytes at each site, nothing for the sites that freed everything,
and the blocks freed by a process that exited are forgotten. Then tests/helpers/map_sites.c for
mmap/munmap/mremap/brk: exact bytes per function, glibc's own mmap/brk not counted twice, and the
query API's mem-live answer."""
import os
import re
import shutil
import tempfile
import time

from harness import ROOT, TEST_BINS, PidPeer, TestFailure, check, teardown, wait_for
from test_stackprobe import Standalone, folded, records

LEAK_SITES = os.path.join(TEST_BINS, "leak_sites")
MAP_SITES = os.path.join(TEST_BINS, "map_sites")


def health_index(name):
    """Index of a stackprobe_health field in records() rows (table name first, then the fields)."""
    with open(os.path.join(ROOT, "schema", "stackprobe.meta")) as f:
        text = f.read()
    table = text[text.index('table_name: "stackprobe_health"'):]
    nxt = table.find("table_name:", 10)
    table = table[:nxt] if nxt > 0 else table
    names = re.findall(r'\bname: "([a-z_0-9]+)"', table)
    return 1 + names.index(name)


class LeakSites(PidPeer):
    def __init__(self, path=LEAK_SITES):
        # under the ASan build the helper carries the sanitizer runtime: its leak check at exit would map
        # and allocate at hundreds of new stacks (LSan symbolizing), none of it the helper's
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
        super().__init__([path], "leak_sites", env=env)

    def run(self):
        self.go()
        line = self.proc.stdout.readline()
        check(line.startswith("done "), "leak_sites facts: %r" % line)
        return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}


def live_run(tmp, flame, w, args):
    """w (LeakSites) run under a standalone stackprobe -P mem (args) until a drain after it exited: its
    facts and the probe's records."""
    sp = None
    try:
        sp = Standalone(tmp, ["--pid", str(w.pid), "-P", "mem"] + args + [
            "--svg-period", "600", "--store-period", "1", "--flame-dir", flame, "--svg-dir", os.path.join(tmp, "svg"),
            "-t", "1"])
        # the uprobes are attached when the probe says it started
        facts = w.run()
        time.sleep(1.5)  # a drain after the end
        w.finish()  # the process exits: its sites and blocks are forgotten at the next drain
        time.sleep(2.2)
        out = sp.stop()
        sp = None
        return facts, out
    finally:
        if sp:
            sp.proc.kill()
        w.finish()


def test_mem_live_exact_bytes_per_site():
    tmp = tempfile.mkdtemp(prefix="gg-stack-live-")
    flame = os.path.join(tmp, "flame")
    w = LeakSites()
    # mem_alloc too: both graphs from the same uprobes
    facts, out = live_run(tmp, flame, w, ["--mem-alloc", "1", "--mem-live", "1"])
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
    check(health and health[-1][health_index("live_lost")] == "0", "no live allocation lost: %r" % health[-1:])
    shutil.rmtree(tmp, ignore_errors=True)


test_mem_live_exact_bytes_per_site.timeout = 60


def store_snapshots(flame):
    """The mem-live store files, oldest first: each {(frames...): bytes}."""
    snaps = []
    d = os.path.join(flame, "store", "mem-live")
    for path in sorted(os.listdir(d)):
        with open(os.path.join(d, path)) as f:
            f.readline()
            snap = {}
            for line in f:
                if line.strip():
                    stack, v = line.rstrip("\n").rsplit("\t", 1)
                    frames = tuple(x.replace("[l] ", "") for x in stack.split("\t")[-1].split(";"))
                    snap[frames] = snap.get(frames, 0) + int(v)
            snaps.append(snap)
    return snaps


def test_mem_live_mmap_brk_exact_bytes_per_function():
    """mmap'ed regions (whole, partly unmapped, moved by mremap, half replaced by MAP_FIXED, PROT_NONE,
    odd sizes) and brk growth and shrink are live bytes of the function that made them, to the byte;
    glibc's own mmap (a 1 MiB malloc) and brk growth (small mallocs) are counted once, as the malloc
    blocks, not again as mappings; everything is forgotten when the process exits."""
    tmp = tempfile.mkdtemp(prefix="gg-stack-maps-")
    flame = os.path.join(tmp, "flame")
    w = LeakSites(MAP_SITES)
    facts, out = live_run(tmp, flame, w, ["--mem-live", "1"])
    print("map_sites held: %r" % facts)
    check(facts == {"heap_big": 1 << 20, "heap_small": 500000, "map_keep": 1 << 20, "map_part": 786432,
                    "map_all": 0, "map_none": 0, "map_odd": 12288, "map_move": 196608, "map_fixed": 131072,
                    "brk_grow": 250000}, "the helper's own count: %r" % facts)
    expect = {f: v for f, v in facts.items() if v}

    def per_function(snap):
        got = {}
        for frames, v in snap.items():
            for f in facts:
                if f in frames:
                    got[f] = got.get(f, 0) + v
        return got

    snaps = store_snapshots(flame)
    seen = [per_function(s) for s in snaps]
    print("mem_live snapshots (function -> bytes): %r" % seen)
    check(any(s == expect for s in seen), "a snapshot with exactly the bytes held per function: %r" % seen)
    full = [s for s in snaps if per_function(s) == expect][-1]
    # the leaves say how: mmap/brk for the program's own calls, malloc (not mmap under it) for the heap
    leaves = {}
    for frames, v in full.items():
        for f in facts:
            if f in frames:
                leaves.setdefault(f, set()).add(frames[-1])
    print("leaves: %r" % leaves)
    check(leaves["heap_big"] == {"malloc"} and leaves["heap_small"] == {"malloc"},
          "the allocator's own mmap/brk are not counted again: %r" % leaves)
    check(leaves["map_keep"] == {"mmap"} and leaves["brk_grow"] == {"brk"}, "leaves: %r" % leaves)
    check(sum(full.values()) == sum(expect.values()), "nothing else held in the process: %r" % full)
    stats = [r for r in records(out, "stackprobe_stats") if r[1] == "mem_live"]
    check(int(stats[-1][3]) == 0, "after the process exited its regions are gone: %r" % stats[-1])
    health = records(out, "stackprobe_health")
    check(health[-1][health_index("live_lost")] == "0", "no region lost: %r" % health[-1:])
    check(int(health[-1][health_index("live_map_inner")]) >= 2, "glibc's own mmap and brk seen: %r" % health[-1:])
    shutil.rmtree(tmp, ignore_errors=True)


test_mem_live_mmap_brk_exact_bytes_per_function.timeout = 60


def test_mem_live_query_api():
    """The REST query API serves mem-live (GET /flamegraph/query?event=mem-live): the newest snapshot of the
    store, so each function of map_sites has exactly the bytes it holds, not a multiple of them."""
    import json
    import urllib.parse
    from harness import Supervisor, free_port, http_get, probe_entry, rest_put

    tmp = tempfile.mkdtemp(prefix="gg-stack-live-q-")
    flame, svg = os.path.join(tmp, "flame"), os.path.join(tmp, "svg")
    os.makedirs(flame)
    os.makedirs(svg)
    rest_port = free_port()
    s = Supervisor(probes=[probe_entry("stackprobe", "-t 1 --store-period 1", switch="off")],
                   extra='rest_api_server = { port = %d; state_dir = "%s/rest"; output_base_dir = "%s"; };'
                   % (rest_port, tmp, tmp))
    w = LeakSites(MAP_SITES)
    try:
        s.start()
        t0 = int(time.time())
        status, body = rest_put(rest_port, "flamegraph", {
            "cmd": {"probe": ["mem"]}, "snoopers": {"proc_id": [w.pid]},
            "params": {"flame_dir": flame, "svg_dir": svg, "mem_live": 1, "pyroscope_server": ""},
            "state": "running"})
        check(status == 200, "PUT /flamegraph: %d %s" % (status, body))
        s.wait_probe("stackprobe", lambda p: p["state"] == "running" and p.get("config_version_applied", 0) >= 1,
                     15, "running with its configuration")
        wait_for(lambda: [h for h in s.metric_records("stackprobe_health") if int(h["alloc_procs"]) >= 1], 15,
                 "the allocator uprobes in map_sites (stackprobe_health.alloc_procs)")
        facts = w.run()
        want = {f: v for f, v in facts.items() if v}

        seen = {}

        def per_function():
            args = urllib.parse.urlencode({"app": str(w.pid), "event": "mem-live", "time_start": t0 - 5,
                                           "time_end": int(time.time()) + 5})
            st, text = http_get("http://127.0.0.1:%d/flamegraph/query?%s" % (rest_port, args))
            check(st == 200, "query: %d %s" % (st, text[:300]))
            got = {}
            for n in json.loads(text)["result"]:
                if n["profile_location_str"] in want:
                    got[n["profile_location_str"]] = got.get(n["profile_location_str"], 0) + n["total_value"]
            seen["last"] = got
            return got if got == want else None

        # several store periods pass: a sum over the range's snapshots would be a multiple of the truth
        time.sleep(3)
        try:
            wait_for(per_function, 15, "the query's bytes per function equal map_sites' own count %r" % want)
        except TestFailure as e:
            raise TestFailure("%s; last answer per function: %r" % (e, seen.get("last")))
    finally:
        teardown(w, s, tmp)


test_mem_live_query_api.timeout = 60
