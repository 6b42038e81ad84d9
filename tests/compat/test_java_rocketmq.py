"""The stock Java rocketmq-client 4.9.x and 5.x (remoting) against a live gateway (compat/java, RocketCompat),
pointed at namesrvAddr=<gateway remoting port>. One gateway and one JVM per client version.
Expectations (compat/checks.py) were validated against Apache RocketMQ 5.x.
"""
import pytest

from compat import checks
from compat.harness import run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.scenarios import ROCKETMQ_SCENARIOS


# The module's JVM run (its fixture) bounds each scenario's waits; it counts against the first test.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module", params=sorted(ROCKETMQ_CLIENTS))
def java_rocketmq(request, tmp_path_factory):
    with run_on_gateway(tmp_path_factory.mktemp(f"java-rocketmq-{request.param}"), ROCKETMQ_CLIENTS[request.param],
                        "compat.RocketCompat", lambda gw: [gw.namesrv, "jr", *ROCKETMQ_SCENARIOS]) as results:
        yield results


def test_sync_async_oneway_batch_send(java_rocketmq):
    checks.rocketmq_send(java_rocketmq["send"])


def test_ordered_send_and_orderly_consumer(java_rocketmq):
    checks.rocketmq_ordered(java_rocketmq["ordered"])


def test_push_consumer_tag_subscription(java_rocketmq):
    checks.rocketmq_push_tags(java_rocketmq["push_tags"])


def test_lite_pull_consumer_commit_and_resume(java_rocketmq):
    checks.rocketmq_lite(java_rocketmq["lite_subscribe"])


def test_transactional_producer_commit_and_rollback(java_rocketmq):
    checks.rocketmq_transaction(java_rocketmq["transaction"])


def test_reconsume_later_redelivers_via_retry_topic(java_rocketmq):
    checks.rocketmq_reconsume(java_rocketmq["reconsume"])
