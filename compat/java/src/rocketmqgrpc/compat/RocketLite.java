package compat;

import static compat.GrpcClient.body;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.consumer.OffsetOption;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * RocketMQ 5.4/5.5 features through the gRPC SDK rocketmq-client-java 5.2: priority messages (RIP-80)
 * and lite topics with the lite push consumer (RIP-83). Args: endpoints, topic/group prefix, scenarios.
 * One JSON line per scenario (the same program runs against the RocketMQ 5.5 proxy and the gateway).
 */
public final class RocketLite {
    private static final ClientServiceProvider P = GrpcClient.P;
    private static ClientConfiguration cfg;
    private static String prefix;

    public static void main(String[] args) throws Exception {
        cfg = GrpcClient.plaintext(args[0]);
        prefix = args[1];
        for (int i = 2; i < args.length; i++) {
            String s = args[i];
            switch (s) {
                case "priority": Out.run(s, RocketLite::priority); break;
                case "priority_on_normal": Out.run(s, RocketLite::priorityOnNormal); break;
                case "lite": Out.run(s, RocketLite::lite); break;
                case "lite_bad_name": Out.run(s, RocketLite::liteBadName); break;
                case "lite_offset": Out.run(s, RocketLite::liteOffset); break;
                case "lite_group_attributes": Out.run(s, RocketLite::liteGroupAttributes); break;
                case "fifo_retry": Out.run(s, RocketLite::fifoRetry); break;
                default: Out.emit(Out.map("scenario", s, "ok", false, "error", List.of("unknown scenario")));
            }
        }
        Out.emit(Out.map("scenario", "end"));
        System.exit(0);
    }

    private static Producer producer(String topic) throws Exception {
        return GrpcClient.producer(cfg, topic);
    }

    /** Priorities 0..3 sent lowest first, then received by one SimpleConsumer: the arrival order. */
    private static Map<String, Object> priority() throws Exception {
        String topic = prefix + "-priority";
        try (Producer p = producer(topic)) {
            for (int round = 0; round < 2; round++) {
                for (int prio = 0; prio < 4; prio++) {
                    p.send(P.newMessageBuilder().setTopic(topic).setBody(("p" + prio + "-" + round).getBytes())
                        .setPriority(prio).build());
                }
            }
        }
        List<String> order = new ArrayList<>();
        List<Integer> priorities = new ArrayList<>();
        try (SimpleConsumer c = P.newSimpleConsumerBuilder().setClientConfiguration(cfg)
                .setConsumerGroup(prefix + "-priority-g").setAwaitDuration(Duration.ofSeconds(2))
                .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG))).build()) {
            long deadline = System.currentTimeMillis() + 30000;
            while (order.size() < 8 && System.currentTimeMillis() < deadline) {
                for (MessageView m : c.receive(32, Duration.ofSeconds(30))) {
                    order.add(body(m));
                    priorities.add(m.getPriority().orElse(-1));
                    c.ack(m);
                }
            }
        }
        return Out.map("order", order, "priorities", priorities);
    }

    /** A priority message to a NORMAL topic: what the server answers. */
    private static Map<String, Object> priorityOnNormal() throws Exception {
        String topic = prefix + "-normal";
        try (Producer p = producer(topic)) {
            p.send(P.newMessageBuilder().setTopic(topic).setBody("x".getBytes()).setPriority(1).build());
            return Out.map("sent", true);
        } catch (Exception e) {
            return Out.map("sent", false, "error", Out.describe(e));
        }
    }

    /** A lite push consumer subscribed to two of three lite topics; then one swapped for a fourth at run time. */
    private static Map<String, Object> lite() throws Exception {
        String topic = prefix + "-lite";
        Map<String, List<String>> seen = new ConcurrentHashMap<>();
        List<String> liteOfMessage = new CopyOnWriteArrayList<>();
        try (Producer p = producer(topic);
             LitePushConsumer c = P.newLitePushConsumerBuilder().setClientConfiguration(cfg).bindTopic(topic)
                 .setConsumerGroup(prefix + "-lite-g")
                 .setMessageListener(view -> {
                     String b = body(view);
                     seen.computeIfAbsent(b.substring(0, b.indexOf('-')), k -> new CopyOnWriteArrayList<>()).add(b);
                     liteOfMessage.add(view.getLiteTopic().orElse("") + "=" + b.substring(0, b.indexOf('-')));
                     return ConsumeResult.SUCCESS;
                 }).build()) {
            c.subscribeLite("s1");
            c.subscribeLite("s2");
            Thread.sleep(2000);
            for (int i = 0; i < 10; i++) {
                for (String lite : List.of("s1", "s2", "s3")) {
                    p.send(P.newMessageBuilder().setTopic(topic).setLiteTopic(lite).setBody((lite + "-" + i).getBytes()).build());
                }
            }
            Out.waitFor(() -> total(seen) >= 20, 30000);
            Thread.sleep(2000);
            Map<String, Object> first = new TreeMap<>(seen);
            List<String> subscribed = new ArrayList<>(new java.util.TreeSet<>(c.getLiteTopicSet()));
            c.unsubscribeLite("s1");
            c.subscribeLite("s4");
            Thread.sleep(2000);
            seen.clear();
            for (int i = 0; i < 5; i++) {
                for (String lite : List.of("s1", "s4")) {
                    p.send(P.newMessageBuilder().setTopic(topic).setLiteTopic(lite).setBody((lite + "-" + i).getBytes()).build());
                }
            }
            Out.waitFor(() -> total(seen) >= 5, 30000);
            Thread.sleep(2000);
            boolean tagged = true;
            for (String s : liteOfMessage) {
                String[] kv = s.split("=");
                tagged &= kv.length == 2 && kv[0].equals(kv[1]);
            }
            return Out.map("first", first, "subscribed", subscribed, "after_change", new TreeMap<>(seen),
                "lite_topic_on_messages", tagged);
        }
    }

    /**
     * Late subscriptions with an offset option (subscribeLite(name, OffsetOption)): each lite topic has
     * messages 0..4 (0..2 sent before a timestamp, 3..4 after) when a new group subscribes it, then
     * message 5 is sent; what each option delivers.
     */
    private static Map<String, Object> liteOffset() throws Exception {
        String topic = prefix + "-lite";
        Map<String, List<String>> seen = new ConcurrentHashMap<>();
        Map<String, OffsetOption> options = new LinkedHashMap<>();
        options.put("omin", OffsetOption.MIN_OFFSET);
        options.put("omax", OffsetOption.MAX_OFFSET);
        options.put("olast", OffsetOption.LAST_OFFSET);
        options.put("otail", OffsetOption.ofTailN(2));
        options.put("oat", OffsetOption.ofOffset(3));
        options.put("odefault", null);
        long between;
        try (Producer p = producer(topic)) {
            for (int i = 0; i < 5; i++) {
                if (i == 3) {  // one clock (one machine): a few milliseconds apart are enough
                    Thread.sleep(200);
                    between = System.currentTimeMillis();
                    options.put("otime", OffsetOption.ofTimestamp(between));
                    Thread.sleep(200);
                }
                for (String lite : List.of("omin", "omax", "olast", "otail", "oat", "odefault", "otime")) {
                    p.send(P.newMessageBuilder().setTopic(topic).setLiteTopic(lite).setBody((lite + "-" + i).getBytes()).build());
                }
            }
            try (LitePushConsumer c = P.newLitePushConsumerBuilder().setClientConfiguration(cfg).bindTopic(topic)
                     .setConsumerGroup(prefix + "-lo-g")
                     .setMessageListener(view -> {
                         String b = body(view);
                         seen.computeIfAbsent(b.substring(0, b.indexOf('-')), k -> new CopyOnWriteArrayList<>()).add(b);
                         return ConsumeResult.SUCCESS;
                     }).build()) {
                for (Map.Entry<String, OffsetOption> e : options.entrySet()) {
                    if (e.getValue() == null) c.subscribeLite(e.getKey());
                    else c.subscribeLite(e.getKey(), e.getValue());
                }
                Thread.sleep(3000);
                for (String lite : options.keySet()) {
                    p.send(P.newMessageBuilder().setTopic(topic).setLiteTopic(lite).setBody((lite + "-5").getBytes()).build());
                }
                Out.waitFor(() -> {
                    for (String lite : options.keySet()) {
                        List<String> got = seen.get(lite);
                        if (got == null || !got.contains(lite + "-5")) return false;
                    }
                    return true;
                }, 30000);
                Thread.sleep(3000);
            }
        }
        return Out.map("received", new TreeMap<>(seen));
    }

    /** What a lite push consumer of `group` bound to `topic` gets: subscribing lite topics l0..l{n-1} in turn, the first refusal. */
    private static Map<String, Object> subscribeMany(String group, String topic, int n) {
        List<String> subscribed = new ArrayList<>();
        try (LitePushConsumer c = P.newLitePushConsumerBuilder().setClientConfiguration(cfg).bindTopic(topic)
                 .setConsumerGroup(group).setMessageListener(view -> ConsumeResult.SUCCESS).build()) {
            for (int i = 0; i < n; i++) {
                c.subscribeLite("l" + i);
                subscribed.add("l" + i);
            }
            return Out.map("subscribed", subscribed, "error", null);
        } catch (Exception e) {
            return Out.map("subscribed", subscribed, "error", Out.describe(e));
        }
    }

    /**
     * Lite group attributes: a group with lite.sub.client.quota 2 (a third subscription), a group bound
     * to another parent topic, a group with no lite.bind.topic.
     */
    private static Map<String, Object> liteGroupAttributes() throws Exception {
        String topic = prefix + "-lite";
        return Out.map("quota", subscribeMany(prefix + "-quota-g", topic, 3),
            "other_topic", subscribeMany(prefix + "-other-g", topic, 1),
            "unbound", subscribeMany(prefix + "-unbound-g", topic, 1));
    }

    /** FIFO: an unacknowledged message blocks its group until it comes again; then the rest in order. */
    private static Map<String, Object> fifoRetry() throws Exception {
        String topic = prefix + "-fifo";
        try (Producer p = producer(topic)) {
            for (int i = 0; i < 5; i++) {
                p.send(P.newMessageBuilder().setTopic(topic).setMessageGroup("g1").setBody(("f" + i).getBytes()).build());
            }
        }
        try (SimpleConsumer c = P.newSimpleConsumerBuilder().setClientConfiguration(cfg)
                .setConsumerGroup(prefix + "-fifo-g").setAwaitDuration(Duration.ofSeconds(2))
                .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG))).build()) {
            List<MessageView> first = List.of();
            long deadline = System.currentTimeMillis() + 20000;
            while (first.isEmpty() && System.currentTimeMillis() < deadline) first = c.receive(1, Duration.ofSeconds(10));
            List<String> blocked = new ArrayList<>();
            for (MessageView m : c.receive(32, Duration.ofSeconds(10))) blocked.add(body(m));
            Thread.sleep(10500);
            List<MessageView> again = List.of();
            deadline = System.currentTimeMillis() + 20000;
            while (again.isEmpty() && System.currentTimeMillis() < deadline) again = c.receive(1, Duration.ofSeconds(30));
            for (MessageView m : again) c.ack(m);
            List<String> rest = new ArrayList<>();
            deadline = System.currentTimeMillis() + 20000;
            while (rest.size() < 4 && System.currentTimeMillis() < deadline) {
                for (MessageView m : c.receive(32, Duration.ofSeconds(30))) {
                    rest.add(body(m));
                    c.ack(m);
                }
            }
            return Out.map("first", first.isEmpty() ? "" : body(first.get(0)), "blocked", blocked,
                "again", again.isEmpty() ? "" : body(again.get(0)),
                "again_attempt", again.isEmpty() ? 0 : again.get(0).getDeliveryAttempt(), "rest", rest);
        }
    }

    private static int total(Map<String, List<String>> seen) {
        int n = 0;
        for (List<String> l : seen.values()) n += l.size();
        return n;
    }

    /** A lite topic name with characters outside [%|a-zA-Z0-9_-] and one of 200 characters. */
    private static Map<String, Object> liteBadName() throws Exception {
        String topic = prefix + "-lite";
        Map<String, Object> out = new TreeMap<>();
        try (Producer p = producer(topic)) {
            for (String lite : List.of("bad name!", "x".repeat(200))) {
                String key = lite.length() > 20 ? "long" : "chars";
                try {
                    p.send(P.newMessageBuilder().setTopic(topic).setLiteTopic(lite).setBody("x".getBytes()).build());
                    out.put(key, "sent");
                } catch (Exception e) {
                    out.put(key, Out.describe(e));
                }
            }
        }
        return out;
    }
}
