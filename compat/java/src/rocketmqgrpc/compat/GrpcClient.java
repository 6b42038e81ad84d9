package compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/** What the gRPC SDK scenario programs (RocketGrpc, RocketLite) share: the SDK's provider, the
 * plaintext configuration for the endpoints they are given, a producer for a topic, a message's body. */
final class GrpcClient {
    static final ClientServiceProvider P = ClientServiceProvider.loadService();

    private GrpcClient() {}

    /** Plaintext (the gateway's and the proxy's gRPC port), 5 s per request. */
    static ClientConfiguration plaintext(String endpoints) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoints).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(5)).build();
    }

    static Producer producer(ClientConfiguration cfg, String topic) throws Exception {
        return P.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build();
    }

    /** The body as UTF-8 text, without moving the view's buffer. */
    static String body(MessageView m) {
        byte[] b = new byte[m.getBody().remaining()];
        m.getBody().duplicate().get(b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
