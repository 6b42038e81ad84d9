"""Record batches of 64 KiB and more are sent from the CommitLog file (sendfile), those of 16-64 KiB
from the buffer they were read into (memoryviews, one gathering sendmsg): stock clients read them
exactly, from any offset and with small fetch limits, and no file descriptor is left open."""
from __future__ import annotations

import os
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from shard_aware import leader_pid

RECORDS = 3000
VALUE_SIZE = 1024


def _value(i: int) -> bytes:
    return f"{i:08d}".encode() * (VALUE_SIZE // 8)


def _fill(bootstrap: str, topic: str, batch_size: int = 1_000_000) -> None:
    """Large batches (a 1 MB batch.size and a long linger), a small plain one in between."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    big = Producer({"bootstrap.servers": bootstrap, "linger.ms": 500, "batch.size": batch_size,
                    "batch.num.messages": 100_000})
    for i in range(RECORDS):
        big.produce(topic, key=str(i).encode(), value=_value(i), partition=0, headers=[("n", str(i).encode())])
        if i == RECORDS // 2:
            assert big.flush(30) == 0
            small = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
            small.produce(topic, value=b"small", partition=0)  # a short entry between large ones
            assert small.flush(30) == 0
    assert big.flush(30) == 0


def _read_confluent(bootstrap: str, topic: str, start: int, want: int, fetch_bytes: int):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "max.partition.fetch.bytes": fetch_bytes,
                  "fetch.max.bytes": max(fetch_bytes, 1 << 20)})
    c.assign([TopicPartition(topic, 0, start)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < want and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.offset(), m.key(), m.value(), m.headers()))
    c.close()
    return got


def _expected(start: int):
    rows = []
    for i in range(RECORDS + 1):
        rows.append(None if i == RECORDS // 2 + 1 else i)
    out = []
    for offset, i in enumerate(rows):
        if offset < start:
            continue
        if i is None:
            out.append((offset, None, b"small", None))
        else:
            j = i if i <= RECORDS // 2 else i - 1
            out.append((offset, str(j).encode(), _value(j), [("n", str(j).encode())]))
    return out


def _commitlog_fds(pid: int) -> int:
    """Descriptors the process holds on CommitLog files (each spliced batch holds one until sent).

    A descriptor may close between the listing and its readlink (the server's own housekeeping);
    such a one holds nothing any more and is not counted.
    """
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held += "/commitlog/" in os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
    return held


def test_medium_batches_exact_from_any_offset(gateway):
    topic = f"medium-{uuid.uuid4().hex[:8]}"
    _fill(gateway.kafka_bootstrap, topic, batch_size=40_000)  # ~38 KiB batches: neither copied nor spliced
    everything = _expected(0)
    assert _read_confluent(gateway.kafka_bootstrap, topic, 0, len(everything), 1 << 20) == everything
    tail = _expected(1234)
    assert _read_confluent(gateway.kafka_bootstrap, topic, 1234, len(tail), 100 << 10) == tail


def test_large_batches_exact_from_any_offset(gateway):
    topic = f"large-{uuid.uuid4().hex[:8]}"
    _fill(gateway.kafka_bootstrap, topic)
    pid = leader_pid(gateway, topic)  # the store holding the partition (one shard's under --shards)
    assert _commitlog_fds(pid) == 1  # the one file the store keeps open
    everything = _expected(0)
    assert _read_confluent(gateway.kafka_bootstrap, topic, 0, len(everything), 1 << 20) == everything
    middle = 1234  # inside a large batch: the client drops the records before it
    tail = _expected(middle)
    assert _read_confluent(gateway.kafka_bootstrap, topic, middle, len(tail), 1 << 20) == tail
    # A partition limit below one batch: still one whole batch per fetch, never stuck.
    assert _read_confluent(gateway.kafka_bootstrap, topic, 0, len(everything), 32 << 10) == everything

    from kafka import KafkaConsumer, TopicPartition as KTP

    kc = KafkaConsumer(bootstrap_servers=gateway.kafka_bootstrap, enable_auto_commit=False,
                       consumer_timeout_ms=5000, max_partition_fetch_bytes=1 << 20)
    tp = KTP(topic, 0)
    kc.assign([tp])
    kc.seek(tp, middle)
    got = [(m.offset, m.key, m.value, [(k, v) for k, v in m.headers] or None) for m in kc]
    kc.close()
    assert got == tail
    # Long-poll fetches at the end that return nothing, then every connection closed: no fd kept.
    c = Consumer({"bootstrap.servers": gateway.kafka_bootstrap, "group.id": "idle", "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, 0, len(everything))])
    for _ in range(10):
        assert c.poll(0.1) is None
    c.close()
    time.sleep(0.5)
    assert _commitlog_fds(pid) == 1


def test_a_batch_larger_than_a_commitlog_file_is_refused_for_good(gateway_factory):
    """A batch is one CommitLog entry, so one larger than a file can never be stored. Kafka 4.3.1
    answers a batch larger than segment.bytes RECORD_LIST_TOO_LARGE, not retriable (checked with
    bench.brokers.KafkaBroker: a 1.5 MB record into a topic with segment.bytes=1 MiB); so does the
    gateway now, where it answered KAFKA_STORAGE_ERROR, which clients retried until they timed out.
    The partition takes the next batch that fits."""
    gw = gateway_factory(extra_args=["--commitlog-file-size", "256k"])
    bootstrap = gw.kafka_bootstrap
    topic = f"huge-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 10_000_000, "compression.type": "none",
                  "message.timeout.ms": 15000})
    errors = []
    p.produce(topic, b"x" * 300_000, partition=0, on_delivery=lambda err, _m: errors.append(err))
    p.flush(30)
    assert [e.code() for e in errors] == [KafkaError.RECORD_LIST_TOO_LARGE] and not errors[0].retriable()
    delivered = []
    p.produce(topic, b"fits", partition=0, on_delivery=lambda err, m: delivered.append((err, m.offset())))
    p.flush(30)
    assert delivered == [(None, 0)]
