package compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * The stock client with RocketMQ ACL credentials (AclClientRPCHook):
 * `RocketAcl NAMESRV LABEL:send:AK:SK:TOPIC ... LABEL:consume:AK:SK:TOPIC:GROUP:N ...` (AK "-": no hook).
 * Each step prints one JSON line named LABEL: what was sent or consumed, or the error code and remark
 * the client reported.
 */
public final class RocketAcl {
    static String namesrv;

    public static void main(String[] args) throws Exception {
        namesrv = args[0];
        for (int i = 1; i < args.length; i++) {
            String[] s = args[i].split(":", -1);
            RPCHook hook = "-".equals(s[2]) ? null : new AclClientRPCHook(new SessionCredentials(s[2], s[3]));
            if ("send".equals(s[1])) {
                Out.run(s[0], () -> send(s[0], hook, s[4]));
            } else if ("consume".equals(s[1])) {
                Out.run(s[0], () -> consume(hook, s[4], s[5], Integer.parseInt(s[6])));
            } else {
                Out.emit(Out.map("scenario", s[0], "ok", false, "error", List.of("unknown action " + s[1])));
            }
        }
        Out.emit(Out.map("scenario", "end", "ok", true));
        System.exit(0);
    }

    static Map<String, Object> send(String label, RPCHook hook, String topic) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(label + "-pg", hook);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(label);
        p.setSendMsgTimeout(10_000);
        p.start();
        try {
            SendResult r = p.send(new Message(topic, "TagA", label, label.getBytes(StandardCharsets.UTF_8)));
            return Out.map("sent", true, "status", r.getSendStatus().name(), "msg_id", r.getMsgId());
        } catch (MQBrokerException e) {
            return Out.map("sent", false, "code", e.getResponseCode(), "remark", e.getErrorMessage(),
                    "message", e.getMessage());
        } catch (MQClientException e) {
            MQBrokerException broker = e.getCause() instanceof MQBrokerException ? (MQBrokerException) e.getCause() : null;
            return Out.map("sent", false, "code", e.getResponseCode(), "message", e.getMessage(),
                    "remark", broker == null ? null : broker.getErrorMessage(),
                    "broker_code", broker == null ? null : broker.getResponseCode());
        } finally {
            p.shutdown();
        }
    }

    static Map<String, Object> consume(RPCHook hook, String topic, String group, int n) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook, new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(group);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        List<String> bodies = new CopyOnWriteArrayList<>();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            Out.waitFor(() -> bodies.size() >= n, 30_000);
            return Out.map("bodies", new ArrayList<>(bodies));
        } finally {
            c.shutdown();
        }
    }
}
