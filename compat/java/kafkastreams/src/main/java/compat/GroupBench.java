package compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * KIP-848 rebalance timing (bench/groups.py): MEMBERS KafkaConsumers (group.protocol=consumer, one
 * thread each) join one fresh group on a topic of PARTITIONS partitions.
 *
 * <p>join_ms: from the first subscribe until every partition is owned by exactly one member and the
 * assignment is balanced (each member owns floor(P/N) or ceil(P/N) partitions, what the uniform
 * assignor targets). leave_ms: from member 0's close() (a LeaveGroup heartbeat) until the remaining
 * members own every partition again, balanced. Usage: GroupBench BOOTSTRAP TOPIC PARTITIONS MEMBERS
 * TIMEOUT_MS; prints one JSON line {"join_ms":..,"leave_ms":..} or {"error":..}.
 */
public final class GroupBench {
    private GroupBench() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]), members = Integer.parseInt(args[3]);
        long timeoutMs = Long.parseLong(args[4]);
        createTopic(bootstrap, topic, partitions);

        String group = "gb-" + UUID.randomUUID().toString().substring(0, 8);
        AtomicReferenceArray<Set<TopicPartition>> owned = new AtomicReferenceArray<>(members);
        List<AtomicBoolean> stops = new ArrayList<>();
        List<KafkaConsumer<byte[], byte[]>> consumers = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            consumers.add(new KafkaConsumer<>(props(bootstrap, group)));
            stops.add(new AtomicBoolean());
            owned.set(i, Set.of());
        }
        List<Thread> threads = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < members; i++) {
            int index = i;
            Thread t = new Thread(() -> pollLoop(consumers.get(index), topic, stops.get(index), owned, index));
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        String result;
        Long joinMs = waitBalanced(owned, partitions, start, timeoutMs);
        if (joinMs == null) {
            result = "{\"error\":\"not balanced after " + timeoutMs + " ms: " + describe(owned) + "\"}";
        } else if (members == 1) {
            result = "{\"join_ms\":" + joinMs + ",\"leave_ms\":null}";
        } else {
            long left = System.nanoTime();
            stops.get(0).set(true);
            threads.get(0).join(30_000);
            owned.set(0, null);
            Long leaveMs = waitBalanced(owned, partitions, left, timeoutMs);
            result = leaveMs == null
                    ? "{\"error\":\"not rebalanced after leave in " + timeoutMs + " ms: " + describe(owned) + "\"}"
                    : "{\"join_ms\":" + joinMs + ",\"leave_ms\":" + leaveMs + "}";
        }
        System.out.println(result);
        System.out.flush();
        for (AtomicBoolean stop : stops) {
            stop.set(true);
        }
        for (Thread t : threads) {
            t.join(30_000);
        }
        System.exit(0);
    }

    private static Properties props(String bootstrap, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return p;
    }

    private static void pollLoop(KafkaConsumer<byte[], byte[]> c, String topic, AtomicBoolean stop,
                                 AtomicReferenceArray<Set<TopicPartition>> owned, int index) {
        c.subscribe(List.of(topic));
        while (!stop.get()) {
            c.poll(Duration.ofMillis(20));
            owned.set(index, Set.copyOf(c.assignment()));
        }
        c.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(10)));
    }

    /** Milliseconds from `start` until the live members' assignment is complete and balanced, or null. */
    private static Long waitBalanced(AtomicReferenceArray<Set<TopicPartition>> owned, int partitions, long start,
                                     long timeoutMs) throws InterruptedException {
        while ((System.nanoTime() - start) / 1_000_000 < timeoutMs) {
            if (balanced(owned, partitions)) {
                return (System.nanoTime() - start) / 1_000_000;
            }
            Thread.sleep(2);
        }
        return null;
    }

    static boolean balanced(AtomicReferenceArray<Set<TopicPartition>> owned, int partitions) {
        int live = 0, total = 0;
        Set<TopicPartition> union = new HashSet<>();
        for (int i = 0; i < owned.length(); i++) {
            Set<TopicPartition> s = owned.get(i);
            if (s != null) {
                live++;
                total += s.size();
                union.addAll(s);
            }
        }
        if (live == 0 || total != partitions || union.size() != partitions) {
            return false;
        }
        int low = partitions / live, high = (partitions + live - 1) / live;
        for (int i = 0; i < owned.length(); i++) {
            Set<TopicPartition> s = owned.get(i);
            if (s != null && (s.size() < low || s.size() > high)) {
                return false;
            }
        }
        return true;
    }

    private static String describe(AtomicReferenceArray<Set<TopicPartition>> owned) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < owned.length(); i++) {
            Set<TopicPartition> s = owned.get(i);
            b.append(s == null ? "-" : String.valueOf(s.size())).append(i + 1 < owned.length() ? "," : "");
        }
        return "sizes " + b;
    }

    private static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
            for (int i = 0; i < 100; i++) {  // Kafka applies a new topic's metadata asynchronously
                if (admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size() == partitions) {
                    return;
                }
                Thread.sleep(100);
            }
        }
    }
}
