package compat;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A Jepsen-style transactional workload (elle: every value unique, every transaction's reads and
 * writes logged) for bench/txn_check.py. Producer threads run transactions that first poll a
 * read_committed consumer (the reads) and then write 1-3 unique values to random partitions, then
 * commit or (one in four) abort; a failed commit is logged as "unknown". Optionally a zombie: a second
 * instance of producer 0's transactional id starts midway and fences the first. At the end a
 * read_committed reader polls every partition from the start to the end. Compiled against
 * kafka-clients 4.x (transactions v2) or 3.9 (v1). One JSON line per transaction and per final poll.
 * Args: bootstrap topic partitions producers txnsPerProducer txnTimeoutMs seed outFile zombie(0|1)
 */
public class TxnWorkload {
    static PrintWriter out;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]), producers = Integer.parseInt(args[3]);
        int txns = Integer.parseInt(args[4]), txnTimeout = Integer.parseInt(args[5]);
        long seed = Long.parseLong(args[6]);
        boolean zombie = args[8].equals("1");
        out = new PrintWriter(args[7], "UTF-8");
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            } catch (Exception e) {
                // already there
            }
        }
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < producers; i++) {
            final int p = i;
            threads.add(new Thread(() -> run(bootstrap, topic, partitions, "wl-" + p, "p" + p, txns, txnTimeout, seed + p)));
        }
        if (zombie)
            threads.add(new Thread(() -> {
                sleep(4000);
                run(bootstrap, topic, partitions, "wl-0", "z0", Math.max(2, txns / 4), txnTimeout, seed + 1000);
            }));
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        finalRead(bootstrap, topic, partitions);
        out.close();
    }

    static void sleep(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }

    static synchronized void log(String line) {
        out.println(line);
        out.flush();
    }

    static String triple(int partition, long offset, String value) {
        return "[" + partition + "," + offset + ",\"" + value + "\"]";
    }

    static KafkaProducer<String, String> producer(String bootstrap, String tid, int txnTimeout) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("transaction.timeout.ms", String.valueOf(txnTimeout));
        p.put("delivery.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        p.put("max.block.ms", "20000");
        p.put("reconnect.backoff.max.ms", "1000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        producer.initTransactions();
        return producer;
    }

    static KafkaConsumer<String, String> reader(String bootstrap, String topic, int partitions) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("request.timeout.ms", "10000");
        c.put("default.api.timeout.ms", "20000");
        c.put("reconnect.backoff.max.ms", "1000");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        return consumer;
    }

    static void run(String bootstrap, String topic, int partitions, String tid, String name, int txns, int txnTimeout, long seed) {
        Random random = new Random(seed);
        KafkaProducer<String, String> producer = null;
        KafkaConsumer<String, String> consumer = null;
        for (int t = 0; t < txns; t++) {
            String id = name + "-" + t;
            List<String> reads = new ArrayList<>(), writes = new ArrayList<>();
            String outcome;
            String error = "";
            try {
                if (consumer == null) consumer = reader(bootstrap, topic, partitions);
                if (producer == null) producer = producer(bootstrap, tid, txnTimeout);
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100)))
                    reads.add(triple(r.partition(), r.offset(), r.value()));
                producer.beginTransaction();
                int n = 1 + random.nextInt(3);
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                List<String> values = new ArrayList<>();
                for (int j = 0; j < n; j++) {
                    String value = id + "-" + j;
                    values.add(value);
                    sent.add(producer.send(new ProducerRecord<>(topic, random.nextInt(partitions), null, value)));
                }
                for (int j = 0; j < n; j++) {
                    RecordMetadata m = sent.get(j).get();
                    writes.add(triple(m.partition(), m.offset(), values.get(j)));
                }
                if (random.nextInt(4) == 0) {
                    producer.abortTransaction();
                    outcome = "abort";
                } else {
                    producer.commitTransaction();
                    outcome = "commit";
                }
            } catch (Exception e) {
                Throwable cause = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                error = cause.getClass().getSimpleName();
                outcome = "unknown";  // the end may or may not have happened: the checker learns it from the reads
                if (producer != null) {
                    try {
                        if (!(cause instanceof ProducerFencedException)) {
                            producer.abortTransaction();
                            outcome = "abort";
                        }
                    } catch (Exception again) {
                        outcome = "unknown";
                    }
                    if (!outcome.equals("abort")) {
                        try { producer.close(Duration.ofSeconds(5)); } catch (Exception ignored) { }
                        producer = null;
                    }
                }
                if (writes.isEmpty() && outcome.equals("unknown")) outcome = "unknown";
                sleep(200);
            }
            log("{\"kind\":\"txn\",\"id\":\"" + id + "\",\"tid\":\"" + tid + "\",\"outcome\":\"" + outcome
                + "\",\"error\":\"" + error + "\",\"reads\":" + reads + ",\"writes\":" + writes + "}");
        }
        if (producer != null) try { producer.close(Duration.ofSeconds(5)); } catch (Exception ignored) { }
        if (consumer != null) try { consumer.close(Duration.ofSeconds(5)); } catch (Exception ignored) { }
    }

    static void finalRead(String bootstrap, String topic, int partitions) {
        try (KafkaConsumer<String, String> consumer = reader(bootstrap, topic, partitions)) {
            Map<TopicPartition, Long> end = new HashMap<>(consumer.endOffsets(consumer.assignment()));
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                List<String> got = new ArrayList<>();
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500)))
                    got.add(triple(r.partition(), r.offset(), r.value()));
                if (!got.isEmpty()) log("{\"kind\":\"poll\",\"reader\":\"final\",\"records\":" + got + "}");
                boolean done = true;
                for (Map.Entry<TopicPartition, Long> e : end.entrySet())
                    if (consumer.position(e.getKey()) < e.getValue()) done = false;
                if (done && got.isEmpty()) break;
            }
            log("{\"kind\":\"end\",\"offsets\":{" + String.join(",", end.entrySet().stream()
                .map(e -> "\"" + e.getKey().partition() + "\":" + e.getValue()).toList()) + "}}");
        }
    }
}
