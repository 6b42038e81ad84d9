"""KIP-932 share groups through librdkafka's share consumer (confluent-kafka's `ShareConsumer`):
two consumers share one partition, every record is delivered once when accepted, a released record
comes again at once, a rejected one never does.

Run against the gateway, or with SHARE_REFERENCE=kafka against a real Apache Kafka 4.x (first)."""
from __future__ import annotations

import logging
import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   ResourceType)
from test_share_groups import REFERENCE, Broker

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(str(tmp_path_factory.mktemp("share-librdkafka")))
    yield b
    b.stop()


def fresh(bootstrap: str, records: int) -> tuple[str, str, list[bytes]]:
    """A one-partition topic holding `records` values and a share group reading it from the earliest."""
    topic, group = f"shl-{uuid.uuid4().hex[:8]}", f"shlg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    values = [b"v%04d" % i for i in range(records)]
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for v in values:
        p.produce(topic, v)
    assert p.flush(30) == 0
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for fut in admin.incremental_alter_configs([res]).values():
        fut.result(30)
    return topic, group, values


def consumer(bootstrap: str, group: str, topic: str) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


def poll_values(c: ShareConsumer, until, timeout: float = 60, ack=AcknowledgeType.ACCEPT) -> list[bytes]:
    """Poll (at least once), acknowledging each record with `ack` (committed synchronously), until
    `until(values)` or the timeout."""
    got = []
    deadline = time.monotonic() + timeout
    while True:
        msgs = c.poll(0.5)
        for m in msgs:
            if m.error():
                continue
            got.append(m.value())
            c.acknowledge(m, ack)
        if msgs:
            c.commit_sync()
        if until(got) or time.monotonic() > deadline:
            return got


def test_two_share_consumers_split_one_partition(broker):
    topic, group, values = fresh(broker.bootstrap, 400)
    a, b = consumer(broker.bootstrap, group, topic), consumer(broker.bootstrap, group, topic)
    seen = []
    try:
        deadline = time.monotonic() + 90
        while len(set(seen)) < len(values) and time.monotonic() < deadline:
            for c in (a, b):
                seen += poll_values(c, lambda got: True)
    finally:
        a.close()
        b.close()
    assert sorted(seen) == values  # each record once: accepted records are never delivered again


def test_released_record_comes_again_and_rejected_never(broker):
    topic, group, values = fresh(broker.bootstrap, 5)
    c = consumer(broker.bootstrap, group, topic)
    try:
        first = poll_values(c, lambda got: len(got) >= 1, ack=AcknowledgeType.RELEASE)
        assert first and first[0] == values[0]
        again = poll_values(c, lambda got: values[0] in got, timeout=10, ack=AcknowledgeType.REJECT)
        assert values[0] in again  # released: delivered again at once, not after the (30 s) lock
        rest = poll_values(c, lambda got: set(values) - {values[0]} <= set(got) | set(again), timeout=30)
        late = poll_values(c, lambda got: False, timeout=4)
    finally:
        c.close()
    assert values[0] not in rest + late  # rejected (and everything else accepted): never again
    assert set(again + rest) == set(values)


class Disconnects(logging.Handler):
    """librdkafka's log lines (the `logger` config) telling that a broker closed the connection."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "connection closed by peer" in record.getMessage():
            self.lines.append(record.getMessage())


def test_polling_on_after_a_subscribed_topic_is_deleted(broker):
    """librdkafka 0170's topic deletion: a record of the topic was acknowledged just before the
    delete (the acknowledgement rides on the next ShareFetch); the consumer goes on with its other
    topic, no topic error reaches the application and the broker keeps the connection (the gateway
    failed that ShareFetch with a traceback and closed it)."""
    doomed, group, _ = fresh(broker.bootstrap, 3)
    kept, _, _ = fresh(broker.bootstrap, 0)
    disconnects = Disconnects()
    log = logging.getLogger(f"share-delete-{group}")
    log.addHandler(disconnects)
    log.setLevel(logging.INFO)
    c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "logger": log,
                       "share.acknowledgement.mode": "explicit", "topic.metadata.refresh.interval.ms": 500,
                       "topic.metadata.propagation.max.ms": 0})
    c.subscribe([doomed, kept])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    surfaced, got = [], []
    later = [b"after%02d" % i for i in range(5)]
    try:
        first = []
        deadline = time.monotonic() + 60
        while not first and time.monotonic() < deadline:
            for m in c.poll(0.5):
                if not m.error():
                    first.append(m.value())
                    c.acknowledge(m)  # sent with the next ShareFetch, after the delete
        assert first, "nothing consumed before the delete"
        admin.delete_topics([doomed])[doomed].result(30)
        time.sleep(3)  # the delete reaches the consumer's metadata, as 0170 waits
        p = Producer({"bootstrap.servers": broker.bootstrap})
        for v in later:
            p.produce(kept, v)
        assert p.flush(30) == 0
        deadline = time.monotonic() + 60
        while not set(later) <= set(got) and time.monotonic() < deadline:
            for m in c.poll(0.5):
                if m.error():
                    surfaced.append(m.error())
                    continue
                got.append(m.value())
                c.acknowledge(m)
            c.commit_sync()
    finally:
        c.close()
        log.removeHandler(disconnects)
    assert set(later) <= set(got)
    assert not surfaced
    assert not disconnects.lines
    if not REFERENCE:
        assert "Traceback" not in broker.proc.log()


def test_small_fetch_max_bytes_delivers_every_record_one_batch_at_a_time(broker):
    """librdkafka 0171's fetch.max.bytes=1500 with ten 1 000-byte records, each its own batch: a
    ShareFetch carries one batch (what it acquires, no more), the next one the next batch, so all ten
    arrive one per poll (the gateway acquired all ten and sent one batch: the other nine stayed
    locked, delivered to nobody)."""
    topic, group, _ = fresh(broker.bootstrap, 0)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    values = [b"%04d" % i + b"x" * 996 for i in range(10)]
    for v in values:
        p.produce(topic, v)
        p.flush(30)  # one record batch each
    c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "fetch.max.bytes": 1500})
    c.subscribe([topic])
    got, sizes = [], []
    try:
        for _ in range(30):  # 0171's loop: 30 polls of 2 s
            msgs = [m for m in c.poll(2) if not m.error()]
            got += [m.value() for m in msgs]
            sizes += [len(msgs)] if msgs else []
            if len(got) >= len(values):
                break
    finally:
        c.close()
    assert sorted(got) == values
    assert set(sizes) == {1}


def test_read_committed_share_group_never_gets_an_aborted_transaction(broker):
    """librdkafka 0177's aborted transaction at share.isolation.level=read_committed: the aborted
    records are in the log (Kafka's layout) but acquired by nobody; the committed ones after them come
    (the gateway's share fetch leased and sent the aborted batch)."""
    topic, group, _ = fresh(broker.bootstrap, 0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    entry = ConfigEntry("share.isolation.level", "read_committed", incremental_operation=AlterConfigOpType.SET)
    for fut in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                               incremental_configs=[entry])]).values():
        fut.result(30)
    c = consumer(broker.bootstrap, group, topic)
    try:
        assert poll_values(c, lambda got: False, timeout=5) == []  # subscribed first, as 0177 does
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"shl-txn-{group}"})
        p.init_transactions(30)
        got = []
        for values, end in (([b"aborted%d" % i for i in range(5)], p.abort_transaction),
                            ([b"committed%d" % i for i in range(3)], p.commit_transaction)):
            p.begin_transaction()
            for v in values:
                p.produce(topic, v)
            assert p.flush(30) == 0
            got += poll_values(c, lambda got: False, timeout=3)  # polling while it is open
            end(30)
        got += poll_values(c, lambda got: len(got) >= 3, timeout=60)
        got += poll_values(c, lambda got: False, timeout=3)
    finally:
        c.close()
    assert sorted(got) == [b"committed%d" % i for i in range(3)]


def test_a_topic_made_again_is_read_from_its_start(broker):
    """librdkafka 0184: a topic deleted and made again under its name is a new topic (a new id): the
    group reads it from its start, each record a first delivery (the gateway kept the old topic's
    share state by name: the new records below the old start never came, or came as redeliveries)."""
    topic, group, values = fresh(broker.bootstrap, 3)
    c = consumer(broker.bootstrap, group, topic)
    try:
        assert sorted(poll_values(c, lambda got: len(got) >= 3)) == values  # accepted: the start moves to 3
    finally:
        c.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 60
    while True:  # Kafka ends a deletion in the background
        try:
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
            break
        except Exception:  # noqa: BLE001 - not gone yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    again = [b"again%d" % i for i in range(3)]
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v in again:
        p.produce(topic, v)
    assert p.flush(30) == 0
    c = consumer(broker.bootstrap, group, topic)
    try:
        got = poll_values(c, lambda got: len(got) >= 3, timeout=60)
    finally:
        c.close()
    assert sorted(got) == again
