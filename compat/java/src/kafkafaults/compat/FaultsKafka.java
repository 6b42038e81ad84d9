package compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The fault harness's Java kafka-clients workloads (tests/faults/java_load.py): each operation is one
 * JSON line (invoke, then ok / fail / info) in the harness's history format, times in seconds of the
 * monotonic clock since the harness's t0 (System.nanoTime is CLOCK_MONOTONIC, as Python's monotonic).
 * Runs until its stdin closes.
 *   producer BOOTSTRAP TOPIC PARTITIONS T0 OUT: an idempotent acks=all producer of unique ints, value
 *     mod PARTITIONS as the partition; a send refused before it left (send() threw) is fail, any
 *     completion with an exception is info (the batch may have been written).
 *   group BOOTSTRAP TOPIC PARTITIONS T0 OUT PROTOCOL GROUP: a consumer (group.protocol classic or
 *     consumer, KIP-848) that commits its positions synchronously every 0.5 s; a commit the coordinator
 *     refused (CommitFailed, RebalanceInProgress) is fail, a timeout or anything else info.
 */
public class FaultsKafka {
    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        FaultsLog.open(args[4], args[5]);
        if (mode.equals("producer")) produce(bootstrap, topic, partitions);
        else group(bootstrap, topic, args[6], args[7]);
        FaultsLog.close();
        System.exit(0);
    }

    static void log(String type, String f, long value, String rest) {
        FaultsLog.log(type, f, value, rest);
    }

    static String quoted(Throwable e) {
        return FaultsLog.quoted(e);
    }

    static void produce(String bootstrap, String topic, int partitions) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "10000");
        p.put("max.block.ms", "5000");
        p.put("metadata.max.age.ms", "1000");
        p.put("reconnect.backoff.max.ms", "1000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        for (long value = 0; !FaultsLog.stop.get(); value++) {
            final long v = value;
            final int partition = (int) (value % partitions);
            String where = ",\"partition\":" + partition;
            log("invoke", "send", v, where);
            try {
                producer.send(new ProducerRecord<>(topic, partition, null, Long.toString(v)), (meta, e) -> {
                    if (e == null) log("ok", "send", v, where + ",\"offset\":" + meta.offset());
                    else log("info", "send", v, where + ",\"error\":" + quoted(e));
                });
            } catch (Exception e) {
                log("fail", "send", v, where + ",\"error\":" + quoted(e));
            }
            FaultsLog.sleep(20);
        }
        producer.close(Duration.ofSeconds(60));
    }

    static void group(String bootstrap, String topic, String protocol, String groupId) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", groupId);
        c.put("group.protocol", protocol);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        if (protocol.equals("classic")) {
            c.put("session.timeout.ms", "10000");
            c.put("heartbeat.interval.ms", "1000");
        }
        c.put("request.timeout.ms", "10000");
        c.put("default.api.timeout.ms", "10000");
        c.put("metadata.max.age.ms", "1000");
        c.put("reconnect.backoff.max.ms", "1000");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        consumer.subscribe(List.of(topic));
        long next = System.nanoTime() + 500_000_000L, value = 0;
        while (!FaultsLog.stop.get()) {
            try {
                consumer.poll(Duration.ofMillis(100));
            } catch (Exception e) {
                FaultsLog.sleep(100);  // a poll's error (e.g. a fenced member) is the client's to recover from
            }
            if (System.nanoTime() < next) continue;
            next = System.nanoTime() + 500_000_000L;
            Map<TopicPartition, OffsetAndMetadata> offsets = new java.util.HashMap<>();
            Map<Integer, Long> shown = new TreeMap<>();
            try {
                for (TopicPartition tp : consumer.assignment()) {
                    long at = consumer.position(tp, Duration.ofSeconds(5));
                    offsets.put(tp, new OffsetAndMetadata(at));
                    shown.put(tp.partition(), at);
                }
            } catch (Exception e) {
                continue;
            }
            if (offsets.isEmpty()) continue;
            List<String> pairs = new ArrayList<>();
            shown.forEach((k, v) -> pairs.add("\"" + k + "\":" + v));
            String carried = ",\"offsets\":{" + String.join(",", pairs) + "}";
            log("invoke", "commit", value, carried);
            try {
                consumer.commitSync(offsets, Duration.ofSeconds(10));
                log("ok", "commit", value, carried);
            } catch (CommitFailedException | RebalanceInProgressException e) {
                log("fail", "commit", value, carried + ",\"error\":" + quoted(e));
            } catch (TimeoutException e) {
                log("info", "commit", value, carried + ",\"error\":" + quoted(e));
            } catch (Exception e) {
                log("info", "commit", value, carried + ",\"error\":" + quoted(e));
            }
            value++;
        }
        try { consumer.close(Duration.ofSeconds(10)); } catch (Exception ignored) { }
    }
}
