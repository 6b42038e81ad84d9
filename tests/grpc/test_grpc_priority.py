"""Priority messages (RIP-80, RocketMQ 5.4+) through the Java gRPC SDK rocketmq-client-java 5.2.0
(compat.RocketLite): `setPriority` on a PRIORITY topic, a SimpleConsumer receives the highest
priority first (in send order within a priority) and sees each message's priority; a priority
message to a NORMAL topic is refused by the SDK from the route's accepted message types.
Apache RocketMQ 5.5.0's proxy (GRPC_TARGET=proxy) gave exactly these results."""
import os

import pytest

from compat.jvm import ScenarioRun
from lite_target import start

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("grpc-priority"))
    target = start(workdir, {"jp-priority": "PRIORITY", "jp-normal": "NORMAL"})
    try:
        yield ScenarioRun("rocketmqgrpc", "compat.RocketLite", [target.endpoints, "jp", "priority", "priority_on_normal"],
                          os.path.join(workdir, "logs"))
    finally:
        target.stop()


def test_highest_priority_first(java):
    r = java["priority"]
    assert r["order"] == ["p3-0", "p3-1", "p2-0", "p2-1", "p1-0", "p1-1", "p0-0", "p0-1"]
    assert r["priorities"] == [3, 3, 2, 2, 1, 1, 0, 0]


def test_priority_message_refused_on_a_normal_topic(java):
    r = java["priority_on_normal"]
    assert not r["sent"]
    assert "actualMessageType=PRIORITY, acceptMessageTypes=[NORMAL]" in r["error"][0]
