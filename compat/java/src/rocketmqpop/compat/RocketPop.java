package compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * POP consumption with the stock Java rocketmq-client 5.x push consumer (clientRebalance=false, so
 * the broker's QUERY_ASSIGNMENT decides; the topic/group must be set to POP mode first, e.g. with
 * `mqadmin setConsumeMode`): `RocketPop NAMESRV TOPIC GROUP N SCENARIO`.
 * Scenario `ack`: send N messages, consume with CONSUME_SUCCESS (the client acks each).
 * Scenario `nack`: send N, answer RECONSUME_LATER on the first delivery (the client changes the
 * invisible time to 10 s), CONSUME_SUCCESS on the next. Prints one JSON line per scenario.
 */
public final class RocketPop {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], group = args[2], scenario = args[4];
        int n = Integer.parseInt(args[3]);
        Out.run(scenario, () -> run(namesrv, topic, group, n, scenario.equals("nack")));
        System.exit(0);
    }

    static Map<String, Object> run(String namesrv, String topic, String group, int n, boolean nackFirst) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group + "-producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        for (int i = 0; i < n; i++) {
            producer.send(new Message(topic, "pop", ("m" + i).getBytes(StandardCharsets.UTF_8)));
        }
        producer.shutdown();

        Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        Map<String, Integer> maxReconsume = new ConcurrentHashMap<>();
        AtomicInteger withReceipt = new AtomicInteger();
        AtomicInteger succeeded = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setClientRebalance(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPopInvisibleTime(20_000);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            boolean later = false;
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                deliveries.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
                maxReconsume.merge(body, m.getReconsumeTimes(), Math::max);
                if (m.getProperty("POP_CK") != null) {
                    withReceipt.incrementAndGet();
                }
                later |= nackFirst && m.getReconsumeTimes() == 0;
            }
            if (later) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            succeeded.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        Out.waitFor(() -> deliveries.size() >= n && succeeded.get() >= n, 60_000);
        Thread.sleep(3_000);  // acknowledged messages must not come again
        consumer.shutdown();

        int total = 0;
        List<Integer> counts = new ArrayList<>();
        for (AtomicInteger c : deliveries.values()) {
            total += c.get();
            counts.add(c.get());
        }
        return Out.map("distinct", deliveries.size(), "deliveries", total, "succeeded", succeeded.get(),
            "with_receipt", withReceipt.get(), "max_reconsume_times",
            maxReconsume.values().stream().mapToInt(Integer::intValue).max().orElse(-1),
            "min_reconsume_times", maxReconsume.values().stream().mapToInt(Integer::intValue).min().orElse(-1));
    }
}
