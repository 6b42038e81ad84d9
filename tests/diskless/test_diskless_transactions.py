"""Kafka transactions on diskless topics (docs/diskless.md, "Transactions"): librdkafka's transactional
producer commits and aborts, sendOffsetsToTransaction, read_committed consumers; the same scenario
passes against Apache Kafka 4.3.1 (`python tests/diskless/test_diskless_transactions.py`)."""
from __future__ import annotations

import os
import shutil
import sys
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import read_committed
from txn_steps import aborted_with_offsets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kafka"))  # TxnCheck and its facts
from kafka_raw import RawClient  # noqa: E402
from test_transactions_v2 import EXPECTED, check_classes, facts  # noqa: E402,F401 - check_classes is a fixture
from waiting import until  # noqa: E402

FAST_WAL = ["--diskless-wal-max-ms", "20"]


def _create(bootstrap: str, names: list[str], diskless: bool) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"diskless.enable": "true"} if diskless else {}
    for f in admin.create_topics([NewTopic(n, 2, 1, config=configs) for n in names]).values():
        f.result(15)


def committed(bootstrap: str, group: str, tp: TopicPartition) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([tp], 15)[0].offset
    finally:
        c.close()


def transactions_scenario(bootstrap: str, diskless: bool) -> tuple[str, str, str]:
    """Commit, abort (records and offsets), commit again, with a plain record of the same producer
    in between; what read_committed consumers and the group see. Returns (topic, source, group)."""
    tag = uuid.uuid4().hex[:6]
    topic, src, group = f"dltx-{tag}", f"dlsrc-{tag}", f"g-{tag}"
    _create(bootstrap, [topic, src], diskless)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tid-{tag}", "linger.ms": 5})
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=f"c{i}".encode(), partition=i % 2)
    p.produce(src, value=b"plain", partition=0)  # another topic in the same transaction
    p.flush(15)
    assert read_committed(bootstrap, topic, 2, 0, timeout=2) == []  # not visible before the commit
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    meta = c.consumer_group_metadata()
    c.close()
    p.send_offsets_to_transaction([TopicPartition(src, 0, 7)], meta, 15)
    p.commit_transaction(15)
    assert committed(bootstrap, group, TopicPartition(src, 0)) == 7  # applied on commit

    aborted_with_offsets(p, topic, src, meta)
    assert committed(bootstrap, group, TopicPartition(src, 0)) == 7  # aborted offsets are dropped

    p.begin_transaction()
    p.produce(topic, value=b"c6", partition=0)
    p.commit_transaction(15)
    got = read_committed(bootstrap, topic, 2, 7)
    assert sorted(v for _p, _o, v in got) == [f"c{i}" for i in range(7)]  # no aborted record
    for part in (0, 1):
        offsets = [o for pp, o, _v in got if pp == part]
        assert offsets == sorted(set(offsets))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), 15)
    c.close()
    assert high > max(o for pp, o, _v in got if pp == 0)  # the end is past the last committed record
    return topic, src, group


def test_transactions_commit_abort_and_offsets_on_a_diskless_topic(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    topic, src, group = transactions_scenario(g.kafka_bootstrap, diskless=True)
    # the records and the transaction's group offset are in the bucket: a wiped data dir serves them
    g.kill9()
    shutil.rmtree(g.data_dir)
    g.start()
    assert sorted(v for _p, _o, v in read_committed(g.kafka_bootstrap, topic, 2, 7)) == [f"c{i}" for i in range(7)]
    assert committed(g.kafka_bootstrap, group, TopicPartition(src, 0)) == 7


def _open_transaction(bootstrap: str, topic: str, tid: str, value: bytes, **conf) -> Producer:
    """A new diskless topic and a transactional producer whose transaction holds `value`, sent."""
    _create(bootstrap, [topic], diskless=True)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **conf})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce(topic, value=value, partition=0)
    p.flush(15)
    return p


def test_a_diskless_transaction_past_its_timeout_is_aborted_without_a_request(seaweed_s3, s3_bucket, gateway_factory):
    """No half for the check-back service: the diskless timeout check aborts it (state CompleteAbort,
    the epoch bumped) while its producer sends nothing; nothing of it is ever visible."""
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    p = _open_transaction(g.kafka_bootstrap, "slow", "tid-slow", b"late", **{"transaction.timeout.ms": 1000})
    client = RawClient(g.kafka_bootstrap)
    try:
        def state() -> dict:
            return client.call(65, 0, {"transactional_ids": ["tid-slow"]})["transaction_states"][0]
        assert state()["transaction_state"] == "Ongoing"
        assert until(lambda: state()["transaction_state"] == "CompleteAbort", 15, 0.3)
        assert state()["producer_epoch"] == 1
    finally:
        client.close()
    with pytest.raises(KafkaException):  # fenced
        p.commit_transaction(15)
    assert read_committed(g.kafka_bootstrap, "slow", 2, 0, timeout=2) == []


def test_java_transactions_v2_on_a_diskless_topic(seaweed_s3, s3_bucket, gateway_factory, check_classes):
    """kafka-clients 4.3.1 (transactions v2: Produce v12 adds the partition, EndTxn v5 bumps the epoch):
    the facts tests/kafka/test_transactions_v2.py checks on Kafka 4.3.1 and a plain topic."""
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    assert facts(check_classes, g.kafka_bootstrap, "true") == EXPECTED


if __name__ == "__main__":  # the same scenario against Apache Kafka 4.3.1
    sys.path.insert(0, ".")
    from bench.brokers import KafkaBroker
    import tempfile
    with KafkaBroker(tempfile.mkdtemp(prefix="kafka-dltx-")) as kafka:
        transactions_scenario(kafka.bootstrap, diskless=False)
    print("Kafka 4.3.1: ok")
