package compat;

import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The history log of the fault harness's Java workloads (FaultsKafka, FaultsRocket): one JSON line per
 * operation event (invoke, ok, fail, info), times in seconds of the monotonic clock since the harness's
 * t0 (System.nanoTime is CLOCK_MONOTONIC on Linux, as Python's time.monotonic); `stop` is set when
 * stdin closes (the harness's signal to finish). No client library here: both programs share it.
 */
public final class FaultsLog {
    static PrintWriter out;
    static double t0;
    static final AtomicBoolean stop = new AtomicBoolean();

    private FaultsLog() { }

    static void open(String t0Seconds, String path) throws Exception {
        t0 = Double.parseDouble(t0Seconds);
        out = new PrintWriter(path, "UTF-8");
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) { }
            } catch (Exception ignored) { }
            stop.set(true);
        });
        watcher.setDaemon(true);
        watcher.start();
    }

    static double now() {
        return Math.round((System.nanoTime() / 1e9 - t0) * 1000) / 1000.0;
    }

    static synchronized void log(String type, String f, long value, String rest) {
        out.println("{\"type\":\"" + type + "\",\"f\":\"" + f + "\",\"value\":" + value + ",\"time\":" + now() + rest + "}");
        out.flush();
    }

    static synchronized void close() {
        out.close();
    }

    static String quoted(Throwable e) {
        String s = e.getClass().getSimpleName() + ": " + e.getMessage();
        return "\"" + s.replace("\\", "\\\\").replace("\"", "'").replace("\n", " ").replace("\t", " ") + "\"";
    }

    static void sleep(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }
}
