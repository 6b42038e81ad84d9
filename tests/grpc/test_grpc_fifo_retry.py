"""FIFO message groups on the pop engine through the Java gRPC SDK 5.2.0 (compat.RocketLite, SimpleConsumer):
five messages of one group; the first, received and not acknowledged, blocks its group (a receive in the
meantime gets nothing) until its invisible time ends; it then comes again (delivery attempt 2) and, once
acknowledged, the other four follow in send order. Apache RocketMQ 5.5.0 (GRPC_TARGET=proxy, an orderly
consumer group) gave the same results."""
import pytest

from lite_target import java_scenarios

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    return java_scenarios(str(tmp_path_factory.mktemp("grpc-fifo-retry")), {"jf-fifo": "FIFO"}, {}, "jf",
                          ["fifo_retry"], fifo_groups=["jf-fifo-g"])


def test_an_unacknowledged_message_blocks_its_group_then_order_holds(java):
    r = java["fifo_retry"]
    assert r["first"] == "f0" and r["blocked"] == []
    assert r["again"] == "f0" and r["again_attempt"] == 2
    assert r["rest"] == ["f1", "f2", "f3", "f4"]
