"""`__consumer_offsets` as Kafka 4.3 serves it: every offset commit is a record in partition
abs(javaHash(group)) % partitions (key OffsetCommitKey v1, value OffsetCommitValue v4), OffsetDelete a
tombstone, and `kafka-console-consumer --formatter OffsetsMessageFormatter` prints them. The gateway
mirrors its offset table there (gateway/kafka/offsets_topic.py). Checked against a real Kafka 4.3 first."""
from __future__ import annotations

import json
import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_target import eventually, target  # noqa: F401 (fixture)

from compat.jvm import run_tool
from gateway.kafka.offsets_topic import java_string_hash, offset_key, offset_value, partition_for

OFFSETS = "__consumer_offsets"
METADATA, LIST_OFFSETS, OFFSET_DELETE = 3, 2, 47
FORMATTER = "org.apache.kafka.tools.consumer.OffsetsMessageFormatter"


def test_record_layout_is_kafkas():
    """Bytes a Kafka 4.3 broker wrote for a commit (offset 5, no epoch, no metadata) of group gp-553c33."""
    assert offset_key("gp-553c33", "pk-0d1eae", 0).hex() == "0001000967702d3535336333330009706b2d30643165616500000000"
    value = offset_value(5, -1, "", 0x1A20B6B7834, bytes.fromhex("22ce6d72b05142599208657e777d2730"))
    assert value.hex() == "00040000000000000005ffffffff01000001a20b6b783401001022ce6d72b05142599208657e777d2730"
    # String.hashCode as a JVM computes it; "polygenelubricants" hashes to Integer.MIN_VALUE: partition 0
    assert [java_string_hash(s) for s in ("", "a", "group-é", "ab" * 40, "polygenelubricants")] == [
        0, 97, 293427483, -33000920, -(1 << 31)]
    assert partition_for("polygenelubricants") == 0 and partition_for("gp-553c33") == 48


def _partition_of(target, group: str) -> int:
    md = target.raw().call(METADATA, 12, {"topics": [{"topic_id": bytes(16), "name": OFFSETS}],
                                          "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})["topics"][0]
    assert md["error_code"] == 0 and md["is_internal"], md
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % len(md["partitions"])


def _formatted(target, partition: int, count: int, log_dir: str, *extra: str) -> list[dict]:
    r = run_tool("kafkatools", "org.apache.kafka.tools.consumer.ConsoleConsumer", [
        "--bootstrap-server", target.bootstrap, "--topic", OFFSETS, "--partition", str(partition),
        "--offset", "earliest", "--formatter", FORMATTER, "--max-messages", str(count), "--timeout-ms", "30000", *extra],
        log_dir)
    assert r.returncode == 0, r.stderr[-3000:]
    decoder, text, out = json.JSONDecoder(), r.stdout, []
    at = text.find('{"key"')
    while at >= 0:
        obj, end = decoder.raw_decode(text, at)
        out.append(obj)
        at = text.find('{"key"', end)
    return out


def test_commits_are_read_from_the_offsets_topic(target, tmp_path):
    topic, group = f"ot-{uuid.uuid4().hex[:8]}", f"og-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(15)
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "enable.auto.commit": False})

    def commit(*offsets):
        c.commit(offsets=[TopicPartition(topic, p, o, metadata=m) for p, o, m in offsets], asynchronous=False)
    eventually(lambda: commit((0, 5, ""), (1, 7, "m1")), timeout=30)
    commit((0, 9, "again"))
    c.close()
    admin.delete_consumer_groups([group])[group].result(15)  # tombstones for both partitions
    lines = _formatted(target, _partition_of(target, group), 5, str(tmp_path))
    keys = [(x["key"]["type"], x["key"]["data"]["group"], x["key"]["data"]["topic"], x["key"]["data"]["partition"])
            for x in lines]
    assert keys == [(1, group, topic, 0), (1, group, topic, 1), (1, group, topic, 0), (1, group, topic, 0),
                    (1, group, topic, 1)]
    values = [x["value"] for x in lines]
    fields = [(v["version"], v["data"]["offset"], v["data"]["leaderEpoch"], v["data"]["metadata"].rstrip("\x00"))
              for v in values[:3]]  # librdkafka sends its metadata strings with a NUL
    assert fields == [(4, 5, -1, ""), (4, 7, -1, "m1"), (4, 9, -1, "again")]
    assert all(set(v["data"]) == {"offset", "leaderEpoch", "metadata", "commitTimestamp", "topicId"}
               for v in values[:3])
    assert values[3:] == [None, None]


def test_transactional_offsets_appear_on_commit(target, tmp_path):
    """A transaction's offsets (send_offsets_to_transaction) are written when it commits; an aborted one's
    never show to a read_committed reader (Kafka writes them as transactional records: a read_uncommitted
reader sees an aborted transaction's offsets there too; the gateway writes committed ones only)."""
    from confluent_kafka import Producer
    topic, group = f"ot-{uuid.uuid4().hex[:8]}", f"og-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "enable.auto.commit": False})
    p = Producer({"bootstrap.servers": target.bootstrap, "transactional.id": f"tx-{group}"})
    p.init_transactions(30)
    for offset, commit in ((3, True), (4, False), (6, True)):
        p.begin_transaction()
        p.produce(topic, b"v")
        p.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], c.consumer_group_metadata(), 30)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    c.close()
    lines = _formatted(target, _partition_of(target, group), 2, str(tmp_path), "--isolation-level", "read_committed")
    assert [(x["key"]["data"]["group"], x["key"]["data"]["topic"], x["key"]["data"]["partition"],
             x["value"]["data"]["offset"]) for x in lines] == [(group, topic, 0, 3), (group, topic, 0, 6)]


def test_list_offsets_counts_each_commit(target):
    """ListOffsets on the group's partition: one OffsetCommit of two partitions adds two records."""
    topic, group = f"ot-{uuid.uuid4().hex[:8]}", f"og-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(15)
    client, partition = target.raw(), _partition_of(target, group)

    def offset(timestamp: int) -> int:
        r = client.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": OFFSETS, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                              "timestamp": timestamp}]}]})
        part = r["topics"][0]["partitions"][0]
        assert part["error_code"] == 0, part
        return part["offset"]

    def offsets() -> tuple[int, int]:
        return offset(-2), offset(-1)  # earliest, latest
    start, end = offsets()
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "enable.auto.commit": False})
    eventually(lambda: c.commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)],
                                asynchronous=False), timeout=30)
    c.close()
    assert offsets() == (start, end + 2)
