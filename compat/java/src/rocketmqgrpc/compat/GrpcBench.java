package compat;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Send and receive throughput of the Java gRPC SDK against one endpoint, and the send latency
 * percentiles. Args: endpoints topic group messages bodyBytes sendThreads. One JSON line.
 */
public final class GrpcBench {
    public static void main(String[] args) throws Exception {
        ClientServiceProvider p = ClientServiceProvider.loadService();
        ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(args[0]).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        String topic = args[1], group = args[2];
        int n = Integer.parseInt(args[3]), size = Integer.parseInt(args[4]), threads = Integer.parseInt(args[5]);
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'x');
        long[] latencies = new long[n];
        AtomicInteger next = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        long sendStart, sendEnd;
        try (Producer producer = p.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build()) {
            for (int i = 0; i < 200; i++) producer.send(p.newMessageBuilder().setTopic(topic).setBody(body).build());  // warm-up
            Thread[] workers = new Thread[threads];
            sendStart = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                workers[t] = new Thread(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < n) {
                        Message m = p.newMessageBuilder().setTopic(topic).setBody(body).build();
                        long t0 = System.nanoTime();
                        try {
                            producer.send(m);
                        } catch (Exception e) {
                            failed.incrementAndGet();
                        }
                        latencies[i] = System.nanoTime() - t0;
                    }
                });
                workers[t].start();
            }
            for (Thread w : workers) w.join();
            sendEnd = System.nanoTime();
        }
        int total = n + 200;
        int received = 0;
        long recvStart = System.nanoTime();
        try (SimpleConsumer c = p.newSimpleConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(group)
                .setAwaitDuration(Duration.ofSeconds(2))
                .setSubscriptionExpressions(Map.of(topic, FilterExpression.SUB_ALL)).build()) {
            long deadline = System.currentTimeMillis() + 300_000;
            int empty = 0;
            while (received < total && System.currentTimeMillis() < deadline && empty < 5) {
                java.util.List<MessageView> got = c.receive(32, Duration.ofSeconds(30));
                empty = got.isEmpty() ? empty + 1 : 0;
                for (MessageView m : got) c.ackAsync(m);
                received += got.size();
            }
        }
        long recvEnd = System.nanoTime();
        Arrays.sort(latencies);
        Out.emit(Out.map("scenario", "bench", "ok", true, "messages", n, "body_bytes", size, "threads", threads,
            "send_failed", failed.get(), "send_tps", n / ((sendEnd - sendStart) / 1e9),
            "send_p50_ms", latencies[n / 2] / 1e6, "send_p99_ms", latencies[(int) (n * 0.99)] / 1e6,
            "received", received, "receive_tps", received / ((recvEnd - recvStart) / 1e9)));
        System.exit(0);
    }
}
