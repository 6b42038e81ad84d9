package compat;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Word count as a Kafka Streams KTable: lines from INPUT are split into words, re-keyed by word (a
 * repartition topic), counted in a persistent store (a compacted changelog topic) and the count
 * updates written to OUTPUT (String key, Long value).
 *
 * <p>Usage: WordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT GUARANTEE STATE_DIR [THREADS [GROUP_PROTOCOL]]
 * (GROUP_PROTOCOL classic, the default, or streams: KIP-1071). It prints one
 * line per state change ({"state":"RUNNING"}) and runs until its standard input is closed, then closes
 * cleanly; a fatal stream-thread error is printed as {"error":...} and ends the client.
 */
public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) throws IOException, InterruptedException {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], guarantee = args[4];
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args.length > 6 ? Integer.parseInt(args[6]) : 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        if (args.length > 7) {
            p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[7]);
        }
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);  // DeleteRecords on the repartition topic
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // a killed instance's tasks move to the survivor after 10 s instead of the default 45 s
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word)
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> say("{\"state\":\"" + now + "\"}"));
        streams.setUncaughtExceptionHandler(e -> {
            say("{\"error\":\"" + String.valueOf(e).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"}");
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        while (System.in.read() != -1) {
            // runs until the test closes our standard input
        }
        streams.close(Duration.ofSeconds(60));
        say("{\"closed\":true}");
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
