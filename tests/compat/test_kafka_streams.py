"""Kafka Streams (kafka-streams 4.3, compat/java/kafkastreams) word count against a live gateway.

The topology (compat.WordCount) re-keys words through a repartition topic and counts them in a KTable
whose store is backed by a compacted changelog topic. Input is produced and the output read back with
librdkafka (confluent-kafka, read_committed); the latest count per word must equal the exact counts of
the input. With exactly_once_v2 (transactions) the counts stay exact across a kill -9 of the app and a
restart from an empty state directory (the store is restored from its changelog). With
group.protocol=streams (KIP-1071) the coordinator makes the internal topics and assigns the tasks;
two instances share them (StreamsGroupDescribe) and the survivor of a kill -9 takes them over.
Minutes long, so it runs only with KAFKA_APPS=1: `make compat-streams`.

Run against real Kafka first: KAFKA_REFERENCE_BOOTSTRAP=host:port points every test at it.
"""
from __future__ import annotations

import collections
import os
import random
import socket
import struct
import subprocess
import threading
import time
import uuid

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

from codec.kafka import protocol  # noqa: E402
from compat.harness import failure_context, start_gateway  # noqa: E402
from compat.jvm import java_command  # noqa: E402

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(not os.environ.get("KAFKA_APPS"), reason="long: make compat-streams")]
REFERENCE = os.environ.get("KAFKA_REFERENCE_BOOTSTRAP")
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]


class Broker:
    def __init__(self, bootstrap: str, gateway=None):
        self.bootstrap, self.gateway = bootstrap, gateway

    def context(self) -> str:
        return failure_context(self.gateway) if self.gateway else ""


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    if REFERENCE:
        yield Broker(REFERENCE)
        return
    g = start_gateway(tmp_path_factory.mktemp("gateway"))
    yield Broker(g.kafka_bootstrap, g)
    g.stop()


def make_lines(seed: int, n: int) -> tuple[list[str], collections.Counter]:
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in range(n)]
    return lines, collections.Counter(w for line in lines for w in line.split())


def create_topics(bootstrap: str, *names: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        f.result(30)


def produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i, line in enumerate(lines):
        p.produce(topic, key=str(i).encode(), value=line.encode())
        p.poll(0)
    assert p.flush(60) == 0


def read_counts(bootstrap: str, topic: str, expected: dict, timeout: float = 120) -> dict:
    """Latest count per word in `topic` (read_committed, from the beginning of every partition); returns
    once they equal `expected` and stay equal for 3 s of further polling, or at the timeout."""
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        c.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in parts])
        counts: dict[str, int] = {}
        deadline, equal_since = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is None:
                    counts[m.key().decode()] = struct.unpack(">q", m.value())[0]
            if counts == expected:
                equal_since = equal_since or time.monotonic()
                if time.monotonic() - equal_since >= 3:
                    break
            else:
                equal_since = None
        return counts
    finally:
        c.close()


def low_watermarks(bootstrap: str, topic: str) -> list[int]:
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{uuid.uuid4().hex[:8]}"})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        return [c.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=30)[0] for p in parts]
    finally:
        c.close()


def wait_purged(bootstrap: str, topic: str, timeout: float = 60) -> list[int]:
    """Low watermarks of `topic` once Streams' DeleteRecords moved one above 0 (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        lows = low_watermarks(bootstrap, topic)
        if any(lows) or time.monotonic() > deadline:
            return lows
        time.sleep(1)


def topic_config(bootstrap: str, topic: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res])[res].result(30)[name].value


def streams_tasks(bootstrap: str, group: str) -> list[int]:
    """Active task count of each member of a streams group (StreamsGroupDescribe v0)."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(protocol.request_frame(89, 0, 1, {"group_ids": [group], "include_authorized_operations": False}))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        _, resp = protocol.decode_response(89, 0, sock.recv(size, socket.MSG_WAITALL))
    return [sum(len(t["partitions"]) for t in m["assignment"]["active_tasks"]) for m in resp["groups"][0]["members"]]


class StreamsApp:
    """compat.WordCount as a subprocess: started, waited for RUNNING, stopped cleanly or killed."""

    def __init__(self, bootstrap, app_id, input_topic, output_topic, guarantee, state_dir, log_dir,
                 group_protocol: str = "classic"):
        args = [bootstrap, app_id, input_topic, output_topic, guarantee, str(state_dir), "1", group_protocol]
        cmd = java_command("kafkastreams", "compat.WordCount", args, str(log_dir))
        self.stderr = open(os.path.join(log_dir, f"streams-{uuid.uuid4().hex[:6]}.stderr"), "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, cwd=str(log_dir))
        self.lines: list[str] = []
        self.running = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if '"RUNNING"' in line:
                self.running.set()

    def wait_running(self, timeout: float = 120) -> None:
        assert self.running.wait(timeout), f"streams app not RUNNING: {self.lines} {self.tail()}"

    def errors(self) -> list[str]:
        return [line for line in self.lines if '"error"' in line]

    def tail(self) -> str:
        self.stderr.flush()
        with open(self.stderr.name, errors="replace") as f:
            return f.read()[-3000:]

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(90)
        self.stderr.close()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        self.stderr.close()


def run_word_count(broker, tmp_path, guarantee: str):
    app_id = f"wc-{guarantee.replace('_', '')}-{uuid.uuid4().hex[:6]}"
    input_topic, output_topic = f"{app_id}-in", f"{app_id}-out"
    create_topics(broker.bootstrap, input_topic, output_topic)
    return app_id, input_topic, output_topic


def test_word_count_exactly_once_v2_survives_kill(broker, tmp_path):
    app_id, src, out = run_word_count(broker, tmp_path, "exactly_once_v2")
    first, expected = make_lines(1, 400)
    produce(broker.bootstrap, src, first)
    app = StreamsApp(broker.bootstrap, app_id, src, out, "exactly_once_v2", tmp_path / "state1", tmp_path)
    try:
        app.wait_running()
        got = read_counts(broker.bootstrap, out, dict(expected))
        assert got == dict(expected), f"{app.errors()}\n{app.tail()}{broker.context()}"
        # consumed repartition records are deleted (DeleteRecords moves the log start offset)
        assert any(wait_purged(broker.bootstrap, f"{app_id}-word-counts-repartition")), app.tail()
    finally:
        app.kill()  # kill -9: open transactions are aborted by the next instance's fencing
    changelog = f"{app_id}-word-counts-changelog"
    assert topic_config(broker.bootstrap, changelog, "cleanup.policy") == "compact"
    assert topic_config(broker.bootstrap, f"{app_id}-word-counts-repartition", "cleanup.policy") == "delete"

    second, more = make_lines(2, 300)
    produce(broker.bootstrap, src, second)
    expected.update(more)
    app = StreamsApp(broker.bootstrap, app_id, src, out, "exactly_once_v2", tmp_path / "state2", tmp_path)
    try:
        app.wait_running()
        got = read_counts(broker.bootstrap, out, dict(expected))
        assert got == dict(expected), f"{app.errors()}\n{app.tail()}{broker.context()}"
        assert not app.errors(), app.tail()
    finally:
        app.stop()


@pytest.mark.parametrize("group_protocol", ["classic", "streams"])
def test_two_instances_exactly_once_v2_one_killed(broker, tmp_path, group_protocol):
    """Two instances of the app share the work (4 partitions, each instance with its own transactional
    producer): with the classic protocol by a group rebalance, with the streams protocol (KIP-1071) by
    the coordinator's task assignment (both members run tasks, StreamsGroupDescribe). Input produced
    while both run is counted exactly, and after one is killed -9 the survivor takes over its tasks
    (streams protocol: once the coordinator expired it after the 45 s session timeout), fencing its
    zombie transaction, and the counts of all input stay exact."""
    app_id = f"wc-two-{group_protocol}-{uuid.uuid4().hex[:6]}"
    src, out = f"{app_id}-in", f"{app_id}-out"
    create_topics(broker.bootstrap, src, out, partitions=4)
    apps = [StreamsApp(broker.bootstrap, app_id, src, out, "exactly_once_v2", tmp_path / f"state{i}", tmp_path,
                       group_protocol=group_protocol) for i in range(2)]
    streams = group_protocol == "streams"
    try:
        for app in apps:
            app.wait_running()
        first, expected = make_lines(6, 400)
        produce(broker.bootstrap, src, first)
        got = read_counts(broker.bootstrap, out, dict(expected))
        assert got == dict(expected), f"{[a.errors() for a in apps]}\n{apps[1].tail()}{broker.context()}"
        if streams:
            tasks = streams_tasks(broker.bootstrap, app_id)
            assert len(tasks) == 2 and all(tasks) and sum(tasks) == 8, tasks  # 2 subtopologies x 4 partitions
        apps[0].kill()
        second, more = make_lines(7, 300)
        produce(broker.bootstrap, src, second)
        expected.update(more)
        got = read_counts(broker.bootstrap, out, dict(expected), timeout=180)
        assert got == dict(expected), f"{apps[1].errors()}\n{apps[1].tail()}{broker.context()}"
        assert not apps[1].errors(), apps[1].tail()
        if streams:
            assert streams_tasks(broker.bootstrap, app_id) == [8]  # the survivor runs every task
    finally:
        apps[0].proc.kill()
        apps[1].stop()


def test_word_count_at_least_once(broker, tmp_path):
    app_id, src, out = run_word_count(broker, tmp_path, "at_least_once")
    lines, expected = make_lines(3, 400)
    produce(broker.bootstrap, src, lines)
    app = StreamsApp(broker.bootstrap, app_id, src, out, "at_least_once", tmp_path / "state", tmp_path)
    try:
        app.wait_running()
        got = read_counts(broker.bootstrap, out, dict(expected))
        assert got == dict(expected), f"{app.errors()}\n{app.tail()}{broker.context()}"
        assert not app.errors(), app.tail()
    finally:
        app.stop()


def test_streams_rebalance_protocol(broker, tmp_path):
    """group.protocol=streams (KIP-1071, StreamsGroupHeartbeat): the coordinator creates the
    repartition and changelog topics from the topology the app sends and assigns its tasks; the
    counts are exact (Kafka 4.3 serves the protocol by default)."""
    app_id, src, out = run_word_count(broker, tmp_path, "streams_protocol")
    lines, expected = make_lines(4, 200)
    produce(broker.bootstrap, src, lines)
    app = StreamsApp(broker.bootstrap, app_id, src, out, "exactly_once_v2", tmp_path / "state", tmp_path,
                     group_protocol="streams")
    try:
        got = read_counts(broker.bootstrap, out, dict(expected))
        assert got == dict(expected), f"{app.errors()}\n{app.tail()}{broker.context()}"
        assert not app.errors(), app.tail()
    finally:
        app.stop()
    assert topic_config(broker.bootstrap, f"{app_id}-word-counts-changelog", "cleanup.policy") == "compact"
    assert topic_config(broker.bootstrap, f"{app_id}-word-counts-repartition", "cleanup.policy") == "delete"
