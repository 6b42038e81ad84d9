package compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka scenarios for the stock Java client: `KafkaCompat BOOTSTRAP PREFIX SCENARIO...`.
 * Each scenario prints one JSON line with what it sent and what it observed; tests/compat asserts on it.
 * The same source is compiled against kafka-clients 3.9.x and 4.x.
 */
public final class KafkaCompat {
    static String bootstrap;
    static String prefix;
    static final long WAIT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        prefix = args[1];
        for (int i = 2; i < args.length; i++) {
            String s = args[i];
            switch (s) {
                case "pause": Out.pause(); break;
                case "codecs": Out.run(s, KafkaCompat::codecs); break;
                case "idempotent": Out.run(s, KafkaCompat::idempotent); break;
                case "group": Out.run(s, KafkaCompat::group); break;
                case "commit1": Out.run(s, KafkaCompat::commit1); break;
                case "commit2": Out.run(s, KafkaCompat::commit2); break;
                case "seek": Out.run(s, KafkaCompat::seek); break;
                case "times": Out.run(s, KafkaCompat::times); break;
                case "admin": Out.run(s, KafkaCompat::adminScenario); break;
                case "too_large": Out.run(s, KafkaCompat::tooLarge); break;
                case "retry_start": Out.run(s, KafkaCompat::retryStart); break;
                case "retry_finish": Out.run(s, KafkaCompat::retryFinish); break;
                default: Out.emit(Out.map("scenario", s, "ok", false, "error", List.of("unknown scenario")));
            }
        }
        Out.emit(Out.map("scenario", "end", "ok", true));
    }

    // ---- clients ----

    static Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static KafkaProducer<byte[], byte[]> producer(Object... kv) {
        Properties p = common();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        for (int i = 0; i < kv.length; i += 2) p.put(kv[i], kv[i + 1]);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(String group, Object... kv) {
        Properties p = common();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        for (int i = 0; i < kv.length; i += 2) p.put(kv[i], kv[i + 1]);
        return new KafkaConsumer<>(p);
    }

    static Admin admin() {
        Properties p = common();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(p);
    }

    static void createTopic(String name, int partitions) throws Exception {
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
    }

    static byte[] b(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] x) {
        return x == null ? null : new String(x, StandardCharsets.UTF_8);
    }

    /** A record as comparable facts: key/value/header values in hex, so binary content is exact. */
    static Map<String, Object> facts(Integer partition, Long offset, Long ts, byte[] key, byte[] value, Iterable<Header> headers) {
        List<List<String>> hs = new ArrayList<>();
        for (Header h : headers) hs.add(Arrays.asList(h.key(), Out.hex(h.value())));
        return Out.map("partition", partition, "offset", offset, "timestamp", ts,
                "key", Out.hex(key), "value", Out.hex(value), "headers", hs);
    }

    static Map<String, Object> facts(ConsumerRecord<byte[], byte[]> r) {
        return facts(r.partition(), r.offset(), r.timestamp(), r.key(), r.value(), r.headers());
    }

    /** Reads `count` records (or until the wait ends) from the given partitions, from their beginning. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(Collection<TopicPartition> tps, int count) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(null)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (out.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out;
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < n; i++) tps.add(new TopicPartition(topic, i));
        return tps;
    }

    // ---- scenarios ----

    /** Keys, null keys/values, binary and repeated headers, explicit CreateTime, with every codec. */
    static Map<String, Object> codecs() throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            String topic = prefix + "-codec-" + codec;
            createTopic(topic, 1);
            List<Map<String, Object>> sent = new ArrayList<>();
            long base = System.currentTimeMillis() - 60_000;
            try (KafkaProducer<byte[], byte[]> p = producer(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                    ProducerConfig.LINGER_MS_CONFIG, "20")) {
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                List<ProducerRecord<byte[], byte[]>> recs = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    RecordHeaders hs = new RecordHeaders();
                    if (i % 2 == 0) {
                        hs.add("bin", new byte[] {0, 1, 2, (byte) 0xff, (byte) i});
                        hs.add("rep", b("a"));
                        hs.add("rep", b("b"));
                        hs.add("empty", new byte[0]);
                    }
                    byte[] key = i == 3 ? null : b("key-" + i);
                    byte[] value = i == 5 ? null : b("value-" + i + "-" + codec + "-" + "x".repeat(300));
                    recs.add(new ProducerRecord<>(topic, 0, base + i * 10L, key, value, hs));
                }
                for (ProducerRecord<byte[], byte[]> r : recs) fs.add(p.send(r));
                p.flush();
                for (int i = 0; i < recs.size(); i++) {
                    ProducerRecord<byte[], byte[]> r = recs.get(i);
                    RecordMetadata md = fs.get(i).get();
                    sent.add(facts(md.partition(), md.offset(), r.timestamp(), r.key(), r.value(), r.headers()));
                }
            }
            List<Map<String, Object>> got = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : readAll(List.of(new TopicPartition(topic, 0)), sent.size())) got.add(facts(r));
            result.put(codec, Out.map("sent", sent, "received", got));
        }
        return result;
    }

    /** The default producer (idempotence on since 3.0) and an explicitly idempotent one with 5 in flight. */
    static Map<String, Object> idempotent() throws Exception {
        String topic = prefix + "-idem";
        createTopic(topic, 3);
        Map<Integer, List<String>> sent = new TreeMap<>();
        List<String> configs = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            Object[] cfg = round == 0 ? new Object[0] : new Object[] {
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true", ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5",
                ProducerConfig.RETRIES_CONFIG, String.valueOf(Integer.MAX_VALUE), ProducerConfig.BATCH_SIZE_CONFIG, "1024"};
            configs.add(round == 0 ? "default" : "explicit");
            try (KafkaProducer<byte[], byte[]> p = producer(cfg)) {
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                List<String> values = new ArrayList<>();
                for (int i = 0; i < 300; i++) {
                    String v = "r" + round + "-" + i + "-" + "y".repeat(40);
                    values.add(v);
                    fs.add(p.send(new ProducerRecord<>(topic, b("k" + (i % 7)), b(v))));
                }
                p.flush();
                for (int i = 0; i < fs.size(); i++) {
                    RecordMetadata md = fs.get(i).get();
                    sent.computeIfAbsent(md.partition(), k -> new ArrayList<>()).add(md.offset() + ":" + values.get(i));
                }
            }
        }
        for (List<String> l : sent.values()) l.sort((x, y) -> Long.compare(Long.parseLong(x.split(":")[0]), Long.parseLong(y.split(":")[0])));
        Map<Integer, List<String>> got = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(partitions(topic, 3), 600)) {
            got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.offset() + ":" + str(r.value()));
        }
        return Out.map("configs", configs, "sent", sent, "received", got);
    }

    /** One group member of the rebalance scenario, polling on its own thread. */
    static final class Member implements Runnable {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final List<List<Integer>> history = Collections.synchronizedList(new ArrayList<>());
        final Set<String> values = Collections.synchronizedSet(new HashSet<>());
        volatile List<Integer> assignment = List.of();
        volatile boolean stop;
        volatile Throwable failure;
        final Thread thread;

        Member(String name, String group, String topic) {
            this.name = name;
            this.topic = topic;
            this.consumer = consumer(group, ConsumerConfig.CLIENT_ID_CONFIG, name,
                    ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true", ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "500");
            this.thread = new Thread(this, name);
            this.thread.start();
        }

        public void run() {
            try {
                consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        List<Integer> now = new ArrayList<>();
                        for (TopicPartition tp : consumer.assignment()) now.add(tp.partition());
                        Collections.sort(now);
                        assignment = now;
                        history.add(now);
                    }
                });
                while (!stop) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) values.add(str(r.value()));
                }
            } catch (Throwable t) {
                failure = t;
            } finally {
                consumer.close(Duration.ofSeconds(10));
            }
        }

        void close() throws InterruptedException {
            stop = true;
            thread.join(30_000);
        }

        Map<String, Object> facts() {
            return Out.map("assignment", assignment, "history", new ArrayList<>(history), "received", values.size(),
                    "error", failure == null ? null : Out.describe(failure));
        }
    }

    static int distinct(Member a, Member b) {
        Set<String> union;
        synchronized (a.values) {
            union = new HashSet<>(a.values);
        }
        synchronized (b.values) {
            union.addAll(b.values);
        }
        return union.size();
    }

    static void produce(String topic, String tag, int n) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, b("k" + i), b(tag + "-" + i)));
            p.flush();
        }
    }

    /** Two members share 4 partitions, the rebalance is observed on both sides, and the survivor takes all back. */
    static Map<String, Object> group() throws Exception {
        String topic = prefix + "-group";
        String group = prefix + "-grp";
        createTopic(topic, 4);
        Map<String, Object> r = new LinkedHashMap<>();
        Member a = new Member("member-a", group, topic);
        Member b = null;
        try {
            r.put("a_alone", Out.waitFor(() -> a.assignment.size() == 4, WAIT_MS));
            produce(topic, "first", 20);
            r.put("a_got_first", Out.waitFor(() -> a.values.size() >= 20, WAIT_MS));
            Member bb = new Member("member-b", group, topic);
            b = bb;
            r.put("split", Out.waitFor(() -> a.assignment.size() + bb.assignment.size() == 4
                    && !a.assignment.isEmpty() && !bb.assignment.isEmpty(), WAIT_MS));
            r.put("a_split", a.assignment);
            r.put("b_split", bb.assignment);
            try (Admin ad = admin()) {
                ConsumerGroupDescription d = ad.describeConsumerGroups(List.of(group)).all().get().get(group);
                List<String> members = new ArrayList<>();
                d.members().forEach(m -> members.add(m.clientId()));
                Collections.sort(members);
                r.put("described", Out.map("state", String.valueOf(d.state()), "members", members,
                        "assignor", d.partitionAssignor(), "coordinator", d.coordinator().id()));
            }
            produce(topic, "second", 20);
            // Wait for 40 distinct values: a rebalance is at-least-once, so a count with repeats
            // could reach 40 before the last records arrive.
            r.put("both_got_second", Out.waitFor(() -> distinct(a, bb) >= 40, WAIT_MS));
            r.put("received_total", a.values.size() + bb.values.size());
            r.put("received_distinct", distinct(a, bb));
            bb.close();
            r.put("a_took_all_back", Out.waitFor(() -> a.assignment.size() == 4, WAIT_MS));
        } finally {
            a.close();
            if (b != null) b.close();
        }
        r.put("a", a.facts());
        r.put("b", b == null ? null : b.facts());
        return r;
    }

    static Map<String, Object> committed(KafkaConsumer<byte[], byte[]> c, String topic) {
        Map<String, Object> out = new TreeMap<>();
        Map<TopicPartition, OffsetAndMetadata> m = c.committed(new HashSet<>(partitions(topic, 2)));
        for (TopicPartition tp : partitions(topic, 2)) {
            OffsetAndMetadata om = m.get(tp);
            out.put(String.valueOf(tp.partition()), om == null ? null : Out.map("offset", om.offset(), "metadata", om.metadata()));
        }
        return out;
    }

    /** Consume, commit explicit offsets with metadata; the test restarts the gateway before commit2. */
    static Map<String, Object> commit1() throws Exception {
        String topic = prefix + "-commit";
        createTopic(topic, 2);
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(topic, i % 2, b("k" + i), b("c1-" + i)));
            p.flush();
        }
        int got = 0;
        try (KafkaConsumer<byte[], byte[]> c = consumer(prefix + "-cg")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (got < 20 && System.currentTimeMillis() < deadline) got += c.poll(Duration.ofMillis(200)).count();
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            commit.put(new TopicPartition(topic, 0), new OffsetAndMetadata(6, "meta-0"));
            commit.put(new TopicPartition(topic, 1), new OffsetAndMetadata(7, "meta-1"));
            c.commitSync(commit);
            return Out.map("consumed", got, "committed", committed(c, topic));
        }
    }

    /** After the restart: committed offsets and metadata survive, and consumption resumes exactly there. */
    static Map<String, Object> commit2() throws Exception {
        String topic = prefix + "-commit";
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (int i = 20; i < 28; i++) p.send(new ProducerRecord<>(topic, i % 2, b("k" + i), b("c2-" + i)));
            p.flush();
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(prefix + "-cg")) {
            Map<String, Object> before = committed(c, topic);
            c.subscribe(List.of(topic));
            Map<String, List<Long>> offsets = new TreeMap<>();
            int got = 0;
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (got < 15 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    offsets.computeIfAbsent(String.valueOf(r.partition()), k -> new ArrayList<>()).add(r.offset());
                    got++;
                }
            }
            c.commitSync();
            Map<String, Object> after = committed(c, topic);
            Map<String, Object> listed = new TreeMap<>();
            try (Admin a = admin()) {
                a.listConsumerGroupOffsets(prefix + "-cg").partitionsToOffsetAndMetadata().get()
                        .forEach((tp, om) -> listed.put(tp.topic() + ":" + tp.partition(), om.offset()));
            }
            return Out.map("committed_before", before, "offsets", offsets, "committed_after", after, "listed", listed);
        }
    }

    /** assign + seek / seekToBeginning / seekToEnd / position. */
    static Map<String, Object> seek() throws Exception {
        String topic = prefix + "-seek";
        createTopic(topic, 1);
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (int i = 0; i < 50; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("s-" + i)));
            p.flush();
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = consumer(null)) {
            c.assign(List.of(tp));
            c.seek(tp, 20);
            List<Long> afterSeek = pollOffsets(c, 5);
            c.seekToBeginning(List.of(tp));
            long begin = c.position(tp);
            c.seekToEnd(List.of(tp));
            long end = c.position(tp);
            c.seek(tp, 45);
            List<Long> tail = pollOffsets(c, 5);
            return Out.map("after_seek_20", afterSeek.subList(0, Math.min(5, afterSeek.size())), "begin", begin, "end", end,
                    "after_seek_45", tail, "end_offsets", c.endOffsets(List.of(tp)).get(tp),
                    "beginning_offsets", c.beginningOffsets(List.of(tp)).get(tp));
        }
    }

    static List<Long> pollOffsets(KafkaConsumer<byte[], byte[]> c, int n) {
        List<Long> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (out.size() < n && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r.offset());
        }
        return out;
    }

    /** offsetsForTimes: the first offset at or after a time between two produce waves; null past the end. */
    static Map<String, Object> times() throws Exception {
        String topic = prefix + "-times";
        createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long middle;
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("t-" + i))).get();
            Thread.sleep(1200);
            middle = System.currentTimeMillis();
            Thread.sleep(200);
            for (int i = 5; i < 10; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("t-" + i))).get();
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(null)) {
            OffsetAndTimestamp mid = c.offsetsForTimes(Map.of(tp, middle)).get(tp);
            OffsetAndTimestamp zero = c.offsetsForTimes(Map.of(tp, 0L)).get(tp);
            OffsetAndTimestamp future = c.offsetsForTimes(Map.of(tp, System.currentTimeMillis() + 3_600_000L)).get(tp);
            return Out.map("middle", middle,
                    "at_middle", mid == null ? null : Out.map("offset", mid.offset(), "timestamp", mid.timestamp()),
                    "at_zero", zero == null ? null : Out.map("offset", zero.offset(), "timestamp", zero.timestamp()),
                    "in_future", future == null ? null : Out.map("offset", future.offset()));
        }
    }

    static Map<String, Object> describe(Admin a, String topic) throws Exception {
        TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        List<Object> parts = new ArrayList<>();
        for (TopicPartitionInfo p : d.partitions()) {
            parts.add(Out.map("partition", p.partition(), "leader", p.leader() == null ? null : p.leader().id(),
                    "replicas", p.replicas().size(), "isr", p.isr().size()));
        }
        return Out.map("name", d.name(), "internal", d.isInternal(), "partitions", parts);
    }

    /** Admin: describe cluster, create (with a config), describe topics and configs, add partitions, delete. */
    static Map<String, Object> adminScenario() throws Exception {
        String topic = prefix + "-admin";
        Map<String, Object> r = new LinkedHashMap<>();
        try (Admin a = admin()) {
            DescribeClusterResult cl = a.describeCluster();
            List<Integer> nodes = new ArrayList<>();
            for (Node n : cl.nodes().get()) nodes.add(n.id());
            r.put("cluster", Out.map("nodes", nodes, "controller", cl.controller().get().id(), "cluster_id", cl.clusterId().get()));
            a.createTopics(List.of(new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "3600000")))).all().get();
            r.put("listed_after_create", a.listTopics().names().get().contains(topic));
            r.put("described", describe(a, topic));
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config cfg = a.describeConfigs(List.of(res)).all().get().get(res);
            Map<String, Object> cfgs = new TreeMap<>();
            for (ConfigEntry e : cfg.entries()) cfgs.put(e.name(), e.value());
            r.put("configs", cfgs);
            try {
                a.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
                r.put("create_again", "no error");
            } catch (ExecutionException e) {
                r.put("create_again", e.getCause().getClass().getSimpleName());
            }
            a.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get();
            r.put("described_after_grow", describe(a, topic));
            try (KafkaProducer<byte[], byte[]> p = producer()) {
                r.put("produce_to_new_partition", p.send(new ProducerRecord<>(topic, 4, b("k"), b("v"))).get().offset());
            }
            a.deleteTopics(List.of(topic)).all().get();
            r.put("gone_after_delete", Out.waitFor(() -> {
                try {
                    return !a.listTopics().names().get().contains(topic);
                } catch (Exception e) {
                    return false;
                }
            }, 10_000));
        }
        return r;
    }

    /** A record above the broker's limit is refused with RecordTooLargeException, and the producer goes on. */
    static Map<String, Object> tooLarge() throws Exception {
        String topic = prefix + "-large";
        createTopic(topic, 1);
        try (KafkaProducer<byte[], byte[]> p = producer(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(16 << 20),
                ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(64 << 20), ProducerConfig.RETRIES_CONFIG, "0",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false")) {
            String error;
            try {
                p.send(new ProducerRecord<>(topic, 0, b("big"), new byte[9 << 20])).get();
                error = "no error";
            } catch (ExecutionException e) {
                error = e.getCause().getClass().getSimpleName();
            }
            long after = p.send(new ProducerRecord<>(topic, 0, b("small"), b("ok"))).get().offset();
            List<String> values = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> rec : readAll(List.of(new TopicPartition(topic, 0)), 1)) values.add(str(rec.key()));
            return Out.map("error", error, "small_offset", after, "stored_keys", values);
        }
    }

    /** The idempotent producer that keeps sending while the test restarts the broker (retry_start, pause, retry_finish). */
    static final class Sender implements Runnable {
        final String topic = prefix + "-retry";
        final KafkaProducer<byte[], byte[]> producer = producer(ProducerConfig.LINGER_MS_CONFIG, "5",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000", ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000",
                ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "200");
        final List<String> acked = Collections.synchronizedList(new ArrayList<>());
        final List<String> failed = Collections.synchronizedList(new ArrayList<>());
        volatile boolean stop;
        volatile int sent;
        final Thread thread = new Thread(this, "retry-sender");

        public void run() {
            for (int i = 0; !stop; i++) {
                String v = "ir-" + i;
                producer.send(new ProducerRecord<>(topic, b("k" + (i % 4)), b(v)), (md, e) -> {
                    if (e == null) acked.add(md.partition() + ":" + md.offset() + ":" + v);
                    else failed.add(v + ":" + e.getClass().getSimpleName() + ":" + e.getMessage());
                });
                sent = i + 1;
                if (i % 20 == 19) {
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }
    }

    static Sender sender;

    static Map<String, Object> retryStart() throws Exception {
        createTopic(prefix + "-retry", 2);
        sender = new Sender();
        sender.thread.start();
        boolean both = Out.waitFor(() -> {  // both partitions take writes before the restart
            int p0 = 0;
            int p1 = 0;
            synchronized (sender.acked) {
                for (String a : sender.acked) {
                    if (a.startsWith("0:")) p0++;
                    else p1++;
                }
            }
            return p0 >= 200 && p1 >= 200;
        }, WAIT_MS);
        return Out.map("acked_before_restart", both);
    }

    /** Every acknowledged record is stored once at its acknowledged offset; nothing failed, nothing doubled. */
    static Map<String, Object> retryFinish() throws Exception {
        Sender s = sender;
        int before = s.acked.size();
        boolean resumed = Out.waitFor(() -> s.acked.size() >= before + 500 || !s.failed.isEmpty(), WAIT_MS);
        s.stop = true;
        s.thread.join();
        s.producer.flush();
        s.producer.close(Duration.ofSeconds(30));
        List<String> stored = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(partitions(s.topic, 2), s.sent)) {
            stored.add(r.partition() + ":" + r.offset() + ":" + str(r.value()));
        }
        List<String> failed = new ArrayList<>(s.failed);
        return Out.map("resumed", resumed, "sent", s.sent, "acked", new ArrayList<>(s.acked),
                "failed", failed.subList(0, Math.min(20, failed.size())), "failed_count", failed.size(), "stored", stored);
    }
}
