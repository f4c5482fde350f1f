#!/usr/bin/env python3
"""sysinfo_vs_node_exporter.py - system_infos side by side with prometheus-node-exporter on this host:
1. fidelity: the metrics both have (CPU seconds, memory, network bytes and packets, disk IOs and bytes,
   filesystem sizes and inodes) read at the same moment, relative difference;
2. cost: system_infos CPU time per report period and RSS, node_exporter CPU time per scrape, scrape
   latency and RSS, both at a 1 s interval for DURATION seconds.

usage: bench/sysinfo_vs_node_exporter.py [DURATION] [BUILD]   (needs prometheus-node-exporter)"""
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import meta_fields, proc_status_kb  # noqa: E402

DURATION = int(sys.argv[1]) if len(sys.argv) > 1 else 30
BUILD = sys.argv[2] if len(sys.argv) > 2 else "build"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SI = os.path.join(ROOT, BUILD, "probes", "system_infos")
NE = "/usr/bin/prometheus-node-exporter"
ADDR = "127.0.0.1:19100"
HZ = os.sysconf("SC_CLK_TCK")


FIELDS = meta_fields(os.path.join(ROOT, "schema", "system_infos.meta"))


class SystemInfos:
    """system_infos -t 1 run by hand; a period's records arrive together (stdout is flushed once per
    period), so a period is complete once its lines stop coming."""

    def __init__(self, subs, extra=()):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GALA_GOPHER_")}
        self.p = subprocess.Popen([SI, "-t", "1", "-l", "warn", "-P", subs] + list(extra), stdout=subprocess.PIPE,
                                  text=True, env=env)
        self.lock = threading.Lock()
        self.cur = {}  # table -> {key: latest record}
        self.last_line = 0.0
        self.periods = 0
        self.records = 0
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            parts = line.rstrip("\n").split("|")
            t, vals = parts[1], parts[2:-1]
            rec = dict(zip(FIELDS[t], vals))
            with self.lock:
                now = time.monotonic()
                if now - self.last_line > 0.3:
                    self.periods += 1
                self.last_line = now
                self.records += 1
                self.cur.setdefault(t, {})[vals[0]] = rec

    def fresh_period(self):
        """Wait for the next period's records to have all arrived; returns them."""
        n0 = self.periods
        while True:
            time.sleep(0.005)
            with self.lock:
                if self.periods > n0 and time.monotonic() - self.last_line > 0.05:
                    return {t: dict(v) for t, v in self.cur.items()}

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.p.wait(10)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        p = f.read().rsplit(")", 1)[1].split()
    return int(p[11]) + int(p[12])


def scrape():
    t0 = time.monotonic()
    body = urllib.request.urlopen("http://%s/metrics" % ADDR, timeout=10).read().decode()
    dt = time.monotonic() - t0
    out = {}
    for line in body.splitlines():
        if line.startswith("#") or not line:
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out, dt


def ne_get(ne, name, **labels):
    for lab, v in ne.get(name, []):
        if all(lab.get(k) == str(val) for k, val in labels.items()):
            return v
    return None


def fidelity(si, ne):
    rows = []  # (metric, ours, theirs, tolerance floor)

    def add(what, ours, theirs, floor):
        if ours is not None and theirs is not None:
            rows.append((what, float(ours), float(theirs), floor))
    for cpu, r in si.get("system_cpu", {}).items():
        for mode, f in (("user", "user_total_second"), ("nice", "nice_total_second"), ("system", "system_total_second"),
                        ("idle", "idle_total_second"), ("iowait", "iowait_total_second"), ("irq", "irq_total_second"),
                        ("softirq", "softirq_total_second"), ("steal", "steal_total_second")):
            add("cpu%s %s seconds" % (cpu, mode), r[f], ne_get(ne, "node_cpu_seconds_total", cpu=cpu, mode=mode), 0.05)
    m = si.get("system_meminfo", {}).get("meminfo")
    if m:
        for f, n in (("total_kB", "MemTotal"), ("free_kB", "MemFree"), ("available_kB", "MemAvailable"),
                     ("buffers_kB", "Buffers"), ("cache_kB", "Cached"), ("swap_total_kB", "SwapTotal"),
                     ("swap_free_kB", "SwapFree"), ("shmem_kB", "Shmem"), ("slab_kB", "Slab")):
            add("mem " + n, float(m[f]) * 1024, ne_get(ne, "node_memory_%s_bytes" % n), 64 << 10)
    for dev, r in si.get("nic", {}).items():
        for f, n in (("rx_bytes", "receive_bytes"), ("tx_bytes", "transmit_bytes"), ("rx_packets", "receive_packets"),
                     ("tx_packets", "transmit_packets"), ("rx_dropped", "receive_drop"), ("tx_errs", "transmit_errs")):
            add("nic %s %s" % (dev, f), r[f], ne_get(ne, "node_network_%s_total" % n, device=dev), 4096)
    for dev, r in si.get("system_iostat", {}).items():
        for f, n in (("reads_completed", "reads_completed"), ("read_bytes", "read_bytes"),
                     ("writes_completed", "writes_completed"), ("written_bytes", "written_bytes"),
                     ("io_time_seconds", "io_time_seconds")):
            add("disk %s %s" % (dev, f), r[f], ne_get(ne, "node_disk_%s_total" % n, device=dev), 0)
    for mnt, r in si.get("system_df", {}).items():
        add("fs %s size" % mnt, float(r["Blocks"]) * 1024, ne_get(ne, "node_filesystem_size_bytes", mountpoint=mnt), 0)
        add("fs %s avail" % mnt, float(r["Free"]) * 1024, ne_get(ne, "node_filesystem_avail_bytes", mountpoint=mnt),
            1 << 20)
        add("fs %s files" % mnt, r["Inodes"], ne_get(ne, "node_filesystem_files", mountpoint=mnt), 0)
        add("fs %s files_free" % mnt, r["IFree"], ne_get(ne, "node_filesystem_files_free", mountpoint=mnt), 16)
    return rows


def main():
    ne_proc = subprocess.Popen([NE, "--web.listen-address=" + ADDR, "--log.level=warn"], stderr=subprocess.DEVNULL)
    si = SystemInfos("cpu,mem,nic,disk,net,fs,host")
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                scrape()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        while si.periods < 3:
            time.sleep(0.05)

        # 1. fidelity: wait for a fresh period, then scrape at once
        ours = si.fresh_period()
        ne, _ = scrape()
        rows = fidelity(ours, ne)
        worst = []
        within = 0
        for what, a, b, floor in rows:
            diff = abs(a - b)
            rel = diff / abs(b) if b else (0.0 if diff == 0 else 1.0)
            ok = rel <= 0.01 or diff <= floor
            within += ok
            worst.append((rel if diff > floor else 0.0, what, a, b))
        worst.sort(reverse=True)
        print("fidelity: %d metrics both report, %d within 1%% (or within the change of one sampling skew)"
              % (len(rows), within))
        for rel, what, a, b in worst[:5]:
            print("  %-40s ours %-18.6g node_exporter %-18.6g rel diff %.4f%%" % (what, a, b, rel * 100))

        # 2. cost over DURATION seconds at 1 s
        si_t0, ne_t0 = cpu_ticks(si.p.pid), cpu_ticks(ne_proc.pid)
        p0 = si.periods
        lat = []
        t_end = time.monotonic() + DURATION
        while time.monotonic() < t_end:
            t = time.monotonic()
            _, dt = scrape()
            lat.append(dt)
            time.sleep(max(0, 1 - (time.monotonic() - t)))
        si_cpu = (cpu_ticks(si.p.pid) - si_t0) * 1000.0 / HZ
        ne_cpu = (cpu_ticks(ne_proc.pid) - ne_t0) * 1000.0 / HZ
        periods = si.periods - p0
        lat.sort()
        print("cost over %d s at a 1 s interval (CPU from /proc/<pid>/stat, %d Hz ticks):" % (DURATION, HZ))
        print("  system_infos (cpu,mem,nic,disk,net,fs,host): %.2f ms CPU per period (%d periods), RSS %d KiB"
              % (si_cpu / max(periods, 1), periods, proc_status_kb(si.p.pid)))
        print("  node_exporter (default collectors): %.2f ms CPU per scrape (%d scrapes), scrape p50 %.1f ms "
              "p90 %.1f ms, RSS %d KiB" % (ne_cpu / max(len(lat), 1), len(lat), lat[len(lat) // 2] * 1000,
                                           lat[int(len(lat) * 0.9)] * 1000, proc_status_kb(ne_proc.pid)))
        si.stop()
        # the proc sub-probe without snoopers (node_exporter has no per-process metrics): every process,
        # then the default top 50 by CPU + memory
        for what, extra in (("every process", ["--proc-top", "0"]), ("top 50 (the default)", [])):
            nproc = len([d for d in os.listdir("/proc") if d.isdigit()])
            sp = SystemInfos("proc", extra)
            time.sleep(1.5)
            t0, p0, r0 = cpu_ticks(sp.p.pid), sp.periods, sp.records
            time.sleep(max(5, DURATION // 2))
            cpu = (cpu_ticks(sp.p.pid) - t0) * 1000.0 / HZ
            n = max(sp.periods - p0, 1)
            print("  system_infos proc, no snoopers, %s (%d processes, %.0f records per period): %.2f ms CPU per "
                  "period (%.3f ms per process), RSS %d KiB" % (what, nproc, (sp.records - r0) / n, cpu / n,
                                                                cpu / n / nproc, proc_status_kb(sp.p.pid)))
            sp.stop()
    finally:
        si.stop()
        ne_proc.terminate()
        ne_proc.wait(10)


if __name__ == "__main__":
    main()
