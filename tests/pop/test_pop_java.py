"""The stock Java rocketmq-client 5.x push consumer in POP mode (compat/java RocketPop) against a live
gateway: the topic/group is switched to POP with `mqadmin setConsumeMode`, the consumer asks the
broker for its assignment (clientRebalance=false) and pops with queueId -1.
Expectations were checked against Apache RocketMQ 5.x (same scenario, same assertions)."""
from __future__ import annotations

import os
import subprocess

import pytest

from compat.harness import start_gateway
from compat.jvm import JAVA_DIR, CompatError, ScenarioRun, classpath
from compat.tools import mqadmin
from codec.remoting import RequestCode as RC
from remoting.wire import Peer

pytestmark = pytest.mark.timeout(600)
N = 24


def pop_classes(tmp_path) -> str:
    """compat.RocketPop compiled by `make compat-jars`, or compiled here against the same classpath."""
    try:
        cp = classpath("rocketmq5")
    except CompatError as exc:
        pytest.skip(str(exc))
    built = os.path.join(JAVA_DIR, "rocketmq5", "target", "classes")
    if os.path.exists(os.path.join(built, "compat", "RocketPop.class")):
        return "rocketmq5"
    out = tmp_path / "classes"
    src = os.path.join(JAVA_DIR, "src")
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", cp, os.path.join(src, "rocketmq", "compat", "RocketPop.java"),
                    os.path.join(src, "common", "compat", "Out.java")], check=True, capture_output=True)
    module = tmp_path / "module"
    (module / "target").mkdir(parents=True)
    (module / "target" / "classpath.txt").write_text(f"{out}:{cp}")
    return str(module)  # an absolute path: os.path.join(JAVA_DIR, module) keeps it


@pytest.mark.parametrize("scenario", ["ack", "nack"])
def test_java_push_consumer_in_pop_mode(tmp_path, scenario):
    module = pop_classes(tmp_path)
    gw = start_gateway(tmp_path)
    try:
        topic, group = f"PopJava{scenario}", f"pop-java-{scenario}"
        Peer(gw.namesrv).call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": 4, "writeQueueNums": 4,
                                                           "perm": 6})
        r = mqadmin(["setConsumeMode", "-n", gw.namesrv, "-c", "DefaultCluster", "-t", topic, "-g", group,
                     "-m", "POP", "-q", "0"], str(tmp_path / "logs"))
        assert r.returncode == 0, r.stdout + r.stderr
        run = ScenarioRun(module, "compat.RocketPop", [gw.namesrv, topic, group, str(N), scenario], str(tmp_path / "logs"))
        result = run[scenario]
        progress = mqadmin(["consumerProgress", "-n", gw.namesrv, "-g", group], str(tmp_path / "logs"))
    finally:
        gw.stop()
    assert result["distinct"] == N
    print(progress.stdout)
    assert "Diff Total: 0" in progress.stdout, progress.stdout + progress.stderr  # POP progress is the group's offset
    assert result["succeeded"] == N
    assert result["with_receipt"] == result["deliveries"]  # every message came by POP (it carries a receipt)
    if scenario == "ack":
        assert result["deliveries"] == N  # each once
        assert result["max_reconsume_times"] == 0
    else:
        assert result["deliveries"] == 2 * N  # refused once, delivered again after the new invisible time
        assert result["min_reconsume_times"] == 1 == result["max_reconsume_times"]
