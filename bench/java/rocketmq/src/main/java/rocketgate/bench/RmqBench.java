package rocketgate.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/**
 * Native RocketMQ send/consume TPS, for any server that speaks RocketMQ remoting (the reference
 * broker or the gateway). rocketmq-example's Benchmark classes are not on Maven Central for 5.x, so
 * this does the same measurement: N threads doing synchronous sends of fixed-size bodies for a fixed
 * time, then a push consumer reading the topic back. Prints one JSON line on stdout.
 *
 *   produce NAMESRV TOPIC SECONDS THREADS BODY_BYTES [WARMUP_SECONDS [REPS]]   (one line per rep)
 *   consume NAMESRV TOPIC GROUP EXPECTED TIMEOUT_SECONDS [REPS]                     (one line per rep)
 */
public final class RmqBench {

    public static void main(String[] args) throws Exception {
        System.setProperty("rocketmq.client.logUseSlf4j", "false");
        if (args.length >= 6 && args[0].equals("produce")) {
            double warmup = args.length > 6 ? Double.parseDouble(args[6]) : 0;
            int reps = args.length > 7 ? Integer.parseInt(args[7]) : 1;
            produce(args[1], args[2], Double.parseDouble(args[3]), Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]), warmup, reps);
        } else if (args.length >= 6 && args[0].equals("consume")) {
            int reps = args.length > 6 ? Integer.parseInt(args[6]) : 1;
            for (int rep = 0; rep < reps; rep++) {
                // each repetition is a new consumer group, so it reads the topic from the start again
                consume(args[1], args[2], args[3] + "-" + rep, Long.parseLong(args[4]), Double.parseDouble(args[5]));
            }
        } else {
            System.err.println("usage: produce NAMESRV TOPIC SECONDS THREADS BODY_BYTES | consume NAMESRV TOPIC GROUP EXPECTED TIMEOUT_SECONDS");
            System.exit(2);
        }
        System.exit(0);
    }

    static void produce(String namesrv, String topic, double seconds, int threads, int size, double warmup,
            int reps) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("rgbench_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10_000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'x');
        // Route lookup and topic creation happen on the first send.
        producer.send(new Message(topic, body));
        for (int rep = 0; rep < reps; rep++) {
            // Only the first window has a warm-up (JIT, connections); its sends are not counted.
            window(producer, topic, body, threads, rep == 0 ? warmup : 0, seconds);
        }
        producer.shutdown();
    }

    /** One measured window of `seconds`: THREADS synchronous senders; prints one JSON line. */
    static void window(DefaultMQProducer producer, String topic, byte[] body, int threads, double warmup,
            double seconds) throws Exception {
        AtomicLong failed = new AtomicLong();
        List<long[]> perThread = new ArrayList<>();
        long[] counts = new long[threads];
        long start = System.nanoTime() + (long) (warmup * 1e9);
        long deadline = start + (long) (seconds * 1e9);
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            final int id = t;
            final long[] lat = new long[1 << 20];
            perThread.add(lat);
            Thread th = new Thread(() -> {
                long n = 0;
                try {
                    while (System.nanoTime() < deadline) {
                        long t0 = System.nanoTime();
                        boolean counted = t0 >= start;
                        try {
                            SendResult r = producer.send(new Message(topic, body));
                            if (r.getSendStatus() != SendStatus.SEND_OK && counted) {
                                failed.incrementAndGet();
                            }
                        } catch (Exception e) {
                            if (counted) {
                                failed.incrementAndGet();
                            }
                            continue;
                        }
                        if (counted) {
                            lat[(int) (n & (lat.length - 1))] = System.nanoTime() - t0;
                            n++;
                        }
                    }
                } finally {
                    counts[id] = n;
                    done.countDown();
                }
            });
            th.setDaemon(true);
            th.start();
        }
        done.await();
        double elapsed = (System.nanoTime() - start) / 1e9;
        long total = 0;
        List<Long> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            total += counts[t];
            long keep = Math.min(counts[t], perThread.get(t).length);
            for (int i = 0; i < keep; i++) {
                all.add(perThread.get(t)[i]);
            }
        }
        long[] sorted = all.stream().mapToLong(Long::longValue).sorted().toArray();
        System.out.printf("{\"sent\": %d, \"failed\": %d, \"seconds\": %.3f, \"tps\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f}%n",
                total, failed.get(), elapsed, total / elapsed, pct(sorted, 0.50), pct(sorted, 0.99), pct(sorted, 0.999));
        System.out.flush();
    }

    static double pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return -1;
        }
        int i = (int) Math.min(sorted.length - 1, Math.floor(q * sorted.length));
        return sorted[i] / 1e6;
    }

    static void consume(String namesrv, String topic, String group, long expected, double timeout) throws Exception {
        AtomicLong count = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setInstanceName(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPullBatchSize(32);
        consumer.setConsumeMessageBatchMaxSize(32);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.nanoTime();
            first.compareAndSet(0, now);
            last.set(now);
            count.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long start = System.nanoTime();
        consumer.start();
        long deadline = start + (long) (timeout * 1e9);
        while (count.get() < expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        long n = count.get();
        double span = first.get() == 0 ? 0 : (last.get() - first.get()) / 1e9;
        double total = (System.nanoTime() - start) / 1e9;
        consumer.shutdown();
        System.out.flush();
        System.out.printf("{\"received\": %d, \"expected\": %d, \"seconds\": %.3f, \"wall_seconds\": %.3f, \"tps\": %.1f}%n",
                n, expected, span, total, span > 0 ? n / span : 0.0);
        System.out.flush();
    }
}
