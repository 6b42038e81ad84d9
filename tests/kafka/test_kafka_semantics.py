"""RocketMQ semantics through stock Kafka clients: filtered view topics, delayed delivery
(__STARTDELIVERTIME), tags of every record indexed, idempotent-producer state across restarts."""
from __future__ import annotations

import time
import uuid

import pytest
from acked_records import read_committed
from txn_steps import aborted_with_offsets
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _tag(i: int) -> str | None:
    return ["A", "B", None, "C"][i % 4]


def _produce_tagged(bootstrap: str, topic: str, start: int, n: int, partitions: int) -> None:
    """Records `start..start+n` with tags A/B/none/C, several records per (lz4) batch."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": "lz4"})
    for i in range(start, start + n):
        tag = _tag(i)
        headers = [("TAGS", tag.encode())] if tag else [("other", b"x")]
        p.produce(topic, value=f"v{i}".encode(), key=f"k{i}".encode(), headers=headers,
                  partition=i % partitions)
    assert p.flush(30) == 0


def _read_confluent(bootstrap: str, topic: str, partition: int, want: int, timeout: float = 30.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("g"), "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, partition, 0)])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.offset(), m.value().decode(), dict(m.headers() or []).get("TAGS")))
    extra = c.poll(1.0)  # nothing beyond what is expected
    c.close()
    assert extra is None or extra.error() is not None
    return got


def _read_kafka_python(bootstrap: str, topic: str, partition: int, want: int):
    from kafka import KafkaConsumer, TopicPartition as KTP

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000)
    tp = KTP(topic, partition)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [(m.offset, m.value.decode(), dict(m.headers).get("TAGS")) for m in c]
    c.close()
    return got


def _expected(indices, partitions: int, partition: int, tags: set[str]):
    vals = [f"v{i}" for i in indices if i % partitions == partition and _tag(i) in tags]
    return [(off, v, None) for off, v in enumerate(vals)]


def _strip_tags(rows):
    return [(o, v, None) for o, v, _t in rows]


def test_filtered_view_topic(gateway):
    bootstrap = gateway.kafka_bootstrap
    base, view = _name("base"), _name("view")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(base, num_partitions=2, replication_factor=1)])[base].result(15)
    _produce_tagged(bootstrap, base, 0, 40, 2)  # history: backfilled into the view

    fut = admin.create_topics([NewTopic(view, num_partitions=2, replication_factor=1, config={
        "filter.source.topic": base, "filter.tag.expression": "A || C"})])[view]
    fut.result(15)
    bad = admin.create_topics([NewTopic(_name("view"), num_partitions=1, replication_factor=1, config={
        "filter.source.topic": "no-such-base", "filter.tag.expression": "A"})])
    with pytest.raises(Exception, match="does not exist"):
        list(bad.values())[0].result(15)

    _produce_tagged(bootstrap, base, 40, 40, 2)  # kept current
    for part in (0, 1):
        want = _expected(range(80), 2, part, {"A", "C"})
        assert want, "the test needs matching records in every partition"
        got = _read_confluent(bootstrap, view, part, len(want))
        assert _strip_tags(got) == want
        assert {t for _o, _v, t in got} <= {b"A", b"C"}
        assert _strip_tags(_read_kafka_python(bootstrap, view, part, len(want))) == want

    # Produce to a view is refused with a message.
    errs = []
    p = Producer({"bootstrap.servers": bootstrap, "message.send.max.retries": 0})
    p.produce(view, value=b"nope", partition=0, on_delivery=lambda err, msg: errs.append(err))
    p.flush(15)
    assert errs and errs[0] is not None

    res = ConfigResource("topic", view)
    configs = admin.describe_configs([res])[res].result(15)
    assert configs["filter.source.topic"].value == base
    assert configs["filter.tag.expression"].value == "A || C"

    gateway.restart()
    _produce_tagged(bootstrap, base, 80, 20, 2)
    for part in (0, 1):
        want = _expected(range(100), 2, part, {"A", "C"})
        assert _strip_tags(_read_confluent(bootstrap, view, part, len(want))) == want

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([view])[view].result(15)
    for part in (0, 1):
        assert len(_read_confluent(bootstrap, base, part, 50)) == 50


def test_tags_of_later_records_are_indexed(gateway):
    """A batch whose first record has neither key nor headers still indexes the TAGS of the
    records after it (a view over the base sees them)."""
    bootstrap = gateway.kafka_bootstrap
    base, view = _name("base"), _name("view")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(base, num_partitions=1, replication_factor=1)])[base].result(15)
    admin.create_topics([NewTopic(view, num_partitions=1, replication_factor=1, config={
        "filter.source.topic": base, "filter.tag.expression": "A"})])[view].result(15)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    p.produce(base, value=b"plain", partition=0)
    for i in range(10):
        p.produce(base, value=f"v{i}".encode(), partition=0,
                  headers=[("TAGS", b"A" if i % 2 == 0 else b"B")])
    assert p.flush(30) == 0
    for value, tag in [(b"single-A", b"A"), (b"single-B", b"B")]:  # one-record batches
        p.produce(base, value=value, partition=0, headers=[("TAGS", tag)])
        assert p.flush(30) == 0
    got = _read_confluent(bootstrap, view, 0, 6)
    assert [(o, v) for o, v, _t in got] == [(j, f"v{2 * j}") for j in range(5)] + [(5, "single-A")]


def _poll_values(consumer, want: int, timeout: float):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            got.append((m.value().decode(), time.time() * 1000))
    return got


def _delay_setup(gateway_factory, levels: str):
    """A gateway with these delay levels, a one-partition topic, a consumer assigned to it from
    offset 0 and a producer that batches (linger 200 ms): (topic, consumer, producer)."""
    g = gateway_factory(extra_args=["--message-delay-level", levels])
    topic = _name("delayed")
    admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": _name("g"), "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    return topic, c, Producer({"bootstrap.servers": g.kafka_bootstrap, "linger.ms": 200})


def test_start_deliver_time_and_delay_headers(gateway_factory):
    """`__STARTDELIVERTIME` (epoch ms) and `DELAY` (level) hold records back until they are due."""
    topic, c, p = _delay_setup(gateway_factory, "1s 3s 5s")
    sent_ms = time.time() * 1000
    due = int(sent_ms) + 2500
    # One batch: the gateway cuts it into runs of records with the same routing headers.
    for value, headers in [(b"timer", [("__STARTDELIVERTIME", str(due).encode())]),
                           (b"level2", [("DELAY", b"2")]), (b"now", None)]:
        p.produce(topic, value=value, partition=0, headers=headers)
    assert p.flush(15) == 0
    first = _poll_values(c, 1, 10)
    assert [v for v, _t in first] == ["now"]
    assert first[0][1] < due  # the immediate record is not held back behind the delayed ones
    later = _poll_values(c, 2, 30)
    c.close()
    assert sorted(v for v, _t in later) == ["level2", "timer"]
    for value, seen in later:
        assert seen >= (due if value == "timer" else sent_ms + 3000) - 5  # never before it is due


def test_delay_on_a_later_record_of_a_plain_batch(gateway_factory):
    """A batch whose first record has no key and no headers still holds back a later DELAY record."""
    topic, c, p = _delay_setup(gateway_factory, "2s")
    sent_ms = time.time() * 1000
    p.produce(topic, value=b"plain", partition=0)
    p.produce(topic, value=b"delayed", partition=0, headers=[("DELAY", b"1")])
    assert p.flush(15) == 0
    first = _poll_values(c, 2, 1.5)
    assert [v for v, _t in first] == ["plain"]
    later = _poll_values(c, 1, 15)
    c.close()
    assert [v for v, _t in later] == ["delayed"] and later[0][1] >= sent_ms + 2000 - 5


def test_delay_header_record_delivered_once_after_kill9(gateway_factory):
    """A DELAY record acknowledged (acks=all, --flush sync) just before kill -9 of the gateway is
    delivered after the restart, once, not before it is due."""
    g = gateway_factory(flush="sync", extra_args=["--message-delay-level", "3s"])
    topic = _name("delayed-k9")
    admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    p = Producer({"bootstrap.servers": g.kafka_bootstrap, "acks": "all"})
    sent_ms = time.time() * 1000
    p.produce(topic, value=b"later", partition=0, headers=[("DELAY", b"1")])
    assert p.flush(15) == 0
    g.kill9()
    g.start()
    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": _name("g"), "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = _poll_values(c, 1, 20)
    got += _poll_values(c, 1, 3)  # a second delivery would come right after the first
    c.close()
    assert [v for v, _t in got] == ["later"] and got[0][1] >= sent_ms + 3000 - 5


def test_idempotent_sequences_survive_restart(gateway):
    """A retry of a batch stored before a kill -9 is still recognised as a duplicate, and a
    sequence gap is still refused: the state is rebuilt from the stored batch headers."""
    from kafka_raw import RawClient, produce_body, produce_error
    from shard_aware import raw_leader

    from codec.kafka import records

    produce, init_pid = 0, 22
    topic = _name("idem")

    def batch(n: int, seq: int, pid: int, epoch: int) -> bytes:
        return records.build_batch([(1000 + i, None, b"x%d" % i, []) for i in range(n)], base_timestamp=1000,
                                   producer_id=pid, producer_epoch=epoch, base_sequence=seq)

    c = RawClient(gateway.kafka_bootstrap)
    r = c.call(init_pid, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    pid, epoch = r["producer_id"], r["producer_epoch"]
    other = c.call(init_pid, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})["producer_id"]
    c.close()
    c = RawClient(raw_leader(gateway.kafka_bootstrap, topic))  # the partition's leader (auto-created here)
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(3, 0, pid, epoch)))) == (0, 0)
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(2, 3, pid, epoch)))) == (0, 3)
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(4, 0, other, 0)))) == (0, 5)
    c.close()
    gateway.kill9()
    gateway.start()
    c = RawClient(raw_leader(gateway.kafka_bootstrap, topic))
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(2, 3, pid, epoch)))) == (0, 3)
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(3, 0, pid, epoch)))) == (0, 0)
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(1, 9, pid, epoch))))[0] == 45
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(1, 5, pid, epoch)))) == (0, 9)
    assert produce_error(c.call(produce, 9, produce_body(topic, 0, batch(4, 0, other, 0)))) == (0, 5)
    c.close()


def test_confluent_transactions_commit_abort_offsets(gateway):
    bootstrap = gateway.kafka_bootstrap
    topic, src, group = _name("txn"), _name("src"), _name("g")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for t in (topic, src):
        admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1)])[t].result(15)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": _name("tid"), "linger.ms": 5})
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=f"c{i}".encode(), partition=i % 2)
    p.produce(src, value=b"plain", partition=0)  # a plain record in between, through the same producer
    p.flush(15)
    # Not visible before the commit, to either isolation level.
    assert read_committed(bootstrap, topic, 2, 0, timeout=2) == []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    meta = c.consumer_group_metadata()
    p.send_offsets_to_transaction([TopicPartition(src, 0, 7)], meta, 15)
    p.commit_transaction(15)
    assert c.committed([TopicPartition(src, 0)], 15)[0].offset == 7  # applied on commit

    aborted_with_offsets(p, topic, src, meta)
    assert c.committed([TopicPartition(src, 0)], 15)[0].offset == 7  # aborted offsets are dropped
    c.close()

    p.begin_transaction()
    p.produce(topic, value=b"c6", partition=0)
    p.commit_transaction(15)

    got = read_committed(bootstrap, topic, 2, 7)
    assert sorted(v for _p, _o, v in got) == [f"c{i}" for i in range(7)]
    # Kafka's layout: records at their produce-time offsets, each end a marker taking one offset, the
    # aborted records (4, 5) skipped by the consumer
    assert [o for pp, o, _v in got if pp == 0] == [0, 1, 2, 7]
    assert [o for pp, o, _v in got if pp == 1] == [0, 1, 2]


def _last_stable_offset(bootstrap: str, topic: str) -> int:
    """ListOffsets latest at read_committed, from the partition's leader."""
    from kafka_raw import RawClient
    from shard_aware import raw_leader

    client = RawClient(raw_leader(bootstrap, topic))
    try:
        resp = client.call(2, 5, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    finally:
        client.close()
    return resp["topics"][0]["partitions"][0]["offset"]


def test_transaction_timeout_aborts_and_fences(gateway_factory):
    g = gateway_factory(extra_args=["--transaction-timeout-ms", "1000", "--transaction-check-interval-ms", "300"])
    topic = _name("txn")
    admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    tid = _name("tid")
    p = Producer({"bootstrap.servers": g.kafka_bootstrap, "transactional.id": tid, "transaction.timeout.ms": 1000})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce(topic, value=b"late", partition=0)
    p.flush(15)
    # With no request from the producer, the check service aborts the transaction once it is past
    # its timeout: its abort marker moves the last stable offset past the record (0 while it is open).
    deadline = time.monotonic() + 20
    while _last_stable_offset(g.kafka_bootstrap, topic) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _last_stable_offset(g.kafka_bootstrap, topic) == 2  # the record and the abort marker
    with pytest.raises(Exception):  # the epoch was bumped: the late producer is fenced
        p.commit_transaction(15)
    # A new producer with the same transactional.id works; nothing of the timed-out one is visible.
    p2 = Producer({"bootstrap.servers": g.kafka_bootstrap, "transactional.id": tid})
    p2.init_transactions(15)
    p2.begin_transaction()
    p2.produce(topic, value=b"ok", partition=0)
    p2.commit_transaction(15)
    assert [v for _p, _o, v in read_committed(g.kafka_bootstrap, topic, 1, 1)] == ["ok"]


def test_kafka_python_transactions(gateway):
    from kafka import KafkaProducer

    bootstrap = gateway.kafka_bootstrap
    topic = _name("txn")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=_name("tid"))
    p.init_transactions()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=f"a{i}".encode(), partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=f"c{i}".encode(), partition=0)
    p.commit_transaction()
    p.close()
    got = read_committed(bootstrap, topic, 1, 3)
    # Kafka's layout: 0-2 aborted (skipped by the consumer), the abort marker at 3, the commit's records at 4-6
    assert [(o, v) for _p, o, v in got] == [(4, "c0"), (5, "c1"), (6, "c2")]
