package compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One batch of records to partition 0, each "value[|HEADER=text]" from the arguments: prints
 * "SENT value offset" (RecordMetadata.offset()) for each, then reads the partition from offset
 * `from` until it has `want` records (or 60 s pass): "READ offset value" for each. A header text
 * "+ms" is that many milliseconds from the send (a __STARTDELIVERTIME that the JVM's start cannot spoil).
 * Arguments: bootstrap topic from want record...
 */
public final class KafkaProduceOffsets {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        long from = Long.parseLong(args[2]);
        int want = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("linger.ms", "2000");
        p.put("batch.size", "1000000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        List<String> values = new ArrayList<>();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 4; i < args.length; i++) {
                String[] parts = args[i].split("\\|", 2);
                List<Header> headers = new ArrayList<>();
                if (parts.length == 2) {
                    String[] kv = parts[1].split("=", 2);
                    String text = kv[1].startsWith("+")  // "+ms": that long from now (a deliver time)
                            ? Long.toString(System.currentTimeMillis() + Long.parseLong(kv[1].substring(1))) : kv[1];
                    headers.add(new RecordHeader(kv[0], text.getBytes("UTF-8")));
                }
                values.add(parts[0]);
                sent.add(producer.send(new ProducerRecord<byte[], byte[]>(topic, 0, (byte[]) null, parts[0].getBytes("UTF-8"), headers)));
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
                System.out.println("SENT " + values.get(i) + " " + sent.get(i).get().offset());
            }
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seek(tp, from);
            int got = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (got < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println("READ " + r.offset() + " " + new String(r.value(), "UTF-8"));
                    got++;
                }
            }
        }
        System.out.flush();
    }
}
