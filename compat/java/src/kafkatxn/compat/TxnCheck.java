package compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions through the stock Java producer (kafka-clients 4.x: transactions v2 when the broker
 * finalizes transaction.version=2): commit, abort, offsets in a transaction, a zombie fenced, and what a
 * read_committed consumer sees. Prints one "key=value" line per fact, compared by
 * tests/kafka/test_transactions_v2.py between Apache Kafka and the gateway.
 * Args: bootstrap topic transactionalId group
 */
public class TxnCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], tid = args[2], group = args[3];
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            Map<String, String> configs = args.length > 4 ? Map.of("diskless.enable", args[4]) : Map.of();  // args[4]: a diskless topic
            admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 1, (short) 1).configs(configs))).all().get();
            KafkaProducer<String, String> first = producer(bootstrap, tid);
            first.initTransactions();
            first.beginTransaction();
            for (String v : List.of("c1", "c2", "c3")) first.send(new ProducerRecord<>(topic, 0, null, v));
            first.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(42)), new ConsumerGroupMetadata(group));
            first.commitTransaction();
            first.beginTransaction();
            for (String v : List.of("a1", "a2")) first.send(new ProducerRecord<>(topic, 0, null, v));
            first.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(99)), new ConsumerGroupMetadata(group));
            first.abortTransaction();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, null, "c4"));
            first.commitTransaction();
            System.out.println("epoch_after_three=" + admin.describeTransactions(List.of(tid)).description(tid).get().producerEpoch());

            KafkaProducer<String, String> second = producer(bootstrap, tid);
            second.initTransactions();  // fences the first
            String zombie = "none";
            try {
                first.beginTransaction();
                first.send(new ProducerRecord<>(topic, 0, null, "z1")).get();
                first.commitTransaction();
            } catch (Exception e) {
                zombie = "refused";
            }
            System.out.println("zombie=" + zombie);
            first.close(Duration.ZERO);
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, null, "c5"));
            second.commitTransaction();
            second.close();

            OffsetAndMetadata committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp);
            System.out.println("committed_offset=" + (committed == null ? -1 : committed.offset()));
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", "read_committed");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen.size() < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) seen.add(r.value());
            }
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(1000))) seen.add(r.value());
        }
        System.out.println("read_committed=" + String.join(",", seen));
    }

    private static KafkaProducer<String, String> producer(String bootstrap, String tid) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }
}
