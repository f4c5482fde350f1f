// HotJava.java - a known hot method for stackprobe's JIT test: hotLoop runs for the given seconds once
// "go" is read; prints "ready" at start and "done" at the end, then waits for stdin to close.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class HotJava {
    static volatile long sink;

    static long hotLoop(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + i;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        double secs = Double.parseDouble(args[0]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        // warm up: hotLoop is JIT-compiled before the perf map is written
        long warm = System.nanoTime() + 300_000_000L;
        while (System.nanoTime() < warm) {
            sink += hotLoop(100000);
        }
        System.out.println("ready");
        System.out.flush();
        in.readLine();
        long end = System.nanoTime() + (long) (secs * 1e9);
        while (System.nanoTime() < end) {
            sink += hotLoop(1000000);
        }
        System.out.println("done");
        System.out.flush();
        in.readLine();
    }
}
