package compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * POP consume throughput with the stock Java push consumer in POP mode (as RocketPop; the topic/group
 * must be in POP mode first): `PopBench NAMESRV TOPIC GROUP N`. Sends N small messages (batches of
 * 100) before the clock starts, then consumes with CONSUME_SUCCESS (the client acks each) until N
 * distinct messages succeeded; prints one JSON line: the ms from the first message received to the
 * N-th success, and how many deliveries that took.
 */
public final class PopBench {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], group = args[2];
        int n = Integer.parseInt(args[3]);
        Out.run("pop", () -> run(namesrv, topic, group, n));
        System.exit(0);
    }

    static Map<String, Object> run(String namesrv, String topic, String group, int n) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group + "-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(30_000);  // a shared, loaded machine: the default 3 s is too short
        producer.setMqClientApiTimeout(30_000);
        producer.start();
        for (int i = 0; i < n; i += 100) {
            List<Message> batch = new ArrayList<>();
            for (int j = i; j < Math.min(n, i + 100); j++) {
                batch.add(new Message(topic, "pop", ("m" + j).getBytes(StandardCharsets.UTF_8)));
            }
            producer.send(batch);
        }
        producer.shutdown();

        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        AtomicInteger deliveries = new AtomicInteger();
        AtomicLong firstAt = new AtomicLong(), lastAt = new AtomicLong();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setMqClientApiTimeout(30_000);
        consumer.setClientRebalance(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPopInvisibleTime(60_000);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            firstAt.compareAndSet(0, System.nanoTime());
            for (MessageExt m : msgs) {
                deliveries.incrementAndGet();
                seen.put(new String(m.getBody(), StandardCharsets.UTF_8), true);
            }
            if (seen.size() >= n) {
                lastAt.compareAndSet(0, System.nanoTime());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Out.waitFor(() -> lastAt.get() != 0, 180_000);
        consumer.shutdown();
        long ms = lastAt.get() == 0 ? -1 : (lastAt.get() - firstAt.get()) / 1_000_000;
        return Out.map("distinct", seen.size(), "deliveries", deliveries.get(), "ms", ms);
    }
}
