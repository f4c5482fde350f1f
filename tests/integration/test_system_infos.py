"""test_system_infos.py - system_infos under the supervisor: its records arrive over IPC and agree with
/proc/stat and /proc/meminfo read by the test itself."""
import os
import subprocess
import time

from harness import PROBES, Supervisor, check, probe_entry, wait_for

HZ = os.sysconf("SC_CLK_TCK")


def proc_stat_cpus():
    cpus = {}
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts[0].startswith("cpu") and parts[0] != "cpu":
                cpus[parts[0][3:]] = [int(x) / HZ for x in parts[1:9]]
    return cpus


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            out[k] = int(v.split()[0])
    return out


def test_records_agree_with_proc():
    before = proc_stat_cpus()
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")]).start()
    try:
        ncpu = len(before)
        wait_for(lambda: len(s.metric_records("system_cpu")) >= 3 * ncpu, 10, "three periods of system_cpu")
        after = proc_stat_cpus()
        mem = meminfo()
        recs = s.metric_records("system_cpu")
        check({r["cpu"] for r in recs} == set(before), "one row per cpu: %r" % sorted({r["cpu"] for r in recs}))
        cols = ["user_total_second", "nice_total_second", "system_total_second", "idle_total_second",
                "iowait_total_second", "irq_total_second", "softirq_total_second", "steal_total_second"]
        idx = [0, 1, 2, 3, 4, 5, 6, 7]
        for r in recs:
            b, a = before[r["cpu"]], after[r["cpu"]]
            for col, i in zip(cols, idx):
                # idle can go backwards slightly on some kernels (nohz accounting); others are monotonic
                slack = 0.05 if col == "idle_total_second" else 0.011
                check(b[i] - slack <= r[col] <= a[i] + slack,
                      "cpu%s %s=%r not within /proc/stat [%r, %r]" % (r["cpu"], col, r[col], b[i], a[i]))
            check(0 <= r["util_per"] <= 100, "util_per in range: %r" % r["util_per"])
        util = s.metric_records("system_cpu_util")
        check(len(util) >= 3 and all(0 <= u["total_used_per"] <= 100 for u in util), "cpu util: %r" % util[-1:])
        m = s.metric_records("system_meminfo")
        check(len(m) >= 3, "meminfo rows")
        m = m[-1]
        check(m["total_kB"] == mem["MemTotal"], "total_kB %r == MemTotal %r" % (m["total_kB"], mem["MemTotal"]))
        check(m["swap_total_kB"] == mem["SwapTotal"], "swap_total_kB")
        tol = mem["MemTotal"] * 0.02
        for field, key in [("free_kB", "MemFree"), ("available_kB", "MemAvailable"), ("cache_kB", "Cached"),
                           ("buffers_kB", "Buffers"), ("shmem_kB", "Shmem")]:
            check(abs(m[field] - mem[key]) <= tol, "%s=%r vs %s=%r" % (field, m[field], key, mem[key]))
        want_util = (mem["MemTotal"] - mem["MemAvailable"]) * 100.0 / mem["MemTotal"]
        check(abs(m["util"] - want_util) < 2, "util %r vs %r" % (m["util"], want_util))
        p = s.probe("system_infos")
        check(p["rejected_total"] == 0, "no record rejected: %r" % p["rejected"])
        check(p["ipc_lost_batches"] == 0 and p["ipc_lost_records"] == 0, "nothing lost over IPC")
        check(p["batches"] >= 3, "records came over IPC: %r batches" % p["batches"])
    finally:
        s.cleanup()


test_records_agree_with_proc.timeout = 60


def test_cpu_util_follows_load():
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")]).start()
    burners = []
    try:
        wait_for(lambda: len(s.metric_records("system_cpu_util")) >= 1, 10, "first util record")
        n0 = len(s.metric_records("system_cpu_util"))
        burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count())]
        wait_for(lambda: len(s.metric_records("system_cpu_util")) >= n0 + 4, 10, "four busy periods")
        busy = [u["total_used_per"] for u in s.metric_records("system_cpu_util")[n0 + 1:n0 + 4]]
        check(all(b >= 85 for b in busy), "all cpus busy -> util >= 85%%: %r" % busy)
    finally:
        for b in burners:
            b.kill()
            b.wait()
        s.cleanup()


test_cpu_util_follows_load.timeout = 60


def test_live_config_applied():
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1", params={"report_period": 2})]).start()
    try:
        p = s.wait_probe("system_infos", lambda p: p["config_version_applied"] == 1, 10, "config v1 applied")
        check(p["config_version"] == 1, "version sent")
    finally:
        s.cleanup()


def test_standalone_prints_records():
    p = subprocess.Popen([os.path.join(PROBES, "system_infos"), "-t", "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("GALA_GOPHER_")})
    try:
        time.sleep(2.5)
    finally:
        p.terminate()
    out, err = p.communicate(timeout=5)
    check(p.returncode == 0, "exits 0 on SIGTERM: %r %s" % (p.returncode, err))
    lines = out.splitlines()
    check(any(l.startswith("|system_cpu|0|") for l in lines), "system_cpu lines on stdout: %r" % lines[:3])
    check(any(l.startswith("|system_meminfo|") for l in lines), "system_meminfo line on stdout")
    check(all(l.startswith("|") and l.endswith("|") for l in lines), "only records on stdout")
    r = subprocess.run([os.path.join(PROBES, "system_infos"), "-t", "0"], capture_output=True, text=True)
    check(r.returncode == 2 and "-t" in r.stderr, "out-of-range period refused: %r" % r.stderr)
