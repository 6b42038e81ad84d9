package compat;

import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A stock Java producer (client telemetry on by default: enable.metrics.push) that sends a few records
 * and stays up for a few push intervals, so the broker receives its KIP-714 metrics.
 * Args: bootstrap topic clientId millisToStay
 */
public class TelemetryProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", args[2]);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            long until = System.currentTimeMillis() + Long.parseLong(args[3]);
            while (System.currentTimeMillis() < until) {
                producer.send(new ProducerRecord<>(args[1], "v")).get();
                Thread.sleep(200);
            }
            System.out.println("instance=" + producer.clientInstanceId(java.time.Duration.ofSeconds(10)));
        }
    }
}
