"""test_stackprobe_interp.py - stackprobe and interpreted or JIT-compiled code: Java methods named through the
perf map HotSpot writes on `jcmd <pid> Compiler.perfmap` (Debian's OpenJDK 17, program compiled here with
javac); Python functions of Debian's CPython 3.11 read from the interpreter's thread states in BPF
(tests/integration/scripts/py_hot.py, a known hot function and a second thread)."""
import os
import shutil
import subprocess
import tempfile
import time

from harness import ROOT, check, end_input, proc_cpu_seconds
from test_stackprobe import Standalone, folded

JAVA_SRC = os.path.join(ROOT, "tests", "integration", "java", "HotJava.java")
PY_HOT = os.path.join(ROOT, "tests", "integration", "scripts", "py_hot.py")
DEBIAN_PYTHON = "/usr/bin/python3.11"
PY_SECONDS = 3
JAVA_SECONDS = 3


def run_profiled(tmp, flame, proc, what, prepare=None):
    """proc (it prints "ready", works on "go" and prints "done", exits at the end of its input) profiled
    on-CPU by a standalone stackprobe from before its work to one drain after; prepare() is called once
    it is ready, before the probe starts. Returns the CPU seconds proc used on "go"; proc has exited."""
    sp = None
    try:
        check(proc.stdout.readline().strip() == "ready", "%s ready" % what)
        if prepare:
            prepare()
        sp = Standalone(tmp, ["--pid", str(proc.pid), "-P", "oncpu", "--svg-period", "600", "--store-period", "1",
                              "--flame-dir", flame, "--svg-dir", os.path.join(tmp, "svg"), "-t", "1"])
        cpu0 = proc_cpu_seconds(proc.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        check(proc.stdout.readline().strip() == "done", "%s done" % what)
        cpu = proc_cpu_seconds(proc.pid) - cpu0
        time.sleep(1.2)  # one drain after the end
        sp.stop()
        sp = None
        return cpu
    finally:
        if sp:
            sp.proc.kill()
        end_input(proc, 10)


def test_java_jit_method_names():
    """A JVM whose hot method is JIT-compiled: after `jcmd <pid> Compiler.perfmap`, stackprobe's on-CPU
    graph names the method (HotSpot's 0x-prefixed perf map format) and most of the JVM's samples are in
    it, as the program spends its time there."""
    for tool in ("java", "javac", "jcmd"):
        check(shutil.which(tool), "%s installed (scripts/install-deps.sh)" % tool)
    tmp = tempfile.mkdtemp(prefix="gg-stack-java-")
    flame = os.path.join(tmp, "flame")
    shutil.copy(JAVA_SRC, tmp)
    subprocess.run(["javac", "-d", ".", "HotJava.java"], cwd=tmp, check=True, capture_output=True, timeout=120)
    # frame pointers in JIT code: the walk goes on past the compiled method into the interpreter
    java = subprocess.Popen(["java", "-XX:+PreserveFramePointer", "-Xmx64m", "-XX:+UseSerialGC", "-cp", tmp,
                             "HotJava", str(JAVA_SECONDS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    perfmap = "/tmp/perf-%d.map" % java.pid

    def perf_map():
        r = subprocess.run(["jcmd", str(java.pid), "Compiler.perfmap"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and os.path.exists(perfmap), "jcmd Compiler.perfmap: %s %s" % (r.stdout, r.stderr))
        with open(perfmap) as f:
            check("HotJava.hotLoop" in f.read(), "hotLoop compiled and in the perf map")
    try:
        jvm_cpu = run_profiled(tmp, flame, java, "HotJava", perf_map)
    finally:
        if os.path.exists(perfmap):
            os.unlink(perfmap)
    st = folded(flame, "oncpu")
    mine = {s: v for s, v in st.items() if s.startswith("[%d] java;" % java.pid)}
    total = sum(mine.values())
    hot = sum(v for s, v in mine.items() if "long HotJava.hotLoop(long)" in s.split(";"))
    leaf_hot = sum(v for s, v in mine.items() if s.split(";")[-1] == "long HotJava.hotLoop(long)")
    print("java: %d samples, %d through HotJava.hotLoop (%d as the leaf); top stacks: %r" %
          (total, hot, leaf_hot, sorted(mine.items(), key=lambda kv: -kv[1])[:3]))
    # one sample per 10 ms of the JVM's CPU time (on a loaded machine it gets less than its 3 s)
    check(total >= max(10, 0.5 * jvm_cpu * 100), "the JVM was sampled: %d samples for %.2f s of CPU" % (total, jvm_cpu))
    # the main thread spins in hotLoop for JAVA_SECONDS; the JIT and GC threads are idle by then
    check(hot >= 0.6 * total, "samples in HotJava.hotLoop: %d of %d" % (hot, total))
    shutil.rmtree(tmp, ignore_errors=True)


test_java_jit_method_names.timeout = 90


def test_python_frames():
    """Debian's python3.11 running py_hot.py: the on-CPU graph has the Python functions with their file
    (py:qualname (file)) in call order, most of the process's samples in hot_function under
    outer_function, and the second thread's worker -> cold_function (found through the list of thread
    states, as it does not hold the GIL when the main thread does)."""
    check(os.path.exists(DEBIAN_PYTHON), "Debian's python3.11 installed")
    tmp = tempfile.mkdtemp(prefix="gg-stack-py-")
    flame = os.path.join(tmp, "flame")
    py = subprocess.Popen([DEBIAN_PYTHON, PY_HOT, str(PY_SECONDS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    run_profiled(tmp, flame, py, "py_hot")
    st = folded(flame, "oncpu")
    mine = {s: v for s, v in st.items() if s.startswith("[%d] " % py.pid)}
    total = sum(mine.values())
    hot_path = "py:main (py_hot.py);py:outer_function (py_hot.py);py:hot_function (py_hot.py)"
    hot = sum(v for s, v in mine.items() if "py:hot_function (py_hot.py)" in s.split(";"))
    hot_full = sum(v for s, v in mine.items() if hot_path in s)
    cold = sum(v for s, v in mine.items() if "py:worker (py_hot.py);py:cold_function (py_hot.py)" in s)
    py_any = sum(v for s, v in mine.items() if ";py:" in s)
    print("python: %d samples, %d with Python frames, %d in hot_function (%d under main;outer_function), "
          "%d in the worker thread's cold_function; top: %r" %
          (total, py_any, hot, hot_full, cold, sorted(mine.items(), key=lambda kv: -kv[1])[:2]))
    check(total >= 50, "the interpreter was sampled: %d" % total)
    # main thread in hot_function, the worker in cold_function, both for PY_SECONDS, taking turns on the GIL
    check(hot + cold >= 0.8 * total, "samples in hot_function or cold_function: %d of %d" % (hot + cold, total))
    check(hot >= 0.3 * total, "samples in hot_function: %d of %d" % (hot, total))
    check(hot_full == hot, "hot_function always under main;outer_function: %d of %d" % (hot_full, hot))
    check(cold >= 0.1 * total, "the second thread's Python frames: %d of %d" % (cold, total))
    shutil.rmtree(tmp, ignore_errors=True)


test_python_frames.timeout = 60
