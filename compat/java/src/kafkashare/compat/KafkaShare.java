package compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KIP-932 share groups with the stock KafkaShareConsumer (kafka-clients 4.2+):
 * `KafkaShare BOOTSTRAP TOPIC GROUP SCENARIO [ARG...]`, one JSON line per scenario (Out).
 * <ul>
 * <li>`config K=V...`: set group configs (IncrementalAlterConfigs on the GROUP resource).</li>
 * <li>`produce N PREFIX`: N records "PREFIX0".."PREFIX(N-1)" (the topic is created with one partition).</li>
 * <li>`share K N MODE`: K consumers (threads) in the group until N distinct records were accepted;
 *     MODE explicit (acknowledge ACCEPT + commitSync) or implicit (acknowledged by the next poll);
 *     reports the ms from the first record received to the last one acknowledged.</li>
 * <li>`hold M`: poll until M records are held, print them, then halt without acknowledging (a dead consumer).</li>
 * <li>`release N`: RELEASE each record on its first delivery, ACCEPT it on the second.</li>
 * <li>`reject N`: REJECT the records whose number is even, ACCEPT the others; then watch for returns.</li>
 * <li>`limit N`: RELEASE every delivery; reports how often each record came (the delivery count limit archives).</li>
 * <li>`restart M N`: hold M records unacknowledged, pause (the driver restarts the broker), then a new
 *     consumer accepts until N distinct records; reports which came twice.</li>
 * </ul>
 */
public final class KafkaShare {
    static String bootstrap, topic, group;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        topic = args[1];
        group = args[2];
        String scenario = args[3];
        String[] rest = java.util.Arrays.copyOfRange(args, 4, args.length);
        switch (scenario) {
            case "config" -> Out.run(scenario, () -> config(rest));
            case "produce" -> Out.run(scenario, () -> produce(Integer.parseInt(rest[0]), rest[1]));
            case "share" -> Out.run(scenario, () -> share(Integer.parseInt(rest[0]), Integer.parseInt(rest[1]), rest[2]));
            case "hold" -> Out.run(scenario, () -> hold(Integer.parseInt(rest[0])));
            case "release" -> Out.run(scenario, () -> release(Integer.parseInt(rest[0])));
            case "reject" -> Out.run(scenario, () -> reject(Integer.parseInt(rest[0])));
            case "limit" -> Out.run(scenario, () -> limit(Integer.parseInt(rest[0])));
            case "restart" -> Out.run(scenario, () -> restart(Integer.parseInt(rest[0]), Integer.parseInt(rest[1])));
            default -> throw new IllegalArgumentException(scenario);
        }
        Out.emit(Out.map("scenario", "end"));
        System.exit(0);
    }

    static Map<String, Object> config(String[] pairs) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : pairs) {
            String[] parts = kv.split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(parts[0], parts[1]), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = Admin.create(p)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, (Collection<AlterConfigOp>) ops)).all().get();
            Map<String, Object> out = new TreeMap<>();
            for (ConfigEntry e : admin.describeConfigs(List.of(res)).all().get().get(res).entries()) {
                out.put(e.name(), e.value());
            }
            return Out.map("configs", out);
        }
    }

    static Map<String, Object> produce(int n, String prefix) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {  // one partition: every member of the group fetches from it
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, prefix + i));
            }
            producer.flush();
        }
        return Out.map("sent", n);
    }

    static KafkaShareConsumer<String, String> consumer(String mode) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", mode);
        p.put("max.poll.records", "100");
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
        return c;
    }

    static int count(ConsumerRecord<String, String> r) {
        return r.deliveryCount().map(Short::intValue).orElse(-1);
    }

    static Map<String, Object> share(int k, int n, String mode) throws Exception {
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        List<AtomicInteger> perConsumer = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 90_000;
        java.util.concurrent.atomic.AtomicLong firstAt = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicLong lastAt = new java.util.concurrent.atomic.AtomicLong();
        for (int i = 0; i < k; i++) {
            AtomicInteger mine = new AtomicInteger();
            perConsumer.add(mine);
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = consumer(mode)) {
                    while (seen.size() < n && System.currentTimeMillis() < deadline) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                        if (!recs.isEmpty()) {
                            firstAt.compareAndSet(0, System.nanoTime());
                        }
                        for (ConsumerRecord<String, String> r : recs) {
                            seen.computeIfAbsent(r.value(), x -> new AtomicInteger()).incrementAndGet();
                            mine.incrementAndGet();
                            if (mode.equals("explicit")) {
                                c.acknowledge(r, AcknowledgeType.ACCEPT);
                            }
                        }
                        if (mode.equals("explicit") && !recs.isEmpty()) {
                            c.commitSync();
                        }
                        if (!recs.isEmpty()) {
                            lastAt.accumulateAndGet(System.nanoTime(), Math::max);
                        }
                    }
                    if (mode.equals("implicit")) {
                        c.commitSync();  // the last poll's records
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        int total = 0;
        for (AtomicInteger c : seen.values()) {
            total += c.get();
        }
        List<Integer> per = new ArrayList<>();
        for (AtomicInteger c : perConsumer) {
            per.add(c.get());
        }
        double ms = (lastAt.get() - firstAt.get()) / 1e6;  // first record received to last acknowledged
        return Out.map("distinct", seen.size(), "deliveries", total, "per_consumer", per, "ms", ms);
    }

    static Map<String, Object> hold(int m) throws Exception {
        KafkaShareConsumer<String, String> c = consumer("explicit");
        List<String> held = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 60_000;
        while (held.size() < m && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                held.add(r.value());
            }
        }
        Out.emit(Out.map("scenario", "hold", "ok", true, "held", held));
        Runtime.getRuntime().halt(0);  // dies holding them: no acknowledgement, no leave
        return null;
    }

    /** Polls until `done` says so; the handler decides each record's acknowledgement. */
    interface Decide {
        AcknowledgeType on(ConsumerRecord<String, String> r);
    }

    static Map<String, List<Integer>> drive(KafkaShareConsumer<String, String> c, Decide decide,
                                             java.util.function.BooleanSupplier done, long ms) {
        Map<String, List<Integer>> counts = new TreeMap<>();
        long deadline = System.currentTimeMillis() + ms;
        while (!done.getAsBoolean() && System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(300));
            for (ConsumerRecord<String, String> r : recs) {
                synchronized (counts) {
                    counts.computeIfAbsent(r.value(), x -> new ArrayList<>()).add(count(r));
                }
                c.acknowledge(r, decide.on(r));
            }
            if (!recs.isEmpty()) {
                c.commitSync();
            }
        }
        return counts;
    }

    static Map<String, Object> release(int n) throws Exception {
        AtomicInteger accepted = new AtomicInteger();
        try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
            Map<String, List<Integer>> counts = drive(c, r -> {
                if (count(r) <= 1) {
                    return AcknowledgeType.RELEASE;
                }
                accepted.incrementAndGet();
                return AcknowledgeType.ACCEPT;
            }, () -> accepted.get() >= n, 60_000);
            return Out.map("counts", counts);
        }
    }

    static Map<String, Object> reject(int n) throws Exception {
        AtomicInteger handled = new AtomicInteger();
        try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
            Map<String, List<Integer>> counts = drive(c, r -> {
                handled.incrementAndGet();
                int i = Integer.parseInt(r.value().replaceAll("[^0-9]", ""));
                return i % 2 == 0 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
            }, () -> handled.get() >= n, 60_000);
            Map<String, List<Integer>> after = drive(c, r -> AcknowledgeType.ACCEPT, () -> false, 3_000);
            return Out.map("counts", counts, "after", after);
        }
    }

    static Map<String, Object> limit(int n) throws Exception {
        try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
            long quietSince = System.currentTimeMillis();
            Map<String, List<Integer>> all = new TreeMap<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while ((all.isEmpty() || System.currentTimeMillis() - quietSince < 4_000)
                    && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : recs) {
                    all.computeIfAbsent(r.value(), x -> new ArrayList<>()).add(count(r));
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                }
                if (!recs.isEmpty()) {
                    c.commitSync();
                    quietSince = System.currentTimeMillis();
                }
            }
            return Out.map("counts", all);
        }
    }

    static Map<String, Object> restart(int m, int n) throws Exception {
        List<String> held = new ArrayList<>();
        KafkaShareConsumer<String, String> first = consumer("explicit");
        long deadline = System.currentTimeMillis() + 60_000;
        while (held.size() < m && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : first.poll(Duration.ofMillis(500))) {
                held.add(r.value());
            }
        }
        Out.pause();  // the driver restarts the broker; the first consumer never acknowledges
        AtomicInteger distinct = new AtomicInteger();
        Map<String, List<Integer>> counts;
        try (KafkaShareConsumer<String, String> second = consumer("explicit")) {
            Map<String, Boolean> seen = new ConcurrentHashMap<>();
            counts = drive(second, r -> {
                if (seen.put(r.value(), true) == null) {
                    distinct.incrementAndGet();
                }
                return AcknowledgeType.ACCEPT;
            }, () -> distinct.get() >= n, 120_000);
        }
        return Out.map("held", held, "counts", counts, "distinct", distinct.get());
    }
}
