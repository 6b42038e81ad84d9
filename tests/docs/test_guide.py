"""docs/guide.md stays true: every fenced block of the guide is run against a real gateway (the guide's
addresses 127.0.0.1:9092 / 127.0.0.1:9876 replaced by the test gateway's), in the guide's order, each Python
block in its own interpreter as a reader would paste it, and what a block promises is checked afterwards.
A block that cannot run here (it installs, or needs a JVM tool) is listed in NOT_RUN with the reason, so a new
block fails test_every_block_is_run_or_explained until someone decides."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from gateway_process import ROOT, GatewayProcess, free_port, wait_port
import waiting

GUIDE = os.path.join(ROOT, "docs", "guide.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
# first line of a block -> why this test does not run it
NOT_RUN = {
    "make cli-tools": "needs a JVM; tests/ops/test_cli_tools.py runs each line as written",
    "./bin/mqadmin setConsumeMode": "a RocketMQ tool line and a Java statement (tests/compat/test_mqadmin.py and "
                              "tests/pop cover them)",
}


def blocks() -> list[tuple[str, str]]:
    with open(GUIDE, encoding="utf-8") as f:
        return [(lang, body) for lang, body in FENCE.findall(f.read())]


def python_blocks() -> list[str]:
    return [body for lang, body in blocks() if lang == "python"]


def test_every_block_is_run_or_explained():
    for lang, body in blocks():
        first = body.strip().splitlines()[0]
        assert lang in ("python", "sh") or any(first.startswith(k) for k in NOT_RUN), \
            f"guide block not run by tests/docs/test_guide.py and not in NOT_RUN: {first!r}"


def test_start_command(tmp_path):
    """The `sh` block's second line: the gateway starts on the given ports and exits 0 on SIGTERM.
    (`make run` on the first line installs the venv; the same command follows it.)"""
    (sh,) = [body for lang, body in blocks() if lang == "sh"]
    line = next(x for x in sh.splitlines() if "-m gateway" in x and not x.startswith("make"))
    kafka, remoting = free_port(), free_port()
    cmd = (line.split("#")[0].replace(".venv/bin/python", sys.executable)
           .replace("/var/lib/rocketgate", str(tmp_path / "data"))
           .replace("9092", str(kafka)).replace("9876", str(remoting)).split())
    assert "--flush" in cmd and "sync" in cmd
    proc = subprocess.Popen(cmd + ["--host", "127.0.0.1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_port(kafka)
        wait_port(remoting)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stdout.read().decode()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    grpc_port = free_port()
    # the transaction check-back comes after 2 s here (the guide says 60 s by default, and waits for it)
    g = GatewayProcess(str(tmp_path_factory.mktemp("guide") / "data"),
                       extra_args=["--grpc-port", str(grpc_port), "--transaction-check-interval-ms", "2000"]).start()
    g.grpc = f"127.0.0.1:{grpc_port}"
    wait_port(grpc_port)
    yield g
    g.stop()


def run_block(gw, index: int, timeout: float = 240) -> str:
    """Run the guide's Python block `index` as written (the guide's addresses made the test gateway's);
    its output."""
    code = (python_blocks()[index].replace("127.0.0.1:9092", gw.kafka_bootstrap)
            .replace("127.0.0.1:9876", gw.namesrv).replace("127.0.0.1:8181", gw.grpc))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"guide block {index} failed:\n{code}\n--- output ---\n{r.stdout}{r.stderr}"
    return r.stdout


def messages(gw, topic: str) -> int:
    """Messages in a topic: the sum of its partitions' high watermarks (0 if the topic does not exist)."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "guide-check"})
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return 0
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md.partitions)
    finally:
        c.close()


def wait_for(predicate, timeout: float = 20.0):
    return waiting.until(predicate, timeout, interval=0.2)


def test_python_blocks_in_order(gw):
    """The guide's Python blocks, in order, on one gateway: the Kafka producer stores its record, the
    filtered view exists and then holds the native client's `paid` message, the SimpleConsumer runs."""
    assert len(python_blocks()) == 6, "the guide's Python blocks changed: update this test"
    run_block(gw, 0)                                               # Kafka produce + consumer
    assert messages(gw, "orders") == 1
    run_block(gw, 1)                                               # the filtered view
    topics = AdminClient({"bootstrap.servers": gw.kafka_bootstrap}).list_topics(timeout=10).topics
    assert "orders-paid" in topics, "the filtered-view snippet did not create the view"
    run_block(gw, 2)                                               # native producer (paid + delayed) and consumer
    assert wait_for(lambda: messages(gw, "orders") >= 2)
    assert wait_for(lambda: messages(gw, "orders-paid") >= 1), "the view does not hold the paid message"
    before = messages(gw, "orders")
    out = run_block(gw, 3)                                         # TransactionProducer and its check listener
    assert "TransactionState.COMMIT" in out and "asked back: True" in out, out
    assert wait_for(lambda: messages(gw, "orders") >= before + 2), "both transactions' messages are delivered"
    out = run_block(gw, 4)                                         # gRPC: SimpleConsumer, PushConsumer, Producer
    assert "simple consumer got [b'order-45 created']" in out and "push consumer got it: True" in out, out
    run_block(gw, 5)                                               # the SimpleConsumer (POP)
