#!/usr/bin/env python3
"""webui_bench.py - what the built-in page costs: its weight (bytes the browser transfers for the first
load and for each 2 s auto-refresh, from the DevTools protocol's Network.loadingFinished), and the
supervisor's added CPU while the page stays open and refreshes, against the same supervisor with no page
open. A/B alternated in pairs (page off, page on) of SECONDS each; the supervisor's CPU time from
/proc/<pid>/task/*/schedstat; the browser's own CPU is not counted (it is not the agent's).

usage: bench/webui_bench.py [PAIRS=6] [SECONDS=20] [TAB=probes|tables|events|agent]      (GG_BUILD selects the build)
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from harness import Supervisor, probe_entry, proc_oncpu_ns, rest_port  # noqa: E402
from browser import Chromium  # noqa: E402


def cpu_seconds(pid):
    """CPU time of every thread of pid (the loop thread and libmicrohttpd's), in ns precision."""
    return proc_oncpu_ns(pid) / 1e9


def transferred(b, since):
    """Bytes and responses the page received after event index `since` (encodedDataLength)."""
    total = n = 0
    for e in b.events[since:]:
        if e["method"] == "Network.loadingFinished":
            total += e["params"].get("encodedDataLength", 0)
            n += 1
    return total, n


def open_tab(b, tab):
    """The tab to leave open; on Tables, the biggest table (system_proc's 50 rows here) is shown."""
    if tab == "probes":
        return
    b.click('#tabs button[data-tab="%s"]' % tab)
    if tab == "tables":
        b.wait_js("document.querySelectorAll('#imdb-tables li').length > 0", 20, "imdb tables")
        b.eval("(() => { let best = null, n = -1; document.querySelectorAll('#imdb-tables li').forEach(li => {"
               " const c = Number(li.lastChild.textContent.replace(/,/g, '')); if (c > n) { n = c; best = li; } });"
               " best.click(); })()")
        b.wait_js("document.querySelectorAll('#imdb-rows tbody tr').length > 0", 20, "rows shown")


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 20
    tab = sys.argv[3] if len(sys.argv) > 3 else "probes"
    s = Supervisor(probes=[probe_entry("system_infos", "-t 1")], metric_out="web_server")
    b = None
    try:
        s.start()
        port = rest_port(s)
        pid = s.proc.pid
        time.sleep(3)
        url = "http://127.0.0.1:%d/ui/" % port
        # weight: first load, then per refresh
        b = Chromium()
        b.navigate(url)
        b.wait_js("document.body && document.body.getAttribute('data-loaded') === '1'", 20, "page loaded")
        b.drain(1)
        first, nfirst = transferred(b, 0)
        open_tab(b, tab)
        mark = len(b.events)
        time.sleep(10.5)
        b.drain(0.1)
        per, nper = transferred(b, mark)
        refreshes = 5
        b.close()
        b = None
        print("page weight: first load %d bytes in %d responses; auto-refresh (%s tab) %.0f bytes per refresh "
              "(%d responses in %d refreshes)" % (first, nfirst, tab, per / refreshes, nper, refreshes))
        off, on = [], []
        for i in range(pairs):
            c0 = cpu_seconds(pid)
            time.sleep(secs)
            off.append(100 * (cpu_seconds(pid) - c0) / secs)
            b = Chromium()
            b.navigate(url)
            b.wait_js("document.body && document.body.getAttribute('data-loaded') === '1'", 20, "page loaded")
            open_tab(b, tab)
            c0 = cpu_seconds(pid)
            t0 = time.monotonic()
            while time.monotonic() - t0 < secs:  # keep the DevTools socket read so the page is not stalled
                b.drain(1)
            on.append(100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0))
            b.close()
            b = None
            print("pair %d: supervisor CPU %% page off %.3f, on %.3f" % (i + 1, off[-1], on[-1]), flush=True)
        d = [y - x for x, y in zip(off, on)]
        print("supervisor CPU %% of one core (median [min, max] of %d pairs of %.0f s): page off %.3f [%.3f, %.3f], "
              "page on %.3f [%.3f, %.3f], added %.3f [%.3f, %.3f]" % (
                  pairs, secs, statistics.median(off), min(off), max(off), statistics.median(on), min(on), max(on),
                  statistics.median(d), min(d), max(d)))
    finally:
        if b:
            b.close()
        s.cleanup()


if __name__ == "__main__":
    main()
