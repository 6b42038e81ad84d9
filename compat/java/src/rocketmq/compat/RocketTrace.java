package compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Message traces of the stock remoting client: `RocketTrace NAMESRV PREFIX trace:TRACE_TOPIC|default`.
 * A transactional producer (committed), a plain producer and a push consumer, all with message trace
 * on (enableMsgTrace, customizedTraceTopic), send and consume one message each; then the trace topic
 * is queried by each msgId as mqadmin queryMsgTraceById does (QUERY_MESSAGE with the msgId as key) and
 * the trace records decoded with the client's TraceDataEncoder. Compiled against 4.9.x and 5.x.
 */
public final class RocketTrace {
    static final long WAIT_MS = 60_000;
    static final long SETTLE_MS = 3_000;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0], prefix = args[1];
        for (int i = 2; i < args.length; i++) {
            String[] s = args[i].split(":");
            String topic = s.length > 1 && !s[1].equals("default") ? s[1] : null;
            Out.run(s[0], () -> trace(namesrv, prefix, topic));
        }
        Out.emit(Out.map("scenario", "end", "ok", true));
        System.exit(0);
    }

    static Map<String, Object> trace(String namesrv, String prefix, String traceTopic) throws Exception {
        String topic = prefix + "-traced";
        String queried = traceTopic == null ? "RMQ_SYS_TRACE_TOPIC" : traceTopic;
        DefaultMQProducer reader = new DefaultMQProducer(prefix + "-reader");  // no trace: creates the topic, queries
        reader.setNamesrvAddr(namesrv);
        reader.setInstanceName(prefix + "-reader");
        reader.start();
        try {
            reader.send(msg(topic, "warm-up", "warm-up"));  // the topic exists when the consumer starts
            return traced(namesrv, prefix, traceTopic, topic, queried, reader);
        } finally {
            reader.shutdown();
        }
    }

    static Map<String, Object> traced(String namesrv, String prefix, String traceTopic, String topic, String queried,
                                      DefaultMQProducer reader) throws Exception {
        TransactionMQProducer tx = new TransactionMQProducer(null, prefix + "-tx-pg", null, true, traceTopic);
        tx.setNamesrvAddr(namesrv);
        tx.setInstanceName(prefix + "-tx-pg");
        tx.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        DefaultMQProducer plain = new DefaultMQProducer(prefix + "-pg", true, traceTopic);
        plain.setNamesrvAddr(namesrv);
        plain.setInstanceName(prefix + "-pg");
        Set<String> consumed = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(prefix + "-cg", true, traceTopic);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(prefix + "-cg");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) consumed.add(m.getMsgId());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        // The 5.x client registers its consume trace hook only after the consumer has started (and may
        // have consumed already): the messages are sent once it runs.
        c.start();
        String txId, plainId;
        try {
            Thread.sleep(SETTLE_MS);
            tx.start();
            plain.start();
            try {
                SendResult t = tx.sendMessageInTransaction(msg(topic, "tx-key", "committed"), null);
                txId = t.getMsgId();
                plainId = plain.send(msg(topic, "plain-key", "plain")).getMsgId();
                Thread.sleep(SETTLE_MS);  // the trace dispatcher sends a batch after up to 500 ms; shutdown may drop a later one
            } finally {
                tx.shutdown();
                plain.shutdown();
            }
            String t = txId, p = plainId;
            Out.waitFor(() -> consumed.contains(t) && consumed.contains(p), WAIT_MS);
            Thread.sleep(SETTLE_MS);  // the SubAfter record is written after the listener returns
        } finally {
            c.shutdown();  // flushes the trace dispatcher
        }
        Map<String, Object> txTrace = traceOf(reader, queried, txId, Set.of("Pub", "SubBefore", "SubAfter", "EndTransaction"));
        Map<String, Object> plainTrace = traceOf(reader, queried, plainId, Set.of("Pub", "SubBefore", "SubAfter"));
        return Out.map("consumed", consumed.size(), "tx", txTrace, "plain", plainTrace);
    }

    static Message msg(String topic, String keys, String body) {
        return new Message(topic, "TagT", keys, body.getBytes(StandardCharsets.UTF_8));
    }

    /** The decoded trace records of `msgId` (as queryMsgTraceById lists them), polled until `expected` types are all there. */
    static Map<String, Object> traceOf(DefaultMQProducer reader, String traceTopic, String msgId, Set<String> expected) throws Exception {
        Map<String, Object> found = new TreeMap<>();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        List<String> errors = new ArrayList<>();
        while (System.currentTimeMillis() < deadline) {
            found.clear();
            try {
                QueryResult r = reader.queryMessage(traceTopic, msgId, 64, 0, Long.MAX_VALUE);
                for (MessageExt m : r.getMessageList()) {
                    for (TraceContext ctx : TraceDataEncoder.decoderFromTraceDataString(new String(m.getBody(), StandardCharsets.UTF_8))) {
                        for (TraceBean b : ctx.getTraceBeans()) {
                            if (!msgId.equals(b.getMsgId())) continue;
                            found.put(String.valueOf(ctx.getTraceType()), Out.map("group", ctx.getGroupName(),
                                    "success", ctx.isSuccess(), "topic", b.getTopic(), "keys", b.getKeys(),
                                    "tags", b.getTags(), "trace_topic", m.getTopic(),
                                    "transaction_state", String.valueOf(b.getTransactionState())));
                        }
                    }
                }
            } catch (Exception e) {
                errors.add(String.valueOf(e.getMessage()));
            }
            if (found.keySet().containsAll(expected)) break;
            Thread.sleep(500);
        }
        return Out.map("msg_id", msgId, "types", new ArrayList<>(new TreeSet<>(found.keySet())), "records", found,
                "last_error", errors.isEmpty() ? null : errors.get(errors.size() - 1));
    }
}
