"""test_stackprobe_interp.py - stackprobe and interpreted or JIT-compiled code: Java methods named through the
perf map HotSpot writes on `jcmd <pid> Compiler.perfmap` (Debian's OpenJDK 17, program compiled here with
javac)."""
import os
import shutil
import subprocess
import tempfile
import time

from harness import ROOT, check
from test_stackprobe import Standalone, folded

JAVA_SRC = os.path.join(ROOT, "tests", "integration", "java", "HotJava.java")
JAVA_SECONDS = 3


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
    sp = None
    try:
        check(java.stdout.readline().strip() == "ready", "HotJava ready")
        r = subprocess.run(["jcmd", str(java.pid), "Compiler.perfmap"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and os.path.exists(perfmap), "jcmd Compiler.perfmap: %s %s" % (r.stdout, r.stderr))
        with open(perfmap) as f:
            check("HotJava.hotLoop" in f.read(), "hotLoop compiled and in the perf map")
        sp = Standalone(tmp, ["--pid", str(java.pid), "-P", "oncpu", "--svg-period", "600", "--store-period", "1",
                              "--flame-dir", flame, "--svg-dir", os.path.join(tmp, "svg"), "-t", "1"])
        java.stdin.write("go\n")
        java.stdin.flush()
        check(java.stdout.readline().strip() == "done", "HotJava done")
        time.sleep(1.2)  # one drain after the end
        sp.stop()
        sp = None
    finally:
        if sp:
            sp.proc.kill()
        try:
            java.stdin.close()
        except BrokenPipeError:
            pass
        try:
            java.wait(10)
        except subprocess.TimeoutExpired:
            java.kill()
            java.wait()
        if os.path.exists(perfmap):
            os.unlink(perfmap)
    st = folded(flame, "oncpu")
    mine = {s: v for s, v in st.items() if s.startswith("[%d] java;" % java.pid)}
    total = sum(mine.values())
    hot = sum(v for s, v in mine.items() if "long HotJava.hotLoop(long)" in s.split(";"))
    leaf_hot = sum(v for s, v in mine.items() if s.split(";")[-1] == "long HotJava.hotLoop(long)")
    print("java: %d samples, %d through HotJava.hotLoop (%d as the leaf); top stacks: %r" %
          (total, hot, leaf_hot, sorted(mine.items(), key=lambda kv: -kv[1])[:3]))
    check(total >= 100, "the JVM was sampled: %d" % total)
    # the main thread spins in hotLoop for JAVA_SECONDS; the JIT and GC threads are idle by then
    check(hot >= 0.6 * total, "samples in HotJava.hotLoop: %d of %d" % (hot, total))
    shutil.rmtree(tmp, ignore_errors=True)


test_java_jit_method_names.timeout = 90
