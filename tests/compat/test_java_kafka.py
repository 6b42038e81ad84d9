"""The stock Java kafka-clients 3.9.x and 4.x against a live gateway (compat/java, KafkaCompat).

One gateway and one JVM per client version run every scenario; the gateway is restarted between the
commit and resume phases, with an idempotent producer sending through the restart. Expectations (compat/checks.py) were validated against Apache Kafka.
"""
import pytest

from compat import checks
from compat.harness import run_on_gateway
from compat.jvm import KAFKA_CLIENTS
from compat.scenarios import KAFKA_SCENARIOS
from shard_aware import broker_ids

# The module's JVM run (its fixture) bounds each scenario's waits; it counts against the first test.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module", params=sorted(KAFKA_CLIENTS))
def java_kafka(request, tmp_path_factory):
    with run_on_gateway(tmp_path_factory.mktemp(f"java-kafka-{request.param}"), KAFKA_CLIENTS[request.param],
                        "compat.KafkaCompat", lambda gw: [gw.kafka_bootstrap, "jk", *KAFKA_SCENARIOS],
                        restart_at_pause=True) as results:
        yield results


@pytest.mark.parametrize("codec", checks.CODECS)
def test_produce_consume_keys_headers_codec(java_kafka, codec):
    checks.kafka_codec(java_kafka["codecs"], codec)


def test_idempotent_producer_default_and_explicit(java_kafka):
    checks.kafka_idempotent(java_kafka["idempotent"])


def test_two_members_rebalance(java_kafka):
    checks.kafka_group(java_kafka["group"])


def test_commit_restart_resume(java_kafka):
    checks.kafka_commit(java_kafka["commit1"], java_kafka["commit2"])


def test_assign_and_seek(java_kafka):
    checks.kafka_seek(java_kafka["seek"])


def test_offsets_for_times(java_kafka):
    checks.kafka_times(java_kafka["times"])


def test_admin_topics_partitions_configs(java_kafka):
    checks.kafka_admin(java_kafka["admin"], len(broker_ids()))


def test_record_too_large(java_kafka):
    checks.kafka_too_large(java_kafka["too_large"])


def test_idempotent_producer_retries_across_restart(java_kafka):
    checks.kafka_retry(java_kafka["retry_start"], java_kafka["retry_finish"])
