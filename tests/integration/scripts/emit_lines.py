#!/usr/bin/env python3
"""emit_lines.py - an extend probe for tests: prints the lines of FILE on stdout every PERIOD seconds
(re-reading FILE each time, so a test changes what is sent by replacing the file), COUNT times (0 = until
stopped), then waits until it is stopped."""
import sys
import time


def main():
    args = sys.argv[1:]
    period, count = 1.0, 0
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt == "-p":
            period = float(args.pop(0))
        elif opt == "-c":
            count = int(args.pop(0))
        else:
            sys.stderr.write("usage: emit_lines.py [-p PERIOD] [-c COUNT] FILE\n")
            return 2
    path = args[0]
    n = 0
    while count == 0 or n < count:
        try:
            with open(path, encoding="utf-8") as f:
                sys.stdout.write(f.read())
            sys.stdout.flush()
        except FileNotFoundError:
            pass
        n += 1
        time.sleep(period)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
