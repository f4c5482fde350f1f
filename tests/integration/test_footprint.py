"""test_footprint.py - the six original probes and the supervisor within their memory budgets (issue 23):
bench/footprint.py starts the real supervisor with tcp, socket, io, proc, flamegraph (oncpu+offcpu) and
baseinfo, waits for steady state and measures each process's PSS (smaps_rollup, mmap'ed BPF maps left
out) plus the memlock of the BPF maps it holds; a process over its README budget by more than 20 %
fails, and so does a total over 64 MiB."""
import os
import sys

from harness import BUILD, check

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import footprint  # noqa: E402


def test_six_probes_within_budget():
    rows = footprint.run(settle=10, samples=3)
    lines, over, total = footprint.report(rows)
    print("\n".join(lines))
    sanitized = "san" in os.path.basename(os.path.normpath(BUILD))
    if (over or total > 64.0) and not sanitized:
        # tcpprobe follows the host's TCP links and stackprobe the processes it samples: on a machine
        # shared with other test runs a burst of them can pass; measured again, a real excess stays
        print("over budget: %s; measuring again" % ", ".join(over))
        rows = footprint.run(settle=10, samples=5)
        lines, over, total = footprint.report(rows)
        print("\n".join(lines))
    names = {r["name"] for r in rows}
    check(names >= set(footprint.BUDGET_MIB), "every process measured: %r" % sorted(names))
    check(all(r["pss_kib"] > 0 for r in rows), "PSS read for each: %r" % rows)
    if sanitized:
        # ASan's shadow memory and quarantine multiply every process's memory: the budgets are for the
        # real build; here only that every process was measured
        print("sanitizer build: budgets not checked")
        return
    check(not over, "over budget by more than %d %%: %s\n%s" % (footprint.TOLERANCE * 100, ", ".join(over),
                                                                 "\n".join(lines)))
    check(total <= 64.0, "all six probes and the supervisor in %.1f MiB, goal 64\n%s" % (total, "\n".join(lines)))


test_six_probes_within_budget.timeout = 150
