package compat;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.DefaultParser;
import org.apache.commons.cli.Options;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.srvutil.ServerUtil;
import org.apache.rocketmq.tools.command.MQAdminStartup;
import org.apache.rocketmq.tools.command.SubCommand;

/**
 * Several mqadmin commands in one JVM, at the same time: each mqadmin run spends seconds in its client's
 * shutdown (a service thread's 3 s poll) and Netty's quiet period, which one JVM running them in parallel
 * threads pays once. Stdin: one command a line, its arguments tab-separated; an empty line ends a phase
 * (the next phase starts once every command of this one finished). Stdout: one JSON line per command,
 * {"index": i, "ok": bool, "output": what mqadmin would have printed (stdout and stderr)}.
 */
public final class AdminBatch extends MQAdminStartup {
    private static final ThreadLocal<ByteArrayOutputStream> CAPTURE = new ThreadLocal<>();
    private static final PrintStream REAL_OUT = System.out;
    private static final PrintStream REAL_ERR = System.err;

    public static void main(String[] args) {
        try {
            batch();
        } catch (Exception e) {
            e.printStackTrace(REAL_ERR);
            System.exit(1);
        }
        System.exit(0);
    }

    private static void batch() throws Exception {
        PrintStream perThread = new PrintStream(new OutputStream() {
            @Override public void write(int b) {
                ByteArrayOutputStream buf = CAPTURE.get();
                if (buf != null) buf.write(b);
            }

            @Override public void write(byte[] b, int off, int len) {
                ByteArrayOutputStream buf = CAPTURE.get();
                if (buf != null) buf.write(b, off, len);
            }
        }, true, StandardCharsets.UTF_8);
        System.setOut(perThread);
        System.setErr(perThread);
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        initCommand();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<Thread> phase = new ArrayList<>();
        int index = 0;
        for (String line = in.readLine(); ; line = in.readLine()) {
            if (line == null || line.isEmpty()) {
                for (Thread t : phase) t.join();
                phase.clear();
                if (line == null) break;
                continue;
            }
            String[] argv = line.split("\t");
            int i = index++;
            Thread t = new Thread(() -> run(i, argv), "mqadmin-" + i);
            t.start();
            phase.add(t);
        }
        REAL_OUT.flush();
    }

    /**
     * What MQAdminStartup.main0 does for one command, its output captured. A command names its admin
     * client after the current millisecond, so two started in the same one clash ("has created
     * already", before anything is sent): that one is run again.
     */
    private static void run(int index, String[] argv) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        CAPTURE.set(buf);
        boolean ok = false;
        for (int attempt = 0; attempt < 10; attempt++) {
            buf.reset();
            ok = runOnce(argv);
            if (!buf.toString(StandardCharsets.UTF_8).contains("has created already")) break;
            try {
                Thread.sleep(5 + index);
            } catch (InterruptedException e) {
                break;
            }
        }
        String json = Out.json(Out.map("index", index, "ok", ok, "output", buf.toString(StandardCharsets.UTF_8)));
        synchronized (REAL_OUT) {
            REAL_OUT.println(json);
            REAL_OUT.flush();
        }
    }

    private static boolean runOnce(String[] argv) {
        try {
            SubCommand cmd = find(argv[0]).getClass().getDeclaredConstructor().newInstance();
            String[] subArgs = Arrays.copyOfRange(argv, 1, argv.length);
            Options options = ServerUtil.buildCommandlineOptions(new Options());
            CommandLine commandLine = ServerUtil.parseCmdLine("mqadmin " + cmd.commandName(), subArgs,
                cmd.buildCommandlineOptions(options), new DefaultParser());
            if (commandLine == null) throw new IllegalArgumentException("bad arguments: " + String.join(" ", argv));
            if (commandLine.hasOption('n')) {
                System.setProperty(MixAll.NAMESRV_ADDR_PROPERTY, commandLine.getOptionValue('n'));
            }
            cmd.execute(commandLine, options, null);
            return true;
        } catch (Throwable e) {
            System.out.printf("%s command failed%n", argv[0]);
            e.printStackTrace();
            return false;
        }
    }

    private static SubCommand find(String name) {
        for (SubCommand c : SUB_COMMANDS) {
            if (c.commandName().equals(name) || name.equals(c.commandAlias())) return c;
        }
        throw new IllegalArgumentException("no mqadmin command " + name);
    }
}
