package compat;

import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * The fault harness's Java RocketMQ workload (tests/faults/java_load.py; compiled against
 * rocketmq-client 5.x, remoting): a DefaultMQProducer sends unique ints synchronously, value mod the
 * queue count as the queue, no client retries (a duplicate would be the server's), routes re-read every
 * second. ok only on SEND_OK (the SYNC_MASTER contract); another status, a timeout or a client error is
 * info (maybe written); a broker's refusal (MQBrokerException) is fail. One JSON line per operation
 * (invoke, then the outcome), times as FaultsLog says. Runs until its stdin closes.
 *   NAMESRV TOPIC T0 OUT
 */
public class FaultsRocket {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1];
        FaultsLog.open(args[2], args[3]);
        DefaultMQProducer producer = new DefaultMQProducer("faults-java-rmq-producers");
        producer.setNamesrvAddr(namesrv);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(5000);
        producer.setPollNameServerInterval(1000);
        producer.start();
        for (long value = 0; !FaultsLog.stop.get(); value++) {
            FaultsLog.log("invoke", "send", value, "");
            try {
                SendResult r = producer.send(new Message(topic, Long.toString(value).getBytes("UTF-8")),
                    (queues, msg, arg) -> queues.get((int) ((Long) arg % queues.size())), value);
                String rest = ",\"status\":\"" + r.getSendStatus() + "\",\"partition\":" + r.getMessageQueue().getQueueId()
                    + ",\"offset\":" + r.getQueueOffset();
                FaultsLog.log(r.getSendStatus() == SendStatus.SEND_OK ? "ok" : "info", "send", value, rest);
            } catch (MQBrokerException e) {
                FaultsLog.log("fail", "send", value, ",\"error\":" + FaultsLog.quoted(e));
            } catch (Exception e) {
                FaultsLog.log("info", "send", value, ",\"error\":" + FaultsLog.quoted(e));
                FaultsLog.sleep(500);
            }
            FaultsLog.sleep(10);
        }
        producer.shutdown();
        FaultsLog.close();
        System.exit(0);
    }
}
