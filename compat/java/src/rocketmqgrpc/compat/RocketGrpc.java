package compat;

import static compat.GrpcClient.body;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The gRPC SDK rocketmq-client-java 5.x against one endpoint (the gateway's --grpc-port or a real
 * RocketMQ proxy). Args: endpoints, topic/group prefix, scenario names. One JSON line per scenario.
 */
public final class RocketGrpc {
    private static final ClientServiceProvider P = GrpcClient.P;
    private static ClientConfiguration cfg;
    private static String prefix;

    public static void main(String[] args) throws Exception {
        cfg = GrpcClient.plaintext(args[0]);
        prefix = args[1];
        for (int i = 2; i < args.length; i++) {
            String s = args[i];
            switch (s) {
                case "ssl":  // the SDK's default: TLS (the certificate is not verified by the SDK)
                    cfg = ClientConfiguration.newBuilder().setEndpoints(args[0])
                        .setRequestTimeout(Duration.ofSeconds(5)).build();
                    break;
                case "normal": Out.run(s, RocketGrpc::normal); break;
                case "fifo": Out.run(s, RocketGrpc::fifo); break;
                case "delay": Out.run(s, RocketGrpc::delay); break;
                case "recall": Out.run(s, RocketGrpc::recall); break;
                case "transaction": Out.run(s, RocketGrpc::transaction); break;
                case "invisible": Out.run(s, RocketGrpc::invisible); break;
                case "push": Out.run(s, RocketGrpc::push); break;
                default: Out.emit(Out.map("scenario", s, "ok", false, "error", List.of("unknown scenario")));
            }
        }
        Out.emit(Out.map("scenario", "end"));
        System.exit(0);
    }

    private static Producer producer(String topic) throws Exception {
        return GrpcClient.producer(cfg, topic);
    }

    private static SimpleConsumer consumer(String group, String topic, String tag) throws Exception {
        return P.newSimpleConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(2))
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression(tag, FilterExpressionType.TAG))).build();
    }

    private static MessageBuilder msg(String topic, String body) {
        return P.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    /** Receive (and ack) until `want` came or the deadline passed; bodies in arrival order. */
    private static List<MessageView> receive(SimpleConsumer c, int want, Duration invisible, boolean ack, long ms)
            throws Exception {
        List<MessageView> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + ms;
        while (got.size() < want && System.currentTimeMillis() < deadline) {
            for (MessageView m : c.receive(16, invisible)) {
                got.add(m);
                if (ack) c.ack(m);
            }
        }
        return got;
    }

    private static List<String> bodies(List<MessageView> views) {
        List<String> out = new ArrayList<>();
        for (MessageView m : views) out.add(body(m));
        return out;
    }

    private static Map<String, Object> normal() throws Exception {
        String topic = prefix + "-normal";
        try (Producer p = producer(topic); SimpleConsumer c = consumer(prefix + "-normal-g", topic, "TA")) {
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                Message m = msg(topic, "m" + i).setTag(i % 2 == 0 ? "TA" : "TB").setKeys("k" + i)
                    .addProperty("n", Integer.toString(i)).build();
                SendReceipt r = p.send(m);
                ids.add(r.getMessageId().toString());
            }
            List<MessageView> got = receive(c, 5, Duration.ofSeconds(30), true, 30000);
            List<Object> seen = new ArrayList<>();
            for (MessageView m : got) {
                int n = Integer.parseInt(m.getProperties().get("n"));
                seen.add(Out.map("body", body(m), "tag", m.getTag().orElse(""), "keys", new ArrayList<>(m.getKeys()),
                    "id_matches", m.getMessageId().toString().equals(ids.get(n)), "attempt", m.getDeliveryAttempt()));
            }
            List<MessageView> after = c.receive(16, Duration.ofSeconds(30));
            return Out.map("received", seen, "after_ack", after.size());
        }
    }

    private static Map<String, Object> fifo() throws Exception {
        String topic = prefix + "-fifo";
        try (Producer p = producer(topic); SimpleConsumer c = consumer(prefix + "-fifo-g", topic, "*")) {
            for (int i = 0; i < 20; i++) p.send(msg(topic, Integer.toString(i)).setMessageGroup("order-1").build());
            List<MessageView> got = receive(c, 20, Duration.ofSeconds(30), true, 30000);
            String group = got.isEmpty() ? "" : got.get(0).getMessageGroup().orElse("");
            return Out.map("bodies", bodies(got), "group", group);
        }
    }

    private static Map<String, Object> delay() throws Exception {
        String topic = prefix + "-delay";
        try (Producer p = producer(topic); SimpleConsumer c = consumer(prefix + "-delay-g", topic, "*")) {
            long due = System.currentTimeMillis() + 3000;
            p.send(msg(topic, "later").setDeliveryTimestamp(due).build());
            List<MessageView> got = receive(c, 1, Duration.ofSeconds(30), true, 20000);
            long at = System.currentTimeMillis();
            return Out.map("bodies", bodies(got), "late_ms", at - due,
                "delivery_timestamp_matches", !got.isEmpty() && got.get(0).getDeliveryTimestamp().orElse(0L) == due);
        }
    }

    /** Two delayed messages; the second is recalled by its handle before it is due: only the first comes. */
    private static Map<String, Object> recall() throws Exception {
        String topic = prefix + "-recall";
        try (Producer p = producer(topic); SimpleConsumer c = consumer(prefix + "-recall-g", topic, "*")) {
            long due = System.currentTimeMillis() + 4000;
            p.send(msg(topic, "kept").setDeliveryTimestamp(due).build());
            SendReceipt gone = p.send(msg(topic, "recalled").setDeliveryTimestamp(due).build());
            RecallReceipt r = p.recallMessage(topic, gone.getRecallHandle());
            // both were due at the same time: once "kept" came, one more long poll (2 s) would bring the other
            List<MessageView> got = receive(c, 1, Duration.ofSeconds(30), true, 12000);
            got.addAll(c.receive(16, Duration.ofSeconds(30)));
            return Out.map("bodies", bodies(got), "handle", gone.getRecallHandle(),
                "id_matches", r.getMessageId().toString().equals(gone.getMessageId().toString()));
        }
    }

    private static Map<String, Object> transaction() throws Exception {
        String topic = prefix + "-tx";
        List<String> checked = new CopyOnWriteArrayList<>();
        try (Producer p = P.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic)
                .setTransactionChecker(view -> {
                    checked.add(body(view));
                    return TransactionResolution.COMMIT;
                }).build();
             SimpleConsumer c = consumer(prefix + "-tx-g", topic, "*")) {
            Transaction t = p.beginTransaction();
            p.send(msg(topic, "committed").build(), t);
            int half_visible = c.receive(16, Duration.ofSeconds(30)).size();
            t.commit();
            t = p.beginTransaction();
            p.send(msg(topic, "rolled-back").build(), t);
            t.rollback();
            Transaction orphan = p.beginTransaction();
            p.send(msg(topic, "checked").build(), orphan);  // never ended: the server checks back
            List<MessageView> got = receive(c, 2, Duration.ofSeconds(30), true, 40000);
            List<String> b = bodies(got);
            Collections.sort(b);
            List<String> after = bodies(c.receive(16, Duration.ofSeconds(30)));
            return Out.map("half_visible", half_visible, "bodies", b, "checked", new ArrayList<>(checked), "after", after);
        }
    }

    private static Map<String, Object> invisible() throws Exception {
        String topic = prefix + "-invisible";
        try (Producer p = producer(topic); SimpleConsumer c = consumer(prefix + "-invisible-g", topic, "*")) {
            p.send(msg(topic, "x").build());
            p.send(msg(topic, "y").build());
            List<MessageView> got = receive(c, 2, Duration.ofSeconds(10), false, 20000);
            MessageView x = null;
            for (MessageView m : got) if (body(m).equals("x")) x = m;
            c.changeInvisibleDuration(x, Duration.ofSeconds(60));
            List<MessageView> again = receive(c, 1, Duration.ofSeconds(30), true, 25000);
            Thread.sleep(1000);
            int more = c.receive(16, Duration.ofSeconds(30)).size();
            return Out.map("first", got.size(), "again", bodies(again),
                "again_attempt", again.isEmpty() ? 0 : again.get(0).getDeliveryAttempt(), "more", more);
        }
    }

    private static Map<String, Object> push() throws Exception {
        String topic = prefix + "-push";
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        try (Producer p = producer(topic);
             PushConsumer pc = P.newPushConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(prefix + "-push-g")
                 .setSubscriptionExpressions(Map.of(topic, FilterExpression.SUB_ALL))
                 .setMessageListener(view -> {
                     String b = body(view);
                     int n = seen.merge(b, 1, Integer::sum);
                     return b.equals("retry-me") && n == 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
                 }).build()) {
            for (int i = 0; i < 5; i++) p.send(msg(topic, "p" + i).build());
            p.send(msg(topic, "retry-me").build());
            Out.waitFor(() -> seen.size() == 6 && seen.getOrDefault("retry-me", 0) >= 2, 60000);
            return Out.map("seen", new java.util.TreeMap<>(seen));
        }
    }
}
