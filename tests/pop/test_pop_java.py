"""The stock Java rocketmq-client 5.x push consumer in POP mode (compat/java RocketPop) against a live
gateway: the topic/group is switched to POP with `mqadmin setConsumeMode`, the consumer asks the
broker for its assignment (clientRebalance=false) and pops with queueId -1.
Expectations were checked against Apache RocketMQ 5.5.0 (same scenario, same assertions):
    PYTHONPATH=.:tests python tests/pop/test_pop_java.py   # needs bench/jars (make bench-jars), minutes
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from compat.harness import start_gateway
from compat.jvm import JAVA_DIR, ScenarioRun, run_admin_batch
from compat.tools import mqadmin
from codec.remoting import RequestCode as RC
from remoting.wire import Peer

pytestmark = pytest.mark.timeout(600)
N = 24
SCENARIOS = ("ack", "nack")


def pop_classes(tmp_path) -> str:
    """The module whose classes hold compat.RocketPop (built by `make compat-jars`)."""
    built = os.path.join(JAVA_DIR, "rocketmq5", "target", "classes", "compat", "RocketPop.class")
    assert os.path.exists(built), "compat.RocketPop is not built: run make compat-jars"
    return "rocketmq5"


def run_scenarios(module, namesrv, log_dir, create_topic) -> dict[str, tuple[dict, str]]:
    """Per scenario a topic with 4 queues and a group in POP mode (mqadmin setConsumeMode), the Java
    runs (at the same time: they mostly wait), then `mqadmin consumerProgress`; returns each
    scenario's (result, progress output). The mqadmin commands of a step run in one JVM."""
    names = {scenario: (f"PopJava{scenario}", f"pop-java-{scenario}") for scenario in SCENARIOS}
    for topic, group in names.values():
        create_topic(topic, group)
    modes = run_admin_batch([[["setConsumeMode", "-n", namesrv, "-c", "DefaultCluster", "-t", topic, "-g", group,
                               "-m", "POP", "-q", "0"] for topic, group in names.values()]], log_dir)
    assert all(m["ok"] for m in modes), modes

    def run(scenario):
        topic, group = names[scenario]
        return ScenarioRun(module, "compat.RocketPop", [namesrv, topic, group, str(N), scenario],
                           os.path.join(log_dir, scenario))[scenario]
    with ThreadPoolExecutor(len(SCENARIOS)) as pool:
        results = dict(zip(SCENARIOS, pool.map(run, SCENARIOS)))
    progress = run_admin_batch([[["consumerProgress", "-n", namesrv, "-g", group] for _, group in names.values()]],
                               log_dir)
    return {scenario: (results[scenario], p["output"]) for scenario, p in zip(SCENARIOS, progress)}


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


@pytest.fixture(scope="module")
def popped(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("pop-java")
    module = pop_classes(tmp_path)
    gw = start_gateway(tmp_path)

    def create_topic(topic, group):
        Peer(gw.namesrv).call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": 4, "writeQueueNums": 4,
                                                           "perm": 6})
    try:
        yield run_scenarios(module, gw.namesrv, str(tmp_path / "logs"), create_topic)
    finally:
        gw.stop()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_java_push_consumer_in_pop_mode(popped, scenario):
    result, progress = popped[scenario]
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
        for scenario, (result, progress) in run_scenarios(module, broker.namesrv, str(work / "logs"),
                                                          create_topic).items():
            # RocketMQ redelivers through the POP retry topic %RETRY%<group>_<topic>, which its name
            # server does not route yet, so its consumerProgress fails there; the gateway redelivers in place.
            check(scenario, result, progress if scenario == "ack" else None)
            print(f"PASS {scenario}")


if __name__ == "__main__":
    validate_on_rocketmq()
