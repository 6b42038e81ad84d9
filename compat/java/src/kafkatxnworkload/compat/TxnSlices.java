package compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Transaction throughput of several brokers measured in alternating slices by one JVM, for
 * bench/txn_throughput.py: each broker gets `producers` transactional producers (initialized once);
 * the slices run the brokers in turn, A B, then B A, ...: a slice's producers loop begin / `records` sends
 * (record i to partition i % partitions) / commit until the slice's time is up, each finishing the
 * transaction it is in; the slice's throughput is its commits over its real duration. Slices of the
 * brokers follow each other within a second, so load from other jobs hits them alike. A transaction
 * failing with an abortable error is aborted and counted. Prints one JSON line: per broker its
 * slices' transactions/s and its aborted count.
 * Args: topic partitions producers records recordSize sliceMs slicesPerBroker warmupSlices idPrefix bootstrap...
 */
public class TxnSlices {
    public static void main(String[] args) throws Exception {
        String topic = args[0], prefix = args[8];
        int partitions = Integer.parseInt(args[1]), producers = Integer.parseInt(args[2]);
        int records = Integer.parseInt(args[3]), size = Integer.parseInt(args[4]);
        long sliceMs = Long.parseLong(args[5]);
        int slices = Integer.parseInt(args[6]), warmup = Integer.parseInt(args[7]);
        int brokers = args.length - 9;
        List<List<KafkaProducer<byte[], byte[]>>> all = new ArrayList<>();
        long[] aborted = new long[brokers];
        for (int b = 0; b < brokers; b++) {
            List<KafkaProducer<byte[], byte[]>> ps = new ArrayList<>();
            for (int t = 0; t < producers; t++) {
                Properties props = new Properties();
                props.put("bootstrap.servers", args[9 + b]);
                props.put("transactional.id", prefix + "-" + b + "-" + t);
                props.put("linger.ms", "0");
                props.put("key.serializer", ByteArraySerializer.class.getName());
                props.put("value.serializer", ByteArraySerializer.class.getName());
                KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props);
                p.initTransactions();
                ps.add(p);
            }
            all.add(ps);
        }
        ExecutorService pool = Executors.newFixedThreadPool(producers);
        byte[] value = new byte[size];
        StringBuilder out = new StringBuilder("{");
        List<List<Double>> rates = new ArrayList<>();
        for (int b = 0; b < brokers; b++)
            rates.add(new ArrayList<>());
        for (int s = 0; s < (warmup + slices) * brokers; s++) {
            int k = s / brokers, b = k % 2 == 0 ? s % brokers : brokers - 1 - s % brokers;  // A B, B A, ...
            long t0 = System.nanoTime(), end = t0 + sliceMs * 1_000_000L;
            List<Callable<Long>> tasks = new ArrayList<>();
            for (KafkaProducer<byte[], byte[]> p : all.get(b)) {
                final int broker = b;
                tasks.add(() -> {
                    long n = 0;
                    for (long txn = 0; System.nanoTime() < end; txn++) {
                        p.beginTransaction();
                        try {
                            for (int i = 0; i < records; i++)
                                p.send(new ProducerRecord<>(topic, (int) ((txn + i) % partitions), null, value));
                            p.commitTransaction();
                            n++;
                        } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                            throw e;
                        } catch (KafkaException e) {
                            synchronized (aborted) {
                                if (aborted[broker]++ < 3)
                                    System.err.println("broker " + broker + ": aborted after " + e);
                            }
                            p.abortTransaction();
                        }
                    }
                    return n;
                });
            }
            long commits = 0;
            for (Future<Long> f : pool.invokeAll(tasks))
                commits += f.get();
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (s >= warmup * brokers)
                rates.get(b).add(commits / seconds);
        }
        pool.shutdown();
        for (int b = 0; b < brokers; b++) {
            out.append(b == 0 ? "" : ", ").append("\"").append(b).append("\": {\"txn_per_s\": ")
               .append(rates.get(b)).append(", \"aborted\": ").append(aborted[b]).append("}");
            for (KafkaProducer<byte[], byte[]> p : all.get(b))
                p.close();
        }
        System.out.println(out.append("}"));
    }
}
