"""Kafka Connect 4.3 (connect-runtime + connect-file, compat/java/kafkaconnect) against a live gateway.

FileStreamSource → one-partition topic → FileStreamSink must copy a file exactly, in standalone mode
(offsets in a local file) and in distributed mode, where the worker keeps connector configs, source
offsets and statuses in three compacted topics and coordinates through a group; a restarted
distributed worker reads its connectors back from the config topic and resumes from the stored
offsets, so lines appended while it was down are copied once; with KIP-618 exactly-once source support
a worker killed -9 in the middle of a file leaves every line in the topic exactly once. Minutes long,
so it runs only with KAFKA_APPS=1: `make compat-connect`.

Run against real Kafka first: KAFKA_REFERENCE_BOOTSTRAP=host:port points every test at it.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import uuid

import pytest
import confluent_kafka
from test_kafka_streams import broker, create_topics, topic_config  # noqa: F401 (fixture broker)

from compat.jvm import java_command
from gateway_process import free_port

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(not os.environ.get("KAFKA_APPS"), reason="long: make compat-connect")]
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
CONVERTERS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter"}


def write_props(path, props: dict) -> str:
    with open(path, "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in props.items())
    return str(path)


def lines(n: int, start: int = 0) -> list[str]:
    return [f"line {i} {uuid.uuid4().hex}" for i in range(start, start + n)]


def append(path, text_lines: list[str]) -> None:
    with open(path, "a") as f:
        f.writelines(line + "\n" for line in text_lines)


def wait_copied(out_path, expected: list[str], worker, timeout: float = 180) -> list[str]:
    """The sink file's lines once it has as many as `expected` (and 2 s later, to see extra ones)."""
    deadline, got = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        got = open(out_path).read().splitlines() if os.path.exists(out_path) else []
        if len(got) >= len(expected):
            time.sleep(2)
            return open(out_path).read().splitlines()
        assert worker.poll() is None, f"worker exited {worker.returncode}"
        time.sleep(0.5)
    return got


class Worker:
    """A Connect worker JVM (ConnectStandalone or ConnectDistributed) logging to a file."""

    def __init__(self, main: str, args: list[str], log_dir):
        self.log = os.path.join(log_dir, f"connect-{uuid.uuid4().hex[:6]}.log")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(java_command("kafkaconnect", main, args, str(log_dir)), stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(log_dir))

    def poll(self):
        return self.proc.poll()

    @property
    def returncode(self):
        return self.proc.returncode

    def tail(self) -> str:
        with open(self.log, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self) -> None:
        self.proc.terminate()  # SIGTERM: Connect's shutdown hook flushes offsets and leaves the group
        try:
            self.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)


def test_standalone_file_source_to_file_sink(broker, tmp_path):
    topic = f"connect-sa-{uuid.uuid4().hex[:6]}"
    create_topics(broker.bootstrap, topic, partitions=1)
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = lines(500)
    append(src, expected)
    worker_props = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": broker.bootstrap, **CONVERTERS, "offset.flush.interval.ms": "1000",
        "offset.storage.file.filename": tmp_path / "offsets", "listeners": f"http://127.0.0.1:{free_port()}"})
    source = write_props(tmp_path / "source.properties", {"name": "file-source", "connector.class": SOURCE,
                                                          "tasks.max": 1, "file": src, "topic": topic})
    sink = write_props(tmp_path / "sink.properties", {"name": "file-sink", "connector.class": SINK,
                                                      "tasks.max": 1, "file": out, "topics": topic})
    w = Worker("org.apache.kafka.connect.cli.ConnectStandalone", [worker_props, source, sink], tmp_path)
    try:
        got = wait_copied(out, expected, w)
        assert got == expected, f"{len(got)} of {len(expected)} lines\n{w.tail()}{broker.context()}"
    finally:
        w.stop()


def rest(port: int, method: str, path: str, body: dict | None = None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def wait_rest(port: int, worker, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert worker.poll() is None, f"worker exited {worker.returncode}\n{worker.tail()}"
        try:
            rest(port, "GET", "/connectors")
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"Connect REST API not up\n{worker.tail()}")


def distributed_props(broker, tmp_path, tag: str, port: int, **extra) -> tuple[str, dict]:
    """worker.properties of a distributed worker in group connect-TAG, and its internal topics."""
    internal = {"config.storage.topic": f"connect-configs-{tag}", "offset.storage.topic": f"connect-offsets-{tag}",
                "status.storage.topic": f"connect-status-{tag}"}
    path = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": broker.bootstrap, "group.id": f"connect-{tag}", **CONVERTERS, **internal,
        "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1, "offset.storage.partitions": 5, "status.storage.partitions": 3,
        "offset.flush.interval.ms": "1000", "listeners": f"http://127.0.0.1:{port}",
        "rest.advertised.host.name": "127.0.0.1", "rest.advertised.port": port, **extra})
    return path, internal


DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"


def test_distributed_copies_exactly_and_resumes_after_restart(broker, tmp_path):
    tag = uuid.uuid4().hex[:6]
    topic, port = f"connect-dist-{tag}", free_port()
    create_topics(broker.bootstrap, topic, partitions=1)
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = lines(500)
    append(src, expected)
    worker_props, internal = distributed_props(broker, tmp_path, tag, port)
    main = DISTRIBUTED
    w = Worker(main, [worker_props], tmp_path)
    try:
        wait_rest(port, w)
        rest(port, "POST", "/connectors", {"name": "file-source", "config": {
            "connector.class": SOURCE, "tasks.max": "1", "file": str(src), "topic": topic}})
        rest(port, "POST", "/connectors", {"name": "file-sink", "config": {
            "connector.class": SINK, "tasks.max": "1", "file": str(out), "topics": topic}})
        got = wait_copied(out, expected, w)
        assert got == expected, f"{len(got)} of {len(expected)} lines\n{w.tail()}{broker.context()}"
    finally:
        w.stop()
    for name in internal.values():
        assert topic_config(broker.bootstrap, name, "cleanup.policy") == "compact", name

    more = lines(300, start=500)
    append(src, more)
    w = Worker(main, [worker_props], tmp_path)
    try:
        wait_rest(port, w)
        got = wait_copied(out, expected + more, w)
        assert got == expected + more, f"{len(got)} of {len(expected + more)} lines\n{w.tail()}{broker.context()}"
        assert sorted(rest(port, "GET", "/connectors")) == ["file-sink", "file-source"]
    finally:
        w.stop()


def read_topic(bootstrap: str, topic: str, count: int, timeout: float = 240) -> list[str]:
    """One-partition `topic` read_committed from the start until `count` values (and 3 s more) or timeout."""
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:8]}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        values, deadline, full_at = [], time.monotonic() + timeout, None
        while time.monotonic() < deadline and (full_at is None or time.monotonic() - full_at < 3):
            values += [m.value().decode() for m in c.consume(1000, 0.5) if m.error() is None]
            if full_at is None and len(values) >= count:
                full_at = time.monotonic()
        return values
    finally:
        c.close()


def committed_records(bootstrap: str, topic: str) -> int:
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:8]}",
                                  "isolation.level": "read_committed"})
    try:
        return c.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), timeout=30)[1]
    finally:
        c.close()


def test_distributed_exactly_once_source_survives_kill(broker, tmp_path):
    """KIP-618 exactly-once source (exactly.once.source.support=enabled): the task's records and its
    source offsets are written in one transaction, so a worker killed -9 in the middle of a large file
    and restarted (fencing the old task's transactional producer) leaves every line in the topic exactly
    once, in order, for a read_committed reader."""
    tag = uuid.uuid4().hex[:6]
    topic, port = f"connect-eos-{tag}", free_port()
    create_topics(broker.bootstrap, topic, partitions=1)
    src = tmp_path / "in.txt"
    expected = lines(100_000)
    append(src, expected)
    worker_props, _ = distributed_props(broker, tmp_path, tag, port, **{"exactly.once.source.support": "enabled"})
    w = Worker(DISTRIBUTED, [worker_props], tmp_path)
    try:
        wait_rest(port, w)
        rest(port, "POST", "/connectors", {"name": "file-source", "config": {
            "connector.class": SOURCE, "tasks.max": "1", "file": str(src), "topic": topic,
            "batch.size": "500"}})
        deadline = time.monotonic() + 180
        while committed_records(broker.bootstrap, topic) < 1000 and time.monotonic() < deadline:
            assert w.poll() is None, w.tail()
            time.sleep(0.2)
        copied_before_kill = committed_records(broker.bootstrap, topic)
    finally:
        w.proc.kill()
        w.proc.wait(30)
    assert 0 < copied_before_kill < len(expected), f"not killed mid-file: {copied_before_kill}\n{w.tail()}"
    w = Worker(DISTRIBUTED, [worker_props], tmp_path)
    try:
        wait_rest(port, w)
        got = read_topic(broker.bootstrap, topic, len(expected))
        assert len(got) == len(expected) and got == expected, (
            f"{len(got)} values for {len(expected)} lines ({len(got) - len(set(got))} duplicates; "
            f"{copied_before_kill} before the kill)\n{w.tail()}{broker.context()}")
    finally:
        w.stop()
