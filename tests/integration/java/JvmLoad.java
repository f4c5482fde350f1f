// JvmLoad.java - jvmprobe's ground truth: after "go" on stdin, starts a known number of threads (half
// of them daemons), loads a known number of classes (Gen0..Gen<n-1>) and calls System.gc() a known
// number of times (one more before "ready"), then prints "done". Arguments: threads classes gcs.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class JvmLoad {
    // one Runnable for every thread: a second lambda site would load one more class after "go"
    static final Runnable SLEEPER = JvmLoad::sleepForever;

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]), classes = Integer.parseInt(args[1]), gcs = Integer.parseInt(args[2]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        // warm up everything the second phase uses, so that it loads only the GenN classes: a class
        // by a built name, a daemon and a non-daemon thread, one System.gc()
        load("Warm", -1);
        for (int i = 0; i < 2; i++) {
            Thread w = new Thread(SLEEPER);
            w.setDaemon(i == 0);
            w.start();
        }
        System.gc();
        // the class loader's lock map grows while the GenN classes load: a resize loads a JDK class
        java.util.concurrent.ConcurrentHashMap<Integer, Integer> m = new java.util.concurrent.ConcurrentHashMap<>();
        for (int i = 0; i < 256; i++)
            m.put(i, i);
        System.out.println("ready");
        System.out.flush();
        in.readLine();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(SLEEPER);
            t.setDaemon(i % 2 == 0);
            t.start();
        }
        for (int i = 0; i < classes; i++)
            load("Gen", i);
        for (int i = 0; i < gcs; i++)
            System.gc();
        System.out.println("done");
        System.out.flush();
        in.readLine();
        System.exit(0);
    }

    static void load(String prefix, int i) throws ClassNotFoundException {
        StringBuilder b = new StringBuilder(prefix);
        if (i >= 0)
            b.append(i);
        Class.forName(b.toString());
    }

    static void sleepForever() {
        try {
            Thread.sleep(Long.MAX_VALUE);
        } catch (InterruptedException e) {
        }
    }
}
