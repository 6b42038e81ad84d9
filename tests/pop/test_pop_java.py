"""The stock Java rocketmq-client 5.x push consumer in POP mode (compat/java RocketPop) against a live
gateway: the topic/group is switched to POP with `mqadmin setConsumeMode`, the consumer asks the
broker for its assignment (clientRebalance=false) and pops with queueId -1.
Expectations were checked against Apache RocketMQ 5.5.0 (same scenario, same assertions):
    PYTHONPATH=.:tests python tests/pop/test_pop_java.py   # needs bench/jars (make bench-jars), minutes
"""
from __future__ import annotations

import os

import pytest

from compat.harness import start_gateway
from compat.jvm import JAVA_DIR, ScenarioRun
from compat.tools import mqadmin
from codec.remoting import RequestCode as RC
from remoting.wire import Peer

pytestmark = pytest.mark.timeout(600)
N = 24


def pop_classes(tmp_path) -> str:
    """The module whose classes hold compat.RocketPop (built by `make compat-jars`)."""
    built = os.path.join(JAVA_DIR, "rocketmq5", "target", "classes", "compat", "RocketPop.class")
    assert os.path.exists(built), "compat.RocketPop is not built: run make compat-jars"
    return "rocketmq5"


def run_scenario(module, namesrv, scenario, log_dir, create_topic) -> tuple[dict, str]:
    """Topic with 4 queues, group in POP mode (mqadmin setConsumeMode), the Java run, then
    `mqadmin consumerProgress`; returns (the scenario's result, the progress output)."""
    topic, group = f"PopJava{scenario}", f"pop-java-{scenario}"
    create_topic(topic, group)
    r = mqadmin(["setConsumeMode", "-n", namesrv, "-c", "DefaultCluster", "-t", topic, "-g", group,
                 "-m", "POP", "-q", "0"], log_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    result = ScenarioRun(module, "compat.RocketPop", [namesrv, topic, group, str(N), scenario], log_dir)[scenario]
    progress = mqadmin(["consumerProgress", "-n", namesrv, "-g", group], log_dir)
    return result, progress.stdout + progress.stderr


def check(scenario: str, result: dict, progress: str | None) -> None:
    assert result["distinct"] == N
    assert result["succeeded"] == N
    assert result["with_receipt"] == result["deliveries"]  # every message came by POP (it carries a receipt)
    if progress is not None:
        assert "Diff Total: 0" in progress, progress  # POP progress is the group's offset
    if scenario == "ack":
        assert result["deliveries"] == N  # each once
        assert result["max_reconsume_times"] == 0
    else:
        assert result["deliveries"] == 2 * N  # refused once, delivered again after the new invisible time
        assert result["min_reconsume_times"] == 1 == result["max_reconsume_times"]


@pytest.mark.parametrize("scenario", ["ack", "nack"])
def test_java_push_consumer_in_pop_mode(tmp_path, scenario):
    module = pop_classes(tmp_path)
    gw = start_gateway(tmp_path)

    def create_topic(topic, group):
        Peer(gw.namesrv).call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": 4, "writeQueueNums": 4,
                                                           "perm": 6})
    try:
        result, progress = run_scenario(module, gw.namesrv, scenario, str(tmp_path / "logs"), create_topic)
    finally:
        gw.stop()
    check(scenario, result, progress)


def validate_on_rocketmq() -> None:
    """The same scenarios and checks against Apache RocketMQ (bench/brokers.py)."""
    import pathlib
    import tempfile

    from bench.brokers import RocketMQBroker
    work = pathlib.Path(tempfile.mkdtemp(prefix="pop-validate-"))
    module = pop_classes(work)
    with RocketMQBroker(str(work / "broker")) as broker:
        def create_topic(topic, group):
            for args in (["updateTopic", "-t", topic, "-r", "4", "-w", "4"], ["updateSubGroup", "-g", group]):
                r = mqadmin([args[0], "-n", broker.namesrv, "-c", "DefaultCluster", *args[1:]], str(work / "logs"))
                assert r.returncode == 0, r.stdout + r.stderr
        for scenario in ("ack", "nack"):
            result, progress = run_scenario(module, broker.namesrv, scenario, str(work / "logs"), create_topic)
            # RocketMQ redelivers through the POP retry topic %RETRY%<group>_<topic>, which its name
            # server does not route yet, so its consumerProgress fails there; the gateway redelivers in place.
            check(scenario, result, progress if scenario == "ack" else None)
            print(f"PASS {scenario}")


if __name__ == "__main__":
    validate_on_rocketmq()
