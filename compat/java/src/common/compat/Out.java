package compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;

/** One JSON line per scenario on stdout, so the pytest side asserts on facts, not on log text. */
public final class Out {
    private Out() {}

    /** Runs one scenario; a failure is reported with its stack, never hidden, and the next scenario still runs. */
    public static void run(String name, Callable<Map<String, Object>> body) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("scenario", name);
        try {
            Map<String, Object> result = body.call();
            line.put("ok", true);
            line.putAll(result);
        } catch (Throwable e) {
            line.put("ok", false);
            line.put("error", describe(e));
        }
        emit(line);
    }

    /** Lets the driving test act between scenarios (e.g. restart the gateway): waits for one stdin line. */
    public static void pause() throws Exception {
        emit(map("scenario", "pause"));
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    }

    public static synchronized void emit(Map<String, Object> line) {
        System.out.println(json(line));
        System.out.flush();
    }

    /** Exception class, message, cause chain and the top stack frames. */
    public static List<String> describe(Throwable e) {
        List<String> out = new ArrayList<>();
        for (Throwable t = e; t != null && out.size() < 40; t = t.getCause()) {
            out.add(t.toString());
            StackTraceElement[] st = t.getStackTrace();
            for (int i = 0; i < Math.min(st.length, 12); i++) out.add("  at " + st[i]);
            if (t.getCause() == t) break;
        }
        return out;
    }

    public static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    public static String hex(byte[] b) {
        if (b == null) return null;
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    /** Polls a condition until it holds or the deadline passes; returns whether it held. */
    public static boolean waitFor(BooleanSupplier cond, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (cond.getAsBoolean()) return true;
            Thread.sleep(50);
        }
        return cond.getAsBoolean();
    }

    public static String json(Object o) {
        StringBuilder sb = new StringBuilder();
        write(sb, o);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String) {
            quote(sb, (String) o);
        } else if (o instanceof Number || o instanceof Boolean) {
            sb.append(o);
        } else if (o instanceof byte[]) {
            quote(sb, hex((byte[]) o));
        } else if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                quote(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Collection<?>) o) {
                if (!first) sb.append(',');
                first = false;
                write(sb, x);
            }
            sb.append(']');
        } else {
            quote(sb, o.toString());
        }
    }

    private static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }
}
