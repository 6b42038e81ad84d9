"""Consumer groups with stock clients: rebalance, commit/restart/resume, group admin."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _make_topic(bootstrap: str, partitions: int) -> str:
    topic = _name("gt")
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(10)
    return topic


def _fill(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, value=b"%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "heartbeat.interval.ms": 500, **extra})


def _poll_until(consumers, predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.2)
        if predicate():
            return True
    return False


def test_two_members_rebalance(gateway):
    topic = _make_topic(gateway.kafka_bootstrap, 4)
    _fill(gateway.kafka_bootstrap, topic, 4, 3)
    group = _name("grp")
    a = _consumer(gateway.kafka_bootstrap, group)
    a.subscribe([topic])
    assert _poll_until([a], lambda: len(a.assignment()) == 4)
    b = _consumer(gateway.kafka_bootstrap, group)
    b.subscribe([topic])
    assert _poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    assert sorted(tp.partition for tp in a.assignment() + b.assignment()) == [0, 1, 2, 3]
    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result(10)
    assert len(desc.members) == 2 and str(desc.state).endswith("STABLE")
    b.close()  # LeaveGroup: the survivor gets every partition back
    assert _poll_until([a], lambda: len(a.assignment()) == 4)
    a.close()


@pytest.mark.parametrize("flush", ["async", "sync"])
def test_commit_restart_resume(gateway_factory, flush):
    from kafka import KafkaConsumer, TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    gateway = gateway_factory(flush=flush)  # in both modes a commit is on disk when acknowledged
    topic = _make_topic(gateway.kafka_bootstrap, 1)
    _fill(gateway.kafka_bootstrap, topic, 1, 10)
    group = _name("resume")
    consumer = KafkaConsumer(topic, bootstrap_servers=gateway.kafka_bootstrap, group_id=group,
                             enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=15000)
    first = []
    for rec in consumer:
        first.append(rec.offset)
        if len(first) == 6:
            break
    tp = KTP(topic, 0)
    consumer.commit({tp: OffsetAndMetadata(6, "checkpoint-a", -1)})
    consumer.close()

    gateway.restart()

    c = _consumer(gateway.kafka_bootstrap, group)
    committed = c.committed([TopicPartition(topic, 0)], timeout=10)
    assert committed[0].offset == 6 and committed[0].metadata == "checkpoint-a"
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < 4 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.offset())
    c.close()
    assert first == [0, 1, 2, 3, 4, 5] and got == [6, 7, 8, 9]


def test_group_admin_list_describe_delete(gateway):
    topic = _make_topic(gateway.kafka_bootstrap, 2)
    _fill(gateway.kafka_bootstrap, topic, 2, 2)
    group = _name("adm")
    c = _consumer(gateway.kafka_bootstrap, group)
    c.subscribe([topic])
    assert _poll_until([c], lambda: len(c.assignment()) == 2)
    c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert group in {g.group_id for g in listed.valid}
    busy = admin.delete_consumer_groups([group])[group]
    try:
        busy.result(10)
        raise AssertionError("a group with members must not be deletable")
    except Exception as exc:  # NON_EMPTY_GROUP
        assert "NON_EMPTY_GROUP" in str(exc) or "not empty" in str(exc).lower()
    c.close()
    admin.delete_consumer_groups([group])[group].result(10)
    c2 = _consumer(gateway.kafka_bootstrap, group)
    assert c2.committed([TopicPartition(topic, 0)], timeout=10)[0].offset < 0
    c2.close()


def test_kafka_python_group_two_members(gateway):
    from kafka import KafkaConsumer

    topic = _make_topic(gateway.kafka_bootstrap, 4)
    group = _name("kpg")
    common = dict(bootstrap_servers=gateway.kafka_bootstrap, group_id=group, heartbeat_interval_ms=500,
                  enable_auto_commit=False)
    a = KafkaConsumer(topic, **common)
    b = KafkaConsumer(topic, **common)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        a.poll(200)
        b.poll(200)
        if len(a.assignment()) == 2 and len(b.assignment()) == 2:
            break
    assert sorted(tp.partition for tp in a.assignment() | b.assignment()) == [0, 1, 2, 3]
    a.close()
    b.close()


def test_static_member_rejoins_with_its_assignment(gateway):
    topic = _make_topic(gateway.kafka_bootstrap, 4)
    group = _name("static")
    a = _consumer(gateway.kafka_bootstrap, group, **{"group.instance.id": "inst-a", "session.timeout.ms": 30000})
    b = _consumer(gateway.kafka_bootstrap, group, **{"group.instance.id": "inst-b", "session.timeout.ms": 30000})
    a.subscribe([topic])
    b.subscribe([topic])
    assert _poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    before_a = sorted(tp.partition for tp in a.assignment())
    before_b = sorted(tp.partition for tp in b.assignment())
    a.close()  # a static member sends no LeaveGroup: its slot is kept for the session timeout
    a2 = _consumer(gateway.kafka_bootstrap, group, **{"group.instance.id": "inst-a", "session.timeout.ms": 30000})
    a2.subscribe([topic])
    assert _poll_until([a2, b], lambda: len(a2.assignment()) == 2)
    assert sorted(tp.partition for tp in a2.assignment()) == before_a
    assert sorted(tp.partition for tp in b.assignment()) == before_b
    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result(10)
    assert sorted(m.group_instance_id for m in desc.members) == ["inst-a", "inst-b"]
    a2.close()
    b.close()
