"""`__consumer_offsets` as Kafka 4.3 serves it: every offset commit is a record in partition
abs(javaHash(group)) % partitions (key OffsetCommitKey v1, value OffsetCommitValue v4), OffsetDelete a
tombstone, and `kafka-console-consumer --formatter OffsetsMessageFormatter` prints them. The gateway
mirrors its offset table there (gateway/kafka/offsets_topic.py). Checked against a real Kafka 4.3 first."""
from __future__ import annotations

import base64
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
GROUP_FORMATTER = "org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter"


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


def _end_offset(client, partition: int, timestamp: int = -1) -> int:
    """ListOffsets of one `__consumer_offsets` partition (-1 latest, -2 earliest)."""
    r = client.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": OFFSETS, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                          "timestamp": timestamp}]}]})
    part = r["topics"][0]["partitions"][0]
    assert part["error_code"] == 0, part
    return part["offset"]


def _formatted(target, group: str, log_dir: str, *extra: str, formatter: str = FORMATTER) -> list[dict]:
    """What the formatter prints for `group`: its partition read to the end (other groups' lines dropped).
    The formatter prints nothing for a group metadata record (Kafka writes those for classic groups) but
    counts it, so the whole partition is read (--max-messages; --timeout-ms where markers leave gaps)."""
    client, partition = target.raw(), _partition_of(target, group)
    count = _end_offset(client, partition) - _end_offset(client, partition, -2)
    r = run_tool("kafkatools", "org.apache.kafka.tools.consumer.ConsoleConsumer", [
        "--bootstrap-server", target.bootstrap, "--topic", OFFSETS, "--partition", str(partition),
        "--offset", "earliest", "--formatter", formatter, "--max-messages", str(count), "--timeout-ms", "10000",
        *extra], log_dir)
    decoder, text, out = json.JSONDecoder(), r.stdout, []
    at = text.find('{"key"')
    while at >= 0:
        obj, end = decoder.raw_decode(text, at)
        out.append(obj)
        at = text.find('{"key"', end)
    assert out or r.returncode == 0, r.stderr[-3000:]
    return [x for x in out if x["key"]["data"]["group"] == group]


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
    lines = _formatted(target, group, str(tmp_path))
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
    lines = _formatted(target, group, str(tmp_path), "--isolation-level", "read_committed")
    assert [(x["key"]["data"]["group"], x["key"]["data"]["topic"], x["key"]["data"]["partition"],
             x["value"]["data"]["offset"]) for x in lines] == [(group, topic, 0, 3), (group, topic, 0, 6)]


def test_list_offsets_counts_each_commit(target):
    """ListOffsets on the group's partition: one OffsetCommit of two partitions adds two records."""
    topic, group = f"ot-{uuid.uuid4().hex[:8]}", f"og-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(15)
    client, partition = target.raw(), _partition_of(target, group)

    def offsets() -> tuple[int, int]:
        return _end_offset(client, partition, -2), _end_offset(client, partition)
    start, end = offsets()
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "enable.auto.commit": False})
    eventually(lambda: c.commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)],
                                asynchronous=False), timeout=30)
    c.close()
    assert offsets() == (start, end + 2)


def test_a_subscribed_groups_commits_print_alike(target, tmp_path):
    """A kafka-python consumer in a classic group (join, sync, commit, leave): the formatter prints its offset
    records only (Kafka's group metadata records of that partition are not offset records; the gateway
    writes none)."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KafkaPartition
    topic, group = f"ot-{uuid.uuid4().hex[:8]}", f"og-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    producer = KafkaProducer(bootstrap_servers=target.bootstrap)
    for _ in range(3):
        producer.send(topic, b"v")
    producer.close()
    c = KafkaConsumer(topic, bootstrap_servers=target.bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=10000)
    assert len([m for m, _ in zip(c, range(3))]) == 3
    c.commit()
    c.commit({KafkaPartition(topic, 0): OffsetAndMetadata(2, "two", -1)})
    c.close()
    lines = _formatted(target, group, str(tmp_path))
    assert [(x["key"]["type"], x["key"]["data"]["group"], x["key"]["data"]["topic"], x["key"]["data"]["partition"],
             x["value"]["data"]["offset"], x["value"]["data"]["metadata"]) for x in lines] == [
        (1, group, topic, 0, 3, ""), (1, group, topic, 0, 2, "two")]


def test_classic_group_metadata_records(target, tmp_path):
    """A one-member kafka-python group: after its SyncGroup a record with the member (client id, host,
    timeouts, subscription, assignment), after it leaves an Empty one (GroupMetadataMessageFormatter)."""
    from kafka import KafkaConsumer
    topic, group = f"ot-{uuid.uuid4().hex[:8]}", f"og-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)
    c = KafkaConsumer(topic, bootstrap_servers=target.bootstrap, group_id=group, client_id="cg-client",
                      enable_auto_commit=False, consumer_timeout_ms=3000, session_timeout_ms=20000)

    def assigned():
        c.poll(500)
        assert c.assignment()
    eventually(assigned, timeout=30)
    c.close()
    lines = [x["value"] for x in _formatted(target, group, str(tmp_path), formatter=GROUP_FORMATTER)]
    full = [v["data"] for v in lines if v and v["data"]["members"]]
    assert full, lines
    last = full[-1]
    member = last["members"][0]
    assert (last["protocolType"], last["protocol"], last["leader"], len(last["members"])) == (
        "consumer", "range", member["memberId"], 1), lines
    assert (member["clientId"], member["clientHost"], member["sessionTimeout"], member["groupInstanceId"]) == (
        "cg-client", "/127.0.0.1", 20000, None), lines
    # ConsumerProtocolSubscription / Assignment v0 bytes (base64): the topic, then its partition 0
    assert topic.encode() in base64.b64decode(member["subscription"])
    assert base64.b64decode(member["assignment"]).endswith(topic.encode() + bytes.fromhex("000000010000000000000000"))
    assert member["rebalanceTimeout"] > 0
    empty = lines[-1]
    assert (empty["version"], empty["data"]["members"], empty["data"]["protocol"], empty["data"]["leader"]) == (
        3, [], None, None), lines
