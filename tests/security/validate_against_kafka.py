"""The SASL_SSL client matrix of tests/security against a real Apache Kafka 4.x broker (bench/jars/kafka),
so a difference is the gateway's bug: `python -m tests.security.validate_against_kafka [WORD...]` (only the
checks whose name contains one of the words, if given).

One KRaft node: a SASL_SSL listener (SCRAM-SHA-256/512 users admin and alice made at format time,
PLAIN from the JAAS config), StandardAuthorizer with super user admin, the same test certificates.
Prints PASS/FAIL per check (run 2026-11 against Kafka 4.3.1: all pass; docs/security.md).
"""
from __future__ import annotations

import base64
import os
import subprocess
import sys
import tempfile
import time
import traceback
import types
import uuid

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic
from confluent_kafka.admin import ResourcePatternType, ResourceType

from compat.jvm import JVM_FLAGS
from tests.gateway_process import free_port, wait_port
from tests.security import kafka_gateway as kg
from tests.security import test_kafka_admin_describe_acl as describe_tests
from tests.security import test_kafka_java_sasl_ssl as java_tests
from tests.security import test_kafka_share_acl as share_tests
from tests.security import test_kafka_share_topic_acl as share_topic_tests
from tests.security import test_kafka_streams_acl as streams_tests
from tests.security import test_kafka_matrix_cells as cells
from tests.security import test_kafka_sasl_ssl as tests
from tests.security.certs import make_certs

USERS = {kg.ADMIN: kg.ADMIN_PW, kg.ALICE: kg.ALICE_PW}


def start_kafka(work: str, certs, authorizer: bool = True) -> tuple[subprocess.Popen, int]:
    """Kafka with the SASL_SSL listener; `authorizer` False: no authorizer.class.name (authentication only)."""
    port, controller, internal = free_port(), free_port(), free_port()
    with open(os.path.join(work, "keystore.pem"), "w") as out:
        for path in (certs.server_key, certs.server_cert):
            out.write(open(path).read())
    plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    props = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"SASL_SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},INTERNAL://127.0.0.1:{internal}",
        "advertised.listeners": f"SASL_SSL://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}",
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": os.path.join(work, "keystore.pem"),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",  # ANONYMOUS: the internal plaintext listeners only
        "log.dirs": os.path.join(work, "logs"), "num.partitions": "1",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    if not authorizer:
        del props["authorizer.class.name"], props["super.users"]
    config = os.path.join(work, "server.properties")
    with open(config, "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in props.items())
    cp = os.path.join(java_tests.KAFKA_JARS, "*")
    scram = [a for u, p in USERS.items() for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
             for a in ("--add-scram", f"{m}=[name={u},password={p}]")]
    cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    subprocess.run(["java", "-Xmx512m", "-cp", cp, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster}",
                    "-c", config, *scram], check=True, capture_output=True, timeout=120)
    log = open(os.path.join(work, "kafka.log"), "wb")
    proc = subprocess.Popen(["java", *JVM_FLAGS[:3], f"-Dkafka.logs.dir={work}", "-cp", cp, "kafka.Kafka", config],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(port, timeout=300)  # a loaded machine starts the JVM slowly
    except TimeoutError:
        proc.terminate()
        proc.wait(60)
        raise
    return proc, port


def main(words: list[str]) -> int:
    work = tempfile.mkdtemp(prefix="kafka-sasl-ssl-")
    certs = make_certs(os.path.join(work, "certs"))
    proc, port = start_kafka(work, certs)
    failed = 0
    try:
        broker = types.SimpleNamespace(kafka_bootstrap=f"127.0.0.1:{port}", certs=certs, props_dir=work)
        admin = AdminClient(kg.librdkafka(broker, kg.ADMIN, kg.ADMIN_PW))
        for f in admin.create_topics([NewTopic("orders", 1), NewTopic("secret", 1)]).values():
            f.result(60)
        acls = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, f"User:{kg.ALICE}", "*", op,
                           AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.WRITE)]
        acls.append(AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED, f"User:{kg.ALICE}", "*",
                               AclOperation.READ, AclPermissionType.ALLOW))
        for f in admin.create_acls(acls).values():
            f.result(60)
        time.sleep(2)  # the new topics' leadership settles
        checks = [(tests.test_librdkafka_right_credentials_produce, (m,))
                  for m in ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")]
        checks += [(tests.test_librdkafka_wrong_password_or_unknown_user, (u, p, m))
                   for u, p in ((kg.ALICE, "wrong"), ("mallory", "x")) for m in ("SCRAM-SHA-256", "PLAIN")]
        checks += [(fn, ()) for fn in (tests.test_librdkafka_without_sasl_is_disconnected,
                                       tests.test_librdkafka_denied_topic, tests.test_librdkafka_allowed_and_denied_groups,
                                       tests.test_metadata_lists_only_described_topics,
                                       tests.test_acls_need_alter_on_the_cluster,
                                       tests.test_admin_apis_as_a_user_without_rights,
                                       tests.test_transactional_and_idempotent_producers,
                                       tests.test_kip848_consumer_groups,
                                       java_tests.test_acls_add_list_remove,
                                       java_tests.test_configs_add_scram_user_then_java_clients)]
        log_text = types.SimpleNamespace(text="", clear=lambda: setattr(log_text, "text", ""),
                                         set_level=lambda *_a, **_k: None)  # kafka-python's log, as caplog
        import logging
        handler = logging.Handler()
        handler.emit = lambda r: setattr(log_text, "text", log_text.text + r.getMessage() + "\n")
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        checks.insert(0, (tests.test_kafka_python_matrix, (log_text,)))
        checks += [(fn, ()) for fn in (cells.test_java_plain_wrong_password_and_unknown_user,
                                       cells.test_java_without_sasl_times_out,
                                       cells.test_java_cluster_authorization_denied,
                                       cells.test_kafka_python_without_sasl_cannot_bootstrap,
                                       cells.test_kafka_python_cluster_authorization_denied)]
        checks.append((cells.test_kafka_python_plain_wrong_password_and_unknown_user, (log_text,)))
        checks += [(fn, ()) for fn in (describe_tests.test_describe_log_dirs_needs_describe_on_the_cluster,
                                       describe_tests.test_list_config_resources_needs_describe_configs_on_the_cluster,
                                       describe_tests.test_describe_producers_needs_read_on_the_topic,
                                       describe_tests.test_transactions_need_describe_on_the_transactional_id,
                                       describe_tests.test_client_quotas_need_configs_rights_on_the_cluster,
                                       share_tests.test_share_consumer_needs_read_on_the_group,
                                       share_tests.test_share_group_admin_needs_describe_and_delete_on_the_group,
                                       share_topic_tests.test_share_consumer_needs_describe_on_subscribed_topics,
                                       share_topic_tests.test_share_fetch_needs_read_on_the_topic,
                                       share_topic_tests.test_share_group_offsets_need_read_on_the_topic,
                                       streams_tests.test_streams_heartbeat_needs_read_on_the_group_and_describe_on_the_topics,
                                       streams_tests.test_streams_describe_needs_describe_on_the_group_and_its_topics,
                                       streams_tests.test_streams_heartbeat_creates_internal_topics_with_create_on_them)]
        if words:
            checks = [c for c in checks if any(w in c[0].__module__ + "." + c[0].__name__ for w in words)]
        for fn, args in checks:
            try:
                fn(broker, *args)
                print("PASS", fn.__name__, *(a for a in args if a is not log_text))
            except Exception as exc:  # noqa: BLE001 - report every check
                failed += 1
                where = traceback.extract_tb(exc.__traceback__)[-1]
                print("FAIL", fn.__name__, f"line {where.lineno}: {where.line}",
                      repr(exc)[:800])
    finally:
        proc.terminate()
        proc.wait(60)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
