package compat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Transaction throughput for bench/txn_throughput.py: `producers` threads, each with its own
 * transactional id, run begin / `records` sends (record i to partition i % partitions) / commit in a
 * loop. After `warmupMs` uncounted, counts the commits of the next `seconds` and the commit latency
 * (commitTransaction's duration); a transaction failing with an abortable error is aborted and
 * counted (as an application does), any other error ends the run. Compiled against kafka-clients 4.x (transactions v2 where the broker
 * finalizes it) or 3.9 (v1). Prints one JSON line.
 * Args: bootstrap topic partitions producers records recordSize warmupMs seconds idPrefix
 */
public class TxnThroughput {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], prefix = args[8];
        int partitions = Integer.parseInt(args[2]), producers = Integer.parseInt(args[3]);
        int records = Integer.parseInt(args[4]), size = Integer.parseInt(args[5]);
        long warmupMs = Long.parseLong(args[6]);
        double seconds = Double.parseDouble(args[7]);
        long start = System.nanoTime() + warmupMs * 1_000_000L;
        long end = start + (long) (seconds * 1e9);
        AtomicLong committed = new AtomicLong();
        AtomicLong aborted = new AtomicLong();
        AtomicReference<String> failed = new AtomicReference<>();
        long[][] latencies = new long[producers][];
        int[] counts = new int[producers];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < producers; t++) {
            final int slot = t;
            final String id = prefix + "-" + t;
            final long[] lat = latencies[t] = new long[1_000_000];
            threads.add(new Thread(() -> {
                Properties props = new Properties();
                props.put("bootstrap.servers", bootstrap);
                props.put("transactional.id", id);
                props.put("linger.ms", "0");
                props.put("key.serializer", ByteArraySerializer.class.getName());
                props.put("value.serializer", ByteArraySerializer.class.getName());
                byte[] value = new byte[size];
                int n = 0;
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props)) {
                    p.initTransactions();
                    for (long txn = 0; System.nanoTime() < end; txn++) {
                        p.beginTransaction();
                        long t0 = 0;
                        try {
                            for (int i = 0; i < records; i++)
                                p.send(new ProducerRecord<>(topic, (int) ((txn + i) % partitions), null, value));
                            t0 = System.nanoTime();
                            p.commitTransaction();
                        } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                            throw e;
                        } catch (KafkaException e) {  // abortable: as an application does, abort and go on
                            if (aborted.incrementAndGet() <= 3)
                                System.err.println(id + ": aborted after " + e);
                            p.abortTransaction();
                            continue;
                        }
                        long t1 = System.nanoTime();
                        if (t0 >= start && t1 <= end) {
                            committed.incrementAndGet();
                            if (n < lat.length)
                                lat[n++] = t1 - t0;
                        }
                    }
                } catch (Exception e) {
                    failed.compareAndSet(null, id + ": " + e);
                }
                counts[slot] = n;
            }));
        }
        for (Thread th : threads)
            th.start();
        for (Thread th : threads)
            th.join();
        List<Long> all = new ArrayList<>();
        for (int t = 0; t < producers; t++)
            for (int i = 0; i < counts[t]; i++)
                all.add(latencies[t][i]);
        long[] sorted = all.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        double p50 = sorted.length == 0 ? -1 : sorted[sorted.length / 2] / 1e6;
        double p99 = sorted.length == 0 ? -1 : sorted[Math.min(sorted.length - 1, (int) (sorted.length * 0.99))] / 1e6;
        if (failed.get() != null) {
            System.err.println("failed: " + failed.get());
            System.exit(1);
        }
        System.out.printf("{\"txns\": %d, \"seconds\": %.3f, \"commit_p50_ms\": %.3f, \"commit_p99_ms\": %.3f, \"aborted\": %d}%n",
                committed.get(), seconds, p50, p99, aborted.get());
    }
}
