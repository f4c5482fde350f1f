#!/usr/bin/env python3
"""run.py - runs every test_* function of tests/integration/test_*.py, each with a time limit, and
prints "integration: N passed, N failed"."""
import importlib.util
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout("test exceeded its time limit")


def main():
    only = sys.argv[1:]
    passed = failed = 0
    failures = []
    signal.signal(signal.SIGALRM, on_alarm)
    for fname in sorted(os.listdir(HERE)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(HERE, fname))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = "%s.%s" % (fname[:-3], name)
            if only and not any(o in full for o in only):
                continue
            fn = getattr(mod, name)
            t0 = time.monotonic()
            signal.alarm(getattr(fn, "timeout", 120))
            try:
                fn()
                signal.alarm(0)
                passed += 1
                print("PASS %s (%.1fs)" % (full, time.monotonic() - t0), flush=True)
            except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
                signal.alarm(0)
                failed += 1
                failures.append(full)
                print("FAIL %s (%.1fs): %s" % (full, time.monotonic() - t0, e), flush=True)
                traceback.print_exc(limit=4)
    if failures:
        print("failed: " + ", ".join(failures))
    print("integration: %d passed, %d failed" % (passed, failed), flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
