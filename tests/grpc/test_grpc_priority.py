"""Priority messages (RIP-80, RocketMQ 5.4+) through the Java gRPC SDK rocketmq-client-java 5.2.0
(compat.RocketLite): `setPriority` on a PRIORITY topic, a SimpleConsumer receives the highest
priority first (in send order within a priority) and sees each message's priority; a priority
message to a NORMAL topic is refused by the SDK from the route's accepted message types.
Apache RocketMQ 5.5.0's proxy (GRPC_TARGET=proxy) gave exactly these results."""
import pytest

from lite_target import java_scenarios

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    return java_scenarios(str(tmp_path_factory.mktemp("grpc-priority")), {"jp-priority": "PRIORITY", "jp-normal": "NORMAL"},
                          {}, "jp", ["priority", "priority_on_normal"])


def test_highest_priority_first(java):
    r = java["priority"]
    assert r["order"] == ["p3-0", "p3-1", "p2-0", "p2-1", "p1-0", "p1-1", "p0-0", "p0-1"]
    assert r["priorities"] == [3, 3, 2, 2, 1, 1, 0, 0]


def test_priority_message_refused_on_a_normal_topic(java):
    r = java["priority_on_normal"]
    assert not r["sent"]
    assert "actualMessageType=PRIORITY, acceptMessageTypes=[NORMAL]" in r["error"][0]
