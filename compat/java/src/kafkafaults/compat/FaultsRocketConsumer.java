package compat;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The fault harness's Java RocketMQ consumer workload (tests/faults/java_load.py; rocketmq-client 5.x,
 * remoting): a DefaultMQPushConsumer in a clustering group, orderly per queue, from the first offset,
 * routes re-read every second, reads the topic FaultsRocket writes. Each delivery is one JSON line
 * (type "ok", f "receive": the value, the message's queue offset and broker); the client commits its
 * offsets itself. Once stdin closes it keeps consuming until nothing came for IDLE_MS (at most
 * DRAIN_MS), so what was sent before the end has had its chance to arrive.
 *   NAMESRV TOPIC GROUP T0 OUT
 */
public class FaultsRocketConsumer {
    static final long IDLE_MS = 10_000, DRAIN_MS = 120_000;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], group = args[2];
        FaultsLog.open(args[3], args[4]);
        AtomicLong last = new AtomicLong(System.nanoTime());
        AtomicLong seq = new AtomicLong();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollNameServerInterval(1000);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
            for (MessageExt m : msgs) {
                long value;
                try {
                    value = Long.parseLong(new String(m.getBody(), "UTF-8"));
                } catch (Exception e) {
                    value = -1;  // not a value of FaultsRocket: "unexpected" to the checker
                }
                FaultsLog.log("ok", "receive", value, ",\"delivery\":" + seq.getAndIncrement() + ",\"offset\":"
                    + m.getQueueOffset() + ",\"queue\":" + m.getQueueId() + ",\"broker\":\"" + m.getBrokerName() + "\"");
                last.set(System.nanoTime());
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumer.start();
        while (!FaultsLog.stop.get()) {
            FaultsLog.sleep(100);
        }
        long stopped = System.nanoTime();
        last.set(Math.max(last.get(), stopped));
        while ((System.nanoTime() - last.get()) / 1_000_000 < IDLE_MS && (System.nanoTime() - stopped) / 1_000_000 < DRAIN_MS) {
            FaultsLog.sleep(200);
        }
        consumer.shutdown();
        FaultsLog.close();
        System.exit(0);
    }
}
