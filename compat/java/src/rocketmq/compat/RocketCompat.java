package compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * RocketMQ scenarios for the stock Java remoting client: `RocketCompat NAMESRV PREFIX SCENARIO[:ARG]...`.
 * Each scenario prints one JSON line with what it sent and what it observed; tests/compat asserts on it.
 * The same source is compiled against rocketmq-client 4.9.x and 5.x.
 */
public final class RocketCompat {
    static String namesrv;
    static String prefix;
    static final long WAIT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        namesrv = args[0];
        prefix = args[1];
        for (int i = 2; i < args.length; i++) {
            String[] s = args[i].split(":");
            String name = s[0];
            switch (name) {
                case "pause": Out.pause(); break;
                case "send": Out.run(name, RocketCompat::send); break;
                case "ordered": Out.run(name, RocketCompat::ordered); break;
                case "push_tags": Out.run(name, RocketCompat::pushTags); break;
                case "lite_subscribe": Out.run(name, RocketCompat::liteSubscribe); break;
                case "transaction": Out.run(name, RocketCompat::transaction); break;
                case "reconsume": Out.run(name, RocketCompat::reconsume); break;
                case "sql_filter": Out.run(name, RocketCompat::sqlFilter); break;
                case "delay_level": Out.run(name, RocketCompat::delayLevel); break;
                case "tx_check": Out.run(name, () -> txCheck(Integer.parseInt(s[1]))); break;
                case "dlq": Out.run(name, RocketCompat::dlq); break;
                case "status_hold": Out.run(name, RocketCompat::statusHold); break;
                case "busy_send": Out.run(name, () -> busySend(s[1], Integer.parseInt(s[2]), Long.parseLong(s[3]))); break;
                case "reset_hold": Out.run(name, () -> resetHold(s[1], Integer.parseInt(s[2]), Integer.parseInt(s[3]))); break;
                case "cross_produce": Out.run(name, () -> crossProduce(s[1])); break;
                case "cross_consume": Out.run(name, () -> crossConsume(s[1], s[2], Integer.parseInt(s[3]))); break;
                default: Out.emit(Out.map("scenario", name, "ok", false, "error", List.of("unknown scenario")));
            }
        }
        Out.emit(Out.map("scenario", "end", "ok", true));
        System.exit(0);  // client threads (netty, schedulers) are not all daemons
    }

    // ---- clients ----

    static DefaultMQProducer producer(String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(group);
        p.setSendMsgTimeout(10_000);
        p.start();
        return p;
    }

    static DefaultMQPushConsumer pushConsumer(String group, String topic, String expr) throws Exception {
        DefaultMQPushConsumer c = pushConsumer(group);
        c.subscribe(topic, expr);
        return c;
    }

    /** A push consumer reading from the first offset, not yet subscribed. */
    static DefaultMQPushConsumer pushConsumer(String group) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(group);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    /** Sends `<base>-0..n-1` (body = keys) with tag `tag` and user property `prop` = 0..n-1; the send results' facts. */
    static List<Object> sendNumbered(String topic, String tag, String base, String prop, int n) throws Exception {
        DefaultMQProducer p = producer(topic + "-pg");
        List<Object> sent = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                Message m = msg(topic, tag, base + "-" + i, base + "-" + i);
                m.putUserProperty(prop, String.valueOf(i));
                sent.add(facts(p.send(m)));
            }
        } finally {
            p.shutdown();
        }
        return sent;
    }

    static DefaultLitePullConsumer litePull(String group) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(group);
        c.setAutoCommit(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    static Message msg(String topic, String tags, String keys, String body) {
        return new Message(topic, tags, keys, body.getBytes(StandardCharsets.UTF_8));
    }

    static String body(Message m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    /** A received message as comparable facts (user properties only: system ones differ by broker). */
    static Map<String, Object> facts(MessageExt m) {
        Map<String, Object> user = new TreeMap<>();
        for (Map.Entry<String, String> e : m.getProperties().entrySet()) {
            if (!isSystemProperty(e.getKey())) user.put(e.getKey(), e.getValue());
        }
        return Out.map("body", body(m), "tags", m.getTags(), "keys", m.getKeys(), "queue", m.getQueueId(),
                "broker", m.getBrokerName(), "offset", m.getQueueOffset(), "msg_id", m.getMsgId(), "born", m.getBornTimestamp(),
                "reconsume", m.getReconsumeTimes(), "props", user);
    }

    static boolean isSystemProperty(String k) {
        return k.equals(k.toUpperCase()) || k.equals("MIN_OFFSET") || k.equals("MAX_OFFSET");
    }

    static Map<String, Object> facts(SendResult r) {
        MessageQueue q = r.getMessageQueue();
        return Out.map("status", String.valueOf(r.getSendStatus()), "msg_id", r.getMsgId(), "offset_msg_id", r.getOffsetMsgId(),
                "queue", q.getQueueId(), "broker", q.getBrokerName(), "offset", r.getQueueOffset());
    }

    /** Runs a push consumer until `done` (or the wait ends), `settleMs` longer, then shuts it down (which persists its offsets). */
    static void consumeUntil(DefaultMQPushConsumer c, java.util.function.BooleanSupplier done, long settleMs) throws Exception {
        c.start();
        try {
            Out.waitFor(done, WAIT_MS);
            Thread.sleep(settleMs);
        } finally {
            c.shutdown();
        }
    }

    // ---- scenarios ----

    /** sync, async, oneway and batch sends; read back with an assigned lite pull consumer from the beginning. */
    static Map<String, Object> send() throws Exception {
        String topic = prefix + "-send";
        Map<String, Object> r = new LinkedHashMap<>();
        DefaultMQProducer p = producer(prefix + "-send-pg");
        try {
            List<Object> sync = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                Message m = msg(topic, "TagA", "sync-" + i, "sync-" + i);
                m.putUserProperty("color", "c" + i);
                sync.add(facts(p.send(m)));
            }
            r.put("sync", sync);
            List<Object> async = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch latch = new CountDownLatch(10);
            for (int i = 0; i < 10; i++) {
                p.send(msg(topic, "TagB", "async-" + i, "async-" + i), new SendCallback() {
                    public void onSuccess(SendResult res) {
                        async.add(facts(res));
                        latch.countDown();
                    }

                    public void onException(Throwable e) {
                        async.add(Out.map("error", Out.describe(e)));
                        latch.countDown();
                    }
                });
            }
            r.put("async_done", latch.await(WAIT_MS, TimeUnit.MILLISECONDS));
            r.put("async", new ArrayList<>(async));
            for (int i = 0; i < 5; i++) p.sendOneway(msg(topic, "TagC", "oneway-" + i, "oneway-" + i));
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 10; i++) batch.add(msg(topic, "TagD", "batch-" + i, "batch-" + i));
            r.put("batch", facts(p.send(batch)));
            r.put("publish_queues", p.fetchPublishMessageQueues(topic).size());
        } finally {
            p.shutdown();
        }
        r.put("received", readAssigned(prefix + "-send-reader", topic, got -> got.size() >= 35, 0));
        return r;
    }

    /** Ordered send with a selector by order id; an orderly consumer sees each order's steps in sequence. */
    static Map<String, Object> ordered() throws Exception {
        String topic = prefix + "-order";
        Map<String, Object> r = new LinkedHashMap<>();
        DefaultMQProducer p = producer(prefix + "-order-pg");
        List<Object> sent = new ArrayList<>();
        try {
            for (int i = 0; i < 40; i++) {
                int orderId = i % 4;
                Message m = msg(topic, "TagO", "order-" + orderId, "order-" + orderId + "-" + (i / 4));
                SendResult res = p.send(m, (mqs, message, arg) -> mqs.get((Integer) arg % mqs.size()), orderId);
                sent.add(Out.map("body", "order-" + orderId + "-" + (i / 4), "queue", res.getMessageQueue().getQueueId(),
                        "status", String.valueOf(res.getSendStatus())));
            }
        } finally {
            p.shutdown();
        }
        r.put("sent", sent);
        List<Object> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-order-cg", topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) got.add(Out.map("body", body(m), "queue", m.getQueueId(), "offset", m.getQueueOffset()));
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumeUntil(c, () -> got.size() >= 40, 0);
        r.put("received", new ArrayList<>(got));
        return r;
    }

    /** A concurrent push consumer subscribed to `TagA || TagC` gets exactly those, with keys and properties. */
    static Map<String, Object> pushTags() throws Exception {
        String topic = prefix + "-tags";
        DefaultMQProducer p = producer(prefix + "-tags-pg");
        try {
            for (int i = 0; i < 30; i++) {
                String tag = "Tag" + (char) ('A' + i % 3);
                Message m = msg(topic, tag, "tag-" + i, "tag-" + i + "-" + tag);
                m.putUserProperty("seq", String.valueOf(i));
                p.send(m);
            }
        } finally {
            p.shutdown();
        }
        List<Object> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-tags-cg", topic, "TagA || TagC");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) got.add(facts(m));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumeUntil(c, () -> got.size() >= 20, 2000);  // TagB, which must not come, has had time to
        return Out.map("received", new ArrayList<>(got));
    }

    /** A subscribing lite pull consumer commits; a second one in the same group resumes after the commit. */
    static Map<String, Object> liteSubscribe() throws Exception {
        String topic = prefix + "-lite";
        String group = prefix + "-lite-cg";
        Map<String, Object> r = new LinkedHashMap<>();
        DefaultMQProducer p = producer(prefix + "-lite-pg");
        try {
            for (int i = 0; i < 20; i++) p.send(msg(topic, "TagL", "lite-" + i, "lite-" + i));
            r.put("first", pullSubscribed(topic, group, 20));
            for (int i = 20; i < 25; i++) p.send(msg(topic, "TagL", "lite-" + i, "lite-" + i));
            r.put("second", pullSubscribed(topic, group, 5));
        } finally {
            p.shutdown();
        }
        return r;
    }

    static List<String> pullSubscribed(String topic, String group, int expect) throws Exception {
        DefaultLitePullConsumer c = litePull(group);
        c.subscribe(topic, "*");
        c.start();
        List<String> got = new ArrayList<>();
        try {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (got.size() < expect && System.currentTimeMillis() < deadline) {
                for (MessageExt m : c.poll(500)) got.add(body(m));
            }
            long extra = System.currentTimeMillis() + 1500;  // nothing beyond `expect` may come
            while (System.currentTimeMillis() < extra) {
                for (MessageExt m : c.poll(300)) got.add(body(m));
            }
            c.commitSync();
        } finally {
            c.shutdown();
        }
        Collections.sort(got);
        return got;
    }

    /** Messages with a tag, keys and a user property for a Kafka consumer to read (see ARCHITECTURE.md mapping). */
    static Map<String, Object> crossProduce(String topic) throws Exception {
        DefaultMQProducer p = producer(prefix + "-cross-pg");
        List<Object> sent = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Message m = msg(topic, "TagX", "ck-" + i, "cross-" + i);
                m.putUserProperty("prop", "val-" + i);
                sent.add(facts(p.send(m)));
            }
        } finally {
            p.shutdown();
        }
        return Out.map("sent", sent);
    }

    /** Reads what a Kafka producer wrote, with a tag subscription. */
    static Map<String, Object> crossConsume(String topic, String expr, int expect) throws Exception {
        List<Object> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-cross-cg", topic, expr);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) got.add(facts(m));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumeUntil(c, () -> got.size() >= expect, 1500);
        return Out.map("received", new ArrayList<>(got));
    }

    /** A started transactional producer with `listener`. */
    static TransactionMQProducer txProducer(String group, TransactionListener listener) throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(group);
        p.setTransactionListener(listener);
        p.start();
        return p;
    }

    static Map<String, Object> sendInTransaction(TransactionMQProducer p, Message m, Object arg) throws Exception {
        TransactionSendResult r = p.sendMessageInTransaction(m, arg);
        return Out.map("body", body(m), "status", String.valueOf(r.getSendStatus()),
                "local", String.valueOf(r.getLocalTransactionState()));
    }

    /** Transactional sends: committed half messages become visible, rolled-back ones never do. */
    static Map<String, Object> transaction() throws Exception {
        String topic = prefix + "-tx";
        TransactionMQProducer p = txProducer(prefix + "-tx-pg", new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return (Boolean) arg ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return body(msg).startsWith("commit") ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        List<Object> sent = new ArrayList<>();
        try {
            for (int i = 0; i < 10; i++) {
                boolean commit = i % 2 == 0;
                String b = (commit ? "commit-" : "rollback-") + i;
                sent.add(sendInTransaction(p, msg(topic, "TagT", b, b), commit));
            }
        } finally {
            p.shutdown();
        }
        // A rolled-back message must not show up late: read on for 2 s after the committed ones arrived.
        List<String> got = new ArrayList<>();
        for (Map<String, Object> m : readAssigned(prefix + "-tx-reader", topic, read -> read.size() >= 5, 2000)) {
            got.add((String) m.get("body"));
        }
        Collections.sort(got);
        return Out.map("sent", sent, "received", got);
    }

    /** RECONSUME_LATER sends the message back; it returns (via the group's retry topic) with reconsumeTimes 1. */
    static Map<String, Object> reconsume() throws Exception {
        String topic = prefix + "-rc";
        sendNumbered(topic, "TagR", "rc", "n", 3);
        List<Object> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-rc-cg", topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            boolean later = false;
            for (MessageExt m : msgs) {
                Map<String, Object> f = facts(m);
                f.put("topic", m.getTopic());
                got.add(f);
                later |= m.getReconsumeTimes() == 0;
            }
            return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumeUntil(c, () -> {
            synchronized (got) {
                return got.stream().filter(x -> (Integer) ((Map<?, ?>) x).get("reconsume") >= 1).count() >= 3;
            }
        }, 0);
        return Out.map("received", new ArrayList<>(got));
    }

    // ---- RocketMQ semantics (SQL92, delay levels, transaction check-back, DLQ, consumer status) ----

    /** Messages (facts, topic and receive time) read from the start of every queue of `topic` by an assigned lite
     *  pull consumer, until `done` holds over what was read (or the wait ends), then `settleMs` longer.
     *  seekToBegin right after assign() races the pull tasks assign() starts (a 5.x client race): a queue's
     *  first pull can be handed out twice, or the seek lost. The broker answers both pulls alike, so each
     *  (queue, offset) is kept once, and a seek that read nothing is made again. */
    static List<Map<String, Object>> readAssigned(String group, String topic, java.util.function.Predicate<List<Map<String, Object>>> done,
                                                  long settleMs) throws Exception {
        DefaultLitePullConsumer c = litePull(group);
        c.start();
        Set<String> positions = new HashSet<>();
        List<Map<String, Object>> got = new ArrayList<>();
        try {
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            c.assign(mqs);
            seekAllToBegin(c, mqs);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            long reseekAt = System.currentTimeMillis() + 5_000;
            long settleUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, settleUntil)) {
                for (MessageExt m : c.poll(200)) {
                    // a position is (broker, queue, offset): each broker (a gateway's shard) numbers its queues from 0
                    if (positions.add(m.getBrokerName() + ":" + m.getQueueId() + ":" + m.getQueueOffset())) got.add(received(m));
                }
                if (got.isEmpty() && System.currentTimeMillis() > reseekAt) {
                    seekAllToBegin(c, mqs);
                    reseekAt = System.currentTimeMillis() + 5_000;
                }
                if (settleUntil == Long.MAX_VALUE && done.test(got)) settleUntil = System.currentTimeMillis() + settleMs;
            }
        } finally {
            c.shutdown();
        }
        return got;
    }

    /** seekToBegin on every queue. Its minOffset request is retried (up to 3 times) when the client's own write
     *  to the channel failed (RemotingSendRequestException: the 5.x client closes that channel and opens a new one
     *  on the next call), as an application retries a transient network error; any other error is raised. */
    static void seekAllToBegin(DefaultLitePullConsumer c, Collection<MessageQueue> mqs) throws Exception {
        for (MessageQueue mq : mqs) {
            for (int attempt = 1; ; attempt++) {
                try {
                    c.seekToBegin(mq);
                    break;
                } catch (org.apache.rocketmq.client.exception.MQClientException e) {
                    if (attempt >= 3 || !sendFailed(e)) throw e;
                    Thread.sleep(200);
                }
            }
        }
    }

    static boolean sendFailed(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.apache.rocketmq.remoting.exception.RemotingSendRequestException) return true;
        }
        return false;
    }

    static Map<String, Object> received(MessageExt m) {
        Map<String, Object> f = facts(m);
        f.put("topic", m.getTopic());
        f.put("at", System.currentTimeMillis());
        f.put("store", m.getStoreTimestamp());
        f.put("retry_topic", m.getProperty("RETRY_TOPIC"));
        f.put("origin_msg_id", m.getProperty("ORIGIN_MESSAGE_ID"));
        return f;
    }

    static boolean hasBody(List<Map<String, Object>> got, String b) {
        return got.stream().anyMatch(m -> b.equals(m.get("body")));
    }

    /** User property a = 0..9; `a BETWEEN 3 AND 6` gets exactly 3..6; a malformed expression fails start(). */
    static Map<String, Object> sqlFilter() throws Exception {
        String topic = prefix + "-sql";
        sendNumbered(topic, "TagS", "sql", "a", 10);
        List<Object> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-sql-cg");
        c.subscribe(topic, MessageSelector.bySql("a BETWEEN 3 AND 6"));
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) got.add(facts(m));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumeUntil(c, () -> got.size() >= 4, 2000);  // the unmatched ones have had time to (wrongly) come
        DefaultMQPushConsumer bad = pushConsumer(prefix + "-sqlbad-cg");
        bad.subscribe(topic, MessageSelector.bySql("a > AND"));
        bad.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        List<String> badError = null;
        try {
            bad.start();
        } catch (Exception e) {
            badError = Out.describe(e);
        } finally {
            bad.shutdown();
        }
        return Out.map("received", new ArrayList<>(got), "bad_started", badError == null, "bad_error", badError);
    }

    /** A message at delay level 2 next to an undelayed one; send and receive times for both. */
    static Map<String, Object> delayLevel() throws Exception {
        String topic = prefix + "-delay";
        DefaultMQProducer p = producer(prefix + "-delay-pg");
        long sentAt;
        Map<String, Object> nowSent, delayedSent;
        try {
            nowSent = facts(p.send(msg(topic, "TagD", "now", "now")));
            Message d = msg(topic, "TagD", "delayed", "delayed");
            d.setDelayTimeLevel(2);
            sentAt = System.currentTimeMillis();
            delayedSent = facts(p.send(d));
        } finally {
            p.shutdown();
        }
        List<Map<String, Object>> got = readAssigned(prefix + "-delay-reader", topic, g -> hasBody(g, "delayed"), 1000);
        return Out.map("sent_at", sentAt, "now_sent", nowSent, "delayed_sent", delayedSent, "received", got);
    }

    /** Local transactions answer UNKNOW; the check-back commits `commit-late` and keeps `unknown` UNKNOW.
     *  The producer stays up until `unknown` was checked `max` times and a few more intervals passed. */
    static Map<String, Object> txCheck(int max) throws Exception {
        String topic = prefix + "-txc";
        Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        TransactionMQProducer p = txProducer(prefix + "-txc-pg", new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.computeIfAbsent(body(msg), k -> new AtomicInteger()).incrementAndGet();
                return body(msg).equals("commit-late") ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.UNKNOW;
            }
        });
        List<Object> sent = new ArrayList<>();
        List<Map<String, Object>> got;
        try {
            for (String b : List.of("commit-late", "unknown")) {
                sent.add(sendInTransaction(p, msg(topic, "TagT", b, b), null));
            }
            got = readAssigned(prefix + "-txc-reader", topic, g -> hasBody(g, "commit-late"), 0);
            Out.waitFor(() -> checks.containsKey("unknown") && checks.get("unknown").get() >= max, WAIT_MS);
            // Read again once the checks are over: "unknown" must still be invisible 4 s after "commit-late" is seen.
            got.addAll(readAssigned(prefix + "-txc-reader2", topic, g -> hasBody(g, "commit-late"), 4000));
        } finally {
            p.shutdown();
        }
        Map<String, Object> counts = new TreeMap<>();
        checks.forEach((k, v) -> counts.put(k, v.get()));
        return Out.map("sent", sent, "checks", counts, "received", got);
    }

    /** A consumer that always answers RECONSUME_LATER with maxReconsumeTimes 2; the message then sits in %DLQ%group. */
    static Map<String, Object> dlq() throws Exception {
        String topic = prefix + "-dlq";
        String group = prefix + "-dlq-cg";
        DefaultMQProducer p = producer(prefix + "-dlq-pg");
        Map<String, Object> sent;
        try {
            Message m = msg(topic, "TagQ", "dlq-0", "dlq-0");
            m.putUserProperty("n", "0");
            sent = facts(p.send(m));
        } finally {
            p.shutdown();
        }
        List<Object> deliveries = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(group, topic, "*");
        c.setMaxReconsumeTimes(2);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) deliveries.add(received(m));
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        consumeUntil(c, () -> deliveries.size() >= 3, 3000);  // a fourth delivery would be wrong
        List<Map<String, Object>> dead = readAssigned(prefix + "-dlq-reader", "%DLQ%" + group, g -> !g.isEmpty(), 1000);
        return Out.map("sent", sent, "deliveries", new ArrayList<>(deliveries), "dlq", dead);
    }

    /** A push consumer that has consumed one message stays up across a `pause` (the driver runs mqadmin consumerStatus). */
    static Map<String, Object> statusHold() throws Exception {
        String topic = prefix + "-st";
        DefaultMQProducer p = producer(prefix + "-st-pg");
        try {
            p.send(msg(topic, "TagS", "st-0", "st-0"));
        } finally {
            p.shutdown();
        }
        List<Object> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-st-cg", topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) got.add(body(m));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            Out.waitFor(() -> !got.isEmpty(), WAIT_MS);
            Out.pause();
        } finally {
            c.shutdown();
        }
        return Out.map("client_id", c.buildMQClientId(), "received", new ArrayList<>(got));
    }

    /**
     * A push consumer (group PREFIX-rs-cg) consumes `first` messages of `topic`, then holds across a
     * `pause` (the driver resets the group's offsets by time with mqadmin) and waits until it has
     * received `total` messages in all: the broker's RESET_CONSUMER_CLIENT_OFFSET makes it consume again.
     */
    static Map<String, Object> resetHold(String topic, int first, int total) throws Exception {
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = pushConsumer(prefix + "-rs-cg", topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) got.add(body(m));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        int before;
        try {
            Out.waitFor(() -> got.size() >= first, WAIT_MS);
            Thread.sleep(1000);  // nothing more arrives
            before = got.size();
            Out.pause();
            Out.waitFor(() -> got.size() >= total, WAIT_MS);
            Thread.sleep(1000);
        } finally {
            c.shutdown();
        }
        return Out.map("client_id", c.buildMQClientId(), "before_reset", before, "received", new ArrayList<>(got));
    }

    /**
     * `n` sync sends to `topic`, `pauseMs` apart, from a producer with the default retries (2): each
     * send's outcome (ok, or the MQBrokerException code and message) and how many attempts the
     * producer made in all (a SendMessageHook sees every attempt): 4.9 does not retry SYSTEM_BUSY,
     * 5.2+ does (ISSUE #5838) and gives up after 1 + retryTimesWhenSendFailed attempts.
     */
    static Map<String, Object> busySend(String topic, int n, long pauseMs) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(prefix + "-busy-pg");
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(prefix + "-busy-pg");
        p.setSendMsgTimeout(10_000);
        AtomicInteger attempts = new AtomicInteger();
        p.getDefaultMQProducerImpl().registerSendMessageHook(new org.apache.rocketmq.client.hook.SendMessageHook() {
            public String hookName() { return "count"; }
            public void sendMessageBefore(org.apache.rocketmq.client.hook.SendMessageContext c) { attempts.incrementAndGet(); }
            public void sendMessageAfter(org.apache.rocketmq.client.hook.SendMessageContext c) {}
        });
        p.start();
        List<Object> outcomes = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                Map<String, Object> o;
                try {
                    SendResult r = p.send(msg(topic, "TagB", "busy-" + i, "busy-" + i));
                    o = Out.map("ok", true, "status", String.valueOf(r.getSendStatus()));
                } catch (org.apache.rocketmq.client.exception.MQBrokerException e) {
                    o = Out.map("ok", false, "code", e.getResponseCode(), "remark", e.getErrorMessage());
                } catch (org.apache.rocketmq.client.exception.MQClientException e) {
                    // 5.2+ retries SYSTEM_BUSY, then gives up with the last refusal as the cause
                    o = Out.map("ok", false, "gave_up", true);
                    if (e.getCause() instanceof org.apache.rocketmq.client.exception.MQBrokerException) {
                        org.apache.rocketmq.client.exception.MQBrokerException b =
                            (org.apache.rocketmq.client.exception.MQBrokerException) e.getCause();
                        o.put("code", b.getResponseCode());
                        o.put("remark", b.getErrorMessage());
                    }
                }
                o.put("ms", (System.nanoTime() - t0) / 1_000_000);
                outcomes.add(o);
                Thread.sleep(pauseMs);
            }
        } finally {
            p.shutdown();
        }
        return Out.map("outcomes", outcomes, "attempts", attempts.get());
    }
}
