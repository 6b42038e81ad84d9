package compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Delegation tokens (KIP-48) through the stock Java AdminClient, producer and consumer on a
 * SASL_PLAINTEXT/SCRAM listener with an authorizer (super user admin; users alice, bob, carol with
 * password NAME-secret). Prints one "key=value" line per fact, compared by
 * tests/security/test_delegation_tokens.py between Apache Kafka 4.3.1 and the gateway.
 * Args: bootstrap topic                 the whole scenario
 *       bootstrap create USER           a token of USER's: prints token_id=, hmac=
 *       bootstrap login TOKENID HMAC    describeCluster logged in with the token: prints login=
 */
public class TokenCheck {
    static final KafkaPrincipal ALICE = new KafkaPrincipal("User", "alice");
    static final KafkaPrincipal BOB = new KafkaPrincipal("User", "bob");

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        if (args[1].equals("create")) {
            try (Admin a = admin(bootstrap, args[2], args[2] + "-secret", false)) {
                DelegationToken t = a.createDelegationToken().delegationToken().get();
                System.out.println("token_id=" + t.tokenInfo().tokenId());
                System.out.println("hmac=" + t.hmacAsBase64String());
            }
            return;
        }
        if (args[1].equals("login")) {
            System.out.println("login=" + login(bootstrap, args[2], args[3]));
            return;
        }
        String topic = args[1];
        try (Admin admin = admin(bootstrap, "admin", "admin-secret", false);
             Admin alice = admin(bootstrap, "alice", "alice-secret", false);
             Admin bob = admin(bootstrap, "bob", "bob-secret", false);
             Admin carol = admin(bootstrap, "carol", "carol-secret", false)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            admin.createAcls(List.of(
                allow(ResourceType.TOPIC, topic), allow(ResourceType.GROUP, "token-group"))).all().get();

            DelegationToken token = alice.createDelegationToken(
                new CreateDelegationTokenOptions().renewers(List.of(BOB))).delegationToken().get();
            System.out.println("owner=" + token.tokenInfo().owner());
            System.out.println("requester=" + token.tokenInfo().tokenRequester());
            System.out.println("renewers=" + token.tokenInfo().renewers());
            System.out.println("expiry_is_a_day=" + near(token.tokenInfo().expiryTimestamp() - token.tokenInfo().issueTimestamp(), 86_400_000L));
            System.out.println("max_is_a_week=" + near(token.tokenInfo().maxTimestamp() - token.tokenInfo().issueTimestamp(), 604_800_000L));
            String id = token.tokenInfo().tokenId(), hmac = token.hmacAsBase64String();
            long until = System.currentTimeMillis() + 30_000;  // Kafka: the brokers learn the token from the metadata log
            while (!login(bootstrap, id, hmac).equals("ok") && System.currentTimeMillis() < until) Thread.sleep(500);

            try (KafkaProducer<String, String> p = new KafkaProducer<>(client(bootstrap, id, hmac, true), new StringSerializer(), new StringSerializer())) {
                p.send(new ProducerRecord<>(topic, 0, null, "by-token")).get();
                System.out.println("token_produce=ok");
            }
            Properties cp = client(bootstrap, id, hmac, true);
            cp.put("group.id", "token-group");
            cp.put("auto.offset.reset", "earliest");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                c.assign(List.of(new TopicPartition(topic, 0)));
                List<String> got = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (got.isEmpty() && System.currentTimeMillis() < deadline)
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
                System.out.println("token_consume=" + String.join(",", got));
            }
            try (Admin byToken = admin(bootstrap, id, hmac, true)) {
                System.out.println("token_creates_token=" + outcome(byToken.createDelegationToken().delegationToken()));
                System.out.println("token_describes_tokens=" + outcome(byToken.describeDelegationToken().delegationTokens()));
            }
            byte[] mac = token.hmac();
            long renewed = bob.renewDelegationToken(mac, new RenewDelegationTokenOptions().renewTimePeriodMs(3_600_000L)).expiryTimestamp().get();
            System.out.println("renew_by_renewer_hour=" + near(renewed - System.currentTimeMillis(), 3_600_000L));
            System.out.println("renew_by_owner=" + outcome(alice.renewDelegationToken(mac).expiryTimestamp()));
            System.out.println("renew_by_other=" + outcome(carol.renewDelegationToken(mac).expiryTimestamp()));
            System.out.println("expire_by_other=" + outcome(carol.expireDelegationToken(mac).expiryTimestamp()));
            System.out.println("renew_unknown=" + outcome(alice.renewDelegationToken(new byte[64]).expiryTimestamp()));
            System.out.println("renewer_not_user=" + outcome(alice.createDelegationToken(new CreateDelegationTokenOptions()
                .renewers(List.of(new KafkaPrincipal("Group", "g")))).delegationToken()));
            System.out.println("carol_for_alice=" + outcome(carol.createDelegationToken(new CreateDelegationTokenOptions().owner(ALICE)).delegationToken()));
            DelegationToken forAlice = admin.createDelegationToken(new CreateDelegationTokenOptions().owner(ALICE)).delegationToken().get();
            System.out.println("admin_for_alice=" + forAlice.tokenInfo().owner() + " by " + forAlice.tokenInfo().tokenRequester());
            until = System.currentTimeMillis() + 30_000;  // Kafka: the new token reaches the broker's cache
            while (admin.describeDelegationToken().delegationTokens().get().size() < 2 && System.currentTimeMillis() < until)
                Thread.sleep(200);
            System.out.println("describe_alice=" + alice.describeDelegationToken().delegationTokens().get().size());
            System.out.println("describe_bob=" + bob.describeDelegationToken().delegationTokens().get().size());
            System.out.println("describe_carol=" + carol.describeDelegationToken().delegationTokens().get().size());
            System.out.println("describe_admin=" + admin.describeDelegationToken().delegationTokens().get().size());
            System.out.println("describe_admin_bob=" + admin.describeDelegationToken(
                new DescribeDelegationTokenOptions().owners(List.of(BOB))).delegationTokens().get().size());
            System.out.println("login_before_expire=" + login(bootstrap, id, hmac));
            System.out.println("login_wrong_hmac=" + login(bootstrap, id, forAlice.hmacAsBase64String()));
            System.out.println("expire_by_owner=" + outcome(alice.expireDelegationToken(mac,
                new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp()));
            System.out.println("login_after_expire=" + login(bootstrap, id, hmac));
            System.out.println("renew_after_expire=" + outcome(alice.renewDelegationToken(mac).expiryTimestamp()));
        }
    }

    static boolean near(long value, long expected) {
        return Math.abs(value - expected) < 120_000L;
    }

    static AclBinding allow(ResourceType type, String name) {
        return new AclBinding(new ResourcePattern(type, name, PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.ALL, AclPermissionType.ALLOW));
    }

    static String outcome(KafkaFuture<?> future) {
        try {
            future.get();
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (InterruptedException e) {
            return "interrupted";
        }
    }

    static String login(String bootstrap, String id, String hmac) {
        try (Admin a = admin(bootstrap, id, hmac, true)) {
            return outcome(a.describeCluster().nodes());
        }
    }

    static Properties client(String bootstrap, String user, String password, boolean token) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + user + "\" password=\"" + password + "\"" + (token ? " tokenauth=\"true\"" : "") + ";");
        p.put("request.timeout.ms", "20000");
        p.put("default.api.timeout.ms", "30000");
        p.put("reconnect.backoff.max.ms", "1000");
        return p;
    }

    static Admin admin(String bootstrap, String user, String password, boolean token) {
        return Admin.create(client(bootstrap, user, password, token));
    }
}
