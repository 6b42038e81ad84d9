"""The Java client and the Kafka 4.x command-line tools over SASL_SSL against the gateway: kafka-acls
add/list/remove, kafka-configs adding a SCRAM user, the console producer/consumer of that user,
allowed and denied, and a wrong password, with the exceptions the Java client reports."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

from compat.jvm import JVM_FLAGS
from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAFKA_JARS = os.path.join(ROOT, "bench", "jars", "kafka")
ACLS = "org.apache.kafka.tools.AclCommand"
CONFIGS = "kafka.admin.ConfigCommand"
PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"

pytestmark = pytest.mark.skipif(not glob.glob(os.path.join(KAFKA_JARS, "kafka_2.13-*.jar")) or not shutil.which("java"),
                                reason="needs java and the Kafka jars in bench/jars/kafka (make bench-jars)")


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    base = tmp_path_factory.mktemp("java-sasl-ssl")
    g = kg.start(str(base))
    g.props_dir = str(base)
    yield g
    g.stop()


def props(gw, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> str:
    path = os.path.join(gw.props_dir, f"{user}-{password}-{mechanism}.properties")
    with open(path, "w") as f:
        f.write(kg.java_properties(gw, user, password, mechanism))
    return path


def tool(main: str, *args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = ["java", *JVM_FLAGS, "-cp", os.path.join(KAFKA_JARS, "*"), main, *args]
    return subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)


def admin(gw, main: str, *args: str) -> str:
    r = tool(main, "--bootstrap-server", gw.kafka_bootstrap, "--command-config", props(gw, ADMIN, ADMIN_PW), *args)
    assert r.returncode == 0, f"{main} {args}: {r.stdout[-2000:]}{r.stderr[-3000:]}"
    return r.stdout


def console_produce(gw, user, password, topic, lines, mechanism="SCRAM-SHA-256"):
    return tool(PRODUCER, "--bootstrap-server", gw.kafka_bootstrap, "--topic", topic,
                "--command-config", props(gw, user, password, mechanism),
                "--producer-property", "max.block.ms=15000", "--producer-property", "delivery.timeout.ms=15000",
                "--producer-property", "request.timeout.ms=10000", input="\n".join(lines) + "\n")


def test_acls_add_list_remove(gw):
    out = admin(gw, ACLS, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--operation", "Write",
                "--topic", "bob-", "--resource-pattern-type", "prefixed")
    assert "patternType=PREFIXED" in out and "operation=WRITE" in out
    out = admin(gw, ACLS, "--add", "--deny-principal", "User:bob", "--operation", "Read", "--topic", "bob-secret")
    listed = admin(gw, ACLS, "--list", "--principal", "User:bob")
    assert "ResourcePattern(resourceType=TOPIC, name=bob-, patternType=PREFIXED)" in listed
    assert "(principal=User:bob, host=*, operation=READ, permissionType=DENY)" in listed
    admin(gw, ACLS, "--remove", "--force", "--deny-principal", "User:bob", "--operation", "Read", "--topic", "bob-secret")
    listed = admin(gw, ACLS, "--list", "--principal", "User:bob")
    assert "bob-secret" not in listed and "name=bob-," in listed


def test_configs_add_scram_user_then_java_clients(gw):
    both = tool(CONFIGS, "--bootstrap-server", gw.kafka_bootstrap, "--command-config", props(gw, ADMIN, ADMIN_PW),
                "--alter", "--entity-type", "users", "--entity-name", "carol",
                "--add-config", "SCRAM-SHA-256=[password=carol-pw],SCRAM-SHA-512=[password=carol-pw]")
    assert ("DuplicateResourceException: A user credential cannot be altered twice in the same request"
            in both.stdout + both.stderr)  # as Kafka 4.x: one mechanism per request
    for mechanism in ("SCRAM-SHA-256=[iterations=8192,password=carol-pw]", "SCRAM-SHA-512=[password=carol-pw]"):
        out = admin(gw, CONFIGS, "--alter", "--entity-type", "users", "--entity-name", "carol",
                    "--add-config", mechanism)
        assert "Completed updating config for user carol." in out
    out = admin(gw, CONFIGS, "--describe", "--entity-type", "users", "--entity-name", "carol")
    configs = out.rsplit(" are ", 1)[-1].strip().split(", ")  # Kafka lists them in no fixed order
    assert sorted(configs) == ["SCRAM-SHA-256=iterations=8192", "SCRAM-SHA-512=iterations=4096"], out
    admin(gw, ACLS, "--add", "--allow-principal", "User:carol", "--operation", "Write", "--operation", "Read",
          "--operation", "Create", "--topic", "carol-topic")
    admin(gw, ACLS, "--add", "--allow-principal", "User:carol", "--operation", "Read", "--group", "carol-group")

    r = console_produce(gw, "carol", "carol-pw", "carol-topic", ["one", "two"], "SCRAM-SHA-512")
    assert r.returncode == 0, r.stderr[-3000:]
    r = tool(CONSUMER, "--bootstrap-server", gw.kafka_bootstrap, "--topic", "carol-topic", "--from-beginning",
             "--group", "carol-group", "--max-messages", "2", "--timeout-ms", "30000",
             "--command-config", props(gw, "carol", "carol-pw"))
    assert r.stdout.split() == ["one", "two"], r.stderr[-3000:]

    r = console_produce(gw, "carol", "carol-pw", "not-carols", ["x"])
    assert "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: " \
           "[not-carols]" in r.stdout + r.stderr, r.stderr[-3000:]

    r = console_produce(gw, "carol", "wrong-pw", "carol-topic", ["x"])
    assert ("org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed during "
            "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256") in r.stdout + r.stderr, r.stderr[-3000:]

    r = tool(CONSUMER, "--bootstrap-server", gw.kafka_bootstrap, "--topic", "carol-topic", "--from-beginning",
             "--group", "someone-elses", "--max-messages", "1", "--timeout-ms", "20000",
             "--command-config", props(gw, "carol", "carol-pw"))
    assert "org.apache.kafka.common.errors.GroupAuthorizationException: Not authorized to access group: " \
           "someone-elses" in r.stdout + r.stderr, r.stderr[-3000:]
