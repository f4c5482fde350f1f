"""py_hot.py - a Python workload with a known hot function for stackprobe's Python frames: after "go" on
stdin, hot_function runs (called through outer_function) for the given seconds, and in a second thread
cold_function (through worker) as long; the two take turns on the GIL. Prints "ready" at start and "done" at the end, then waits for stdin to close."""
import sys
import threading
import time


def hot_function(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFFFFFF
    return x


def cold_function(n):
    return sum(i * i for i in range(n))


def outer_function(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hot_function(20000)


def worker(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        cold_function(20000)


def main():
    seconds = float(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()
    # a second thread: its frames are found through the interpreter's list of thread states
    t = threading.Thread(target=worker, args=(seconds,))
    t.start()
    outer_function(seconds)
    t.join()
    print("done", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
