#!/usr/bin/env python3
"""footprint.py - memory of the agent with the six original probes on (tcp, socket, io, proc, flamegraph
oncpu+offcpu, baseinfo): starts the real supervisor with them, waits for steady state, and prints per
process its PSS (/proc/<pid>/smaps_rollup: shared libraries count once across the processes), its BPF
map memory (the `memlock` of every map it holds, from /proc/<pid>/fdinfo, each map counted once), its
threads, and the total against the README's per-probe budgets (issue 23: all six <= 64 MiB).

  python3 bench/footprint.py [--settle S] [--samples N] [--json] [--keep-going]

Exit status 1 when a process exceeds its budget by more than 20 % (tests/integration/test_footprint.py
runs it that way)."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import Supervisor, probe_entry, wait_for  # noqa: E402

# The six original probes, as `make run` or gala-gopher's REST would start them: every default sub-probe,
# flamegraph with oncpu and offcpu.
PROBES = (
    ("tcpprobe", ""),
    ("endpoint", ""),
    ("ioprobe", ""),
    ("taskprobe", ""),
    ("stackprobe", "-P oncpu,offcpu"),
    ("system_infos", ""),
)

# Budget per process in MiB (PSS + BPF map memory); README "Footprint" prints the same table. Their sum
# (61) is within the goal, 64 MiB for the six probes and the supervisor together.
BUDGET_MIB = {
    "supervisor": 8.0,
    # every TCP link of the host (tcp_links allocates as links come, the user half keeps their sums)
    "tcpprobe": 8.0,
    "endpoint": 6.0,
    "ioprobe": 4.0,
    "taskprobe": 7.0,
    # symbol tables (kallsyms ~5 MiB, ELF files at most 4 MiB) and folded stacks of every process it
    # samples: it grows with how busy the machine is
    "stackprobe": 30.0,  # 26 + the 4 MiB of .eh_frame unwind rows
    "system_infos": 2.0,
}
TOLERANCE = 0.20


def smaps_pss_kib(pid):
    """(PSS of pid from smaps_rollup, PSS of its mmap'ed BPF maps) in KiB. A ring buffer or a .bss/.data
    map the probe mmaps shows in its PSS and in the map's memlock: counted once, as map memory."""
    total = maps = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Pss:"):
                total = int(line.split()[1])
    name = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and ":" not in parts[0]:
                name = parts[5] if len(parts) > 5 else ""
            elif parts[0] == "Pss:" and name == "anon_inode:bpf-map":
                maps += int(parts[1])
    return total, maps


def top_mappings(pid, n=6):
    """The n mappings of pid with the largest PSS: (KiB, name)."""
    out, name = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
                name = parts[5] if len(parts) > 5 else "[anon %s]" % parts[0]
            elif parts[0] == "Pss:":
                out.append((int(parts[1]), name))
    return sorted(out, reverse=True)[:n]


def threads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except FileNotFoundError:
        return 0


def bpf_maps(pid):
    """{map_id: (memlock bytes, name)} of the BPF maps pid holds a descriptor of."""
    out = {}
    fd_dir = "/proc/%d/fd" % pid
    try:
        fds = os.listdir(fd_dir)
    except FileNotFoundError:
        return out
    for fd in fds:
        try:
            if os.readlink(os.path.join(fd_dir, fd)) != "anon_inode:bpf-map":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except (FileNotFoundError, OSError, ValueError):
            continue
        if "map_id" in info and "memlock" in info:
            out[int(info["map_id"])] = (int(info["memlock"]), info.get("map_type", "?"))
    return out


def map_names():
    """{map_id: name} from bpftool when it is there (names only: sizes come from fdinfo)."""
    import subprocess
    try:
        r = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True, timeout=20)
        return {m["id"]: m.get("name", "") for m in json.loads(r.stdout or "[]")}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def processes(sup):
    """(name, pid) of the supervisor and every probe process (the probe's whole process group)."""
    out = [("supervisor", sup.proc.pid)]
    for p in sup.status()["probes"]:
        if p["pid"]:
            out.append((p["name"], p["pid"]))
    return out


def measure(sup):
    seen = set()
    rows = []
    names = map_names()
    for name, pid in processes(sup):
        maps = bpf_maps(pid)
        own = {i: m for i, m in maps.items() if i not in seen}
        seen.update(maps)
        pss, mapped = smaps_pss_kib(pid)
        rows.append({
            "name": name, "pid": pid, "pss_kib": pss - mapped, "pss_raw_kib": pss, "threads": threads(pid),
            "maps": len(own), "map_kib": sum(m[0] for m in own.values()) // 1024,
            "top_maps": sorted(((m[0] // 1024, names.get(i, str(i)), m[1]) for i, m in own.items()), reverse=True)[:6],
        })
    return rows


def median_rows(samples):
    """Per process the median of each number over the samples (PSS moves with page cache and timers)."""
    out = []
    for i, r in enumerate(samples[-1]):
        m = dict(r)
        for k in ("pss_kib", "pss_raw_kib", "threads", "map_kib", "maps"):
            vals = sorted(s[i][k] for s in samples if i < len(s) and s[i]["name"] == r["name"])
            m[k] = vals[len(vals) // 2]
        out.append(m)
    return out


def report(rows):
    lines = ["| process | PSS MiB (without mmap'ed maps) | BPF maps MiB (maps) | threads | total MiB | budget MiB | |",
             "|---|---|---|---|---|---|---|"]
    over = []
    tp = tm = 0
    for r in rows:
        tot = (r["pss_kib"] + r["map_kib"]) / 1024.0
        b = BUDGET_MIB.get(r["name"])
        flag = ""
        if b is not None and tot > b * (1 + TOLERANCE):
            flag = "OVER +%d %%" % round((tot / b - 1) * 100)
            over.append(r["name"])
        tp += r["pss_kib"]
        tm += r["map_kib"]
        lines.append("| %s | %.1f (%.1f) | %.1f (%d) | %d | %.1f | %s | %s |" % (
            r["name"], r["pss_raw_kib"] / 1024.0, r["pss_kib"] / 1024.0, r["map_kib"] / 1024.0, r["maps"], r["threads"], tot,
            "%.0f" % b if b is not None else "-", flag))
    lines.append("| **total** | %.1f | %.1f | | **%.1f** | %.0f | |" % (
        tp / 1024.0, tm / 1024.0, (tp + tm) / 1024.0, sum(BUDGET_MIB.values())))
    return lines, over, (tp + tm) / 1024.0


def run(settle=20, samples=5, smaps=False):
    """Start the supervisor with the six probes, settle, sample; the per-process medians."""
    sup = Supervisor(probes=[probe_entry(n, p) for n, p in PROBES], extra="")
    try:
        sup.start()
        want = {n for n, _ in PROBES}
        wait_for(lambda: {p["name"] for p in sup.status()["probes"]
                          if p["state"] == "running" and p["batches"] > 0} >= want or None,
                 60, "every probe running and sending")
        time.sleep(settle)
        got = []
        for _ in range(samples):
            got.append(measure(sup))
            time.sleep(1)
        rows = median_rows(got)
        if smaps:
            for name, pid in processes(sup):
                print("%s: %s" % (name, ", ".join("%s %d KiB" % (n, k) for k, n in top_mappings(pid))))
        st = {p["name"]: p for p in sup.status()["probes"]}
        for n in want:
            if st[n]["restarts"]:
                print("warning: %s restarted %d times" % (n, st[n]["restarts"]), file=sys.stderr)
    finally:
        sup.cleanup()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--settle", type=float, default=20, help="seconds after every probe runs")
    ap.add_argument("--samples", type=int, default=5, help="samples, one a second, after settling")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--maps", action="store_true", help="print each process's largest maps")
    ap.add_argument("--smaps", action="store_true", help="print each process's largest mappings (PSS)")
    a = ap.parse_args()
    rows = run(a.settle, a.samples, a.smaps)
    lines, over, total = report(rows)
    if a.json:
        print(json.dumps({"rows": rows, "total_mib": total, "over": over}, indent=1))
    else:
        print("\n".join(lines))
        if a.maps:
            for r in rows:
                print("%s: %s" % (r["name"], ", ".join("%s %d KiB (%s)" % (n, k, t) for k, n, t in r["top_maps"])))
        print("total %.1f MiB (goal 64); over budget by more than %d %%: %s" % (
            total, TOLERANCE * 100, ", ".join(over) or "none"))
    return 1 if over or total > 64.0 else 0


if __name__ == "__main__":
    sys.exit(main())
