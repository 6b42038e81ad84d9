"""Internal topics refuse Kafka clients' writes: Kafka answers INVALID_TOPIC_EXCEPTION to a client Produce
to `__consumer_offsets` / `__transaction_state` (checked on Kafka 4.3), and the gateway answers the same for
RocketMQ's system topics (`RMQ_SYS_*` with the transaction half/op topics, `SCHEDULE_TOPIC_XXXX`, `TBW102`),
which the broker itself keeps writing below the Kafka API. DeleteTopics refuses them too, as RocketMQ refuses
deleting its system topics (Kafka 4.3 would delete its internal topics: a documented difference).
The shared tests ran against a real Kafka 4.3 first (KAFKA_REFERENCE_BOOTSTRAP)."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka_raw import RawClient, produce_body
from kafka_target import eventually, first_record, gateway_only, target  # noqa: F401 (fixture)
from shard_aware import raw_leader

from codec.kafka import records

PRODUCE, METADATA, DELETE_TOPICS = 0, 3, 20
NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_TOPIC_EXCEPTION = 0, 3, 6, 17
OFFSETS = "__consumer_offsets"
ROCKETMQ_SYSTEM = ["RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "SCHEDULE_TOPIC_XXXX", "TBW102"]


def _batch() -> bytes:
    now = int(time.time() * 1000)
    return records.build_batch([(now, b"k", b"v", [])], base_timestamp=now)


def _errors(resp: dict) -> dict:
    return {t["name"]: t["partition_responses"][0]["error_code"] for t in resp["responses"]}


@pytest.fixture(scope="module")
def offsets_topic(target):
    """Kafka creates its offsets topic with the first group: one group commits once here."""
    topic = f"it-{uuid.uuid4().hex[:10]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=target.bootstrap, group_id=f"it-{uuid.uuid4().hex[:8]}",
                             consumer_timeout_ms=2000)
    list(consumer)
    consumer.commit()
    consumer.close()
    return topic


@pytest.mark.parametrize("version", [3, 9])  # the first and last the gateway serves
def test_internal_topic_refused_next_to_a_plain_one(target, offsets_topic, version):
    """One Produce with the offsets topic and a user topic: only the internal one is refused."""
    c = RawClient(raw_leader(target.bootstrap, offsets_topic), timeout=60)  # the user topic's leader
    body = produce_body(offsets_topic, 0, _batch())
    body["topic_data"].append({"name": OFFSETS, "partition_data": [{"index": 0, "records": _batch()}]})

    def answered() -> dict:
        got = _errors(c.call(PRODUCE, version, body))
        assert got[offsets_topic] not in (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER), got
        return got
    assert eventually(answered) == {offsets_topic: NONE, OFFSETS: INVALID_TOPIC_EXCEPTION}
    c.close()


@gateway_only
@pytest.mark.parametrize("name", ROCKETMQ_SYSTEM)
def test_rocketmq_system_topic_refuses_kafka_produce(target, name):
    c = target.raw()
    assert _errors(c.call(PRODUCE, 9, produce_body(name, 0, _batch()))) == {name: INVALID_TOPIC_EXCEPTION}
    c.close()


@gateway_only
@pytest.mark.parametrize("name", [*ROCKETMQ_SYSTEM, OFFSETS])
def test_internal_topic_refuses_delete(target, offsets_topic, name):
    c = target.raw()
    resp = c.call(DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": bytes(16)}], "timeout_ms": 5000})
    answer = resp["responses"][0]
    assert (answer["name"], answer["error_code"]) == (name, INVALID_TOPIC_EXCEPTION)
    assert "internal" in answer["error_message"]
    old = c.call(DELETE_TOPICS, 1, {"topic_names": [name], "timeout_ms": 5000})["responses"][0]
    assert old["error_code"] == INVALID_TOPIC_EXCEPTION
    c.close()


@gateway_only
def test_schedule_topic_still_written_by_the_broker(target):
    """A delayed Kafka record goes through SCHEDULE_TOPIC_XXXX below the Kafka API and arrives."""
    topic = f"it-delay-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": target.bootstrap})
    p.produce(topic, value=b"later", key=b"k", headers=[("DELAY", b"1")], partition=0)  # level 1 = 1 s
    assert p.flush(30) == 0
    got = first_record(target.bootstrap, topic, "it-delay")
    assert got is not None and got.value() == b"later"


HEARTBEAT, FIND_COORDINATOR = 68, 10


def _heartbeat_assignment(c, group: str, regex: str, until) -> dict:
    """A KIP-848 member subscribed by regex, heartbeating until `until(assignment)` holds: Kafka resolves a
    regex asynchronously, so the first answers may assign nothing."""
    member, epoch = str(uuid.uuid4()), 0
    c.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})  # Kafka creates its offsets topic
    body = {"group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": None, "subscribed_topic_regex": regex,
            "server_assignor": None, "topic_partitions": []}
    assigned: dict = {}

    def settled() -> dict:
        nonlocal epoch
        r = c.call(HEARTBEAT, 1, dict(body, member_epoch=epoch))
        assert r["error_code"] == NONE, r
        epoch = r["member_epoch"]
        if r["assignment"] is not None:
            assigned.clear()
            assigned.update({tp["topic_id"]: sorted(tp["partitions"]) for tp in r["assignment"]["topic_partitions"]})
        assert until(assigned), assigned
        return assigned
    return eventually(settled, timeout=30)


def test_regex_subscription_resolves_the_offsets_topic(target, offsets_topic):
    """Kafka 4.x resolves a consumer group's regex over every topic, internal ones included: a regex naming
    __consumer_offsets is assigned all its partitions (franz-go's Test848RegexBrokerResolves)."""
    group = f"it-re-{uuid.uuid4().hex[:8]}"
    c = target.raw_coordinator(group)  # its heartbeats go to the coordinator (--shards: the shard it hashes to)
    listed = c.call(METADATA, 12, {"topics": [{"name": OFFSETS, "topic_id": bytes(16)}],
                                   "allow_auto_topic_creation": False})["topics"][0]
    count = len(listed["partitions"])
    assigned = _heartbeat_assignment(c, group, "__consumer_offsets", bool)
    assert assigned == {listed["topic_id"]: list(range(count))}
    c.close()


@gateway_only
def test_regex_subscription_skips_rocketmq_system_topics(target, offsets_topic):
    group = f"it-re-{uuid.uuid4().hex[:8]}"
    c = target.raw_coordinator(group)
    user = c.call(METADATA, 12, {"topics": [{"name": offsets_topic, "topic_id": bytes(16)}],
                                 "allow_auto_topic_creation": False})["topics"][0]
    regex = f"RMQ_SYS_.*|SCHEDULE_TOPIC_.*|TBW102|{offsets_topic}"
    assigned = _heartbeat_assignment(c, group, regex, bool)
    assert assigned == {user["topic_id"]: list(range(len(user["partitions"])))}
    c.close()


@pytest.mark.parametrize("name", ["__transaction_state", "__share_group_state"])
def test_produce_to_a_missing_kafka_internal_topic_does_not_create_it(target, name):
    """Kafka 4.3 answers UNKNOWN_TOPIC_OR_PARTITION to a Produce to its transaction or share-state topic
    before it exists (no transaction or share group yet), and the Produce does not create it."""
    c = target.raw()
    for version in (3, 9):
        assert _errors(c.call(PRODUCE, version, produce_body(name, 0, _batch()))) == {name: UNKNOWN_TOPIC_OR_PARTITION}
    md = c.call(METADATA, 12, {"topics": [{"topic_id": bytes(16), "name": name}], "allow_auto_topic_creation": False,
                               "include_topic_authorized_operations": False})
    assert md["topics"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
    c.close()


KAFKA_INTERNAL = ["__transaction_state", "__share_group_state"]


@pytest.mark.parametrize("name", KAFKA_INTERNAL)
def test_metadata_names_a_missing_kafka_internal_topic_as_internal(target, name):
    """Before any transaction (share group), Kafka 4.3 answers a Metadata naming its transaction
    (share-state) topic UNKNOWN_TOPIC_OR_PARTITION with is_internal set, whether or not it may create it."""
    c = target.raw()
    for version in (4, 9, 12):  # (before v4 naming a topic asks for its creation)
        body = {"topics": [{"name": name, "topic_id": bytes(16)}], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False, "include_cluster_authorized_operations": False}
        t = c.call(METADATA, version, body)["topics"][0]
        assert (t["name"], t["error_code"], t["is_internal"], t["partitions"]) == (
            name, UNKNOWN_TOPIC_OR_PARTITION, True, []), (version, t)
    # Allowed to auto-create, Kafka answers the same (and then makes the topic; the gateway does not: docs/mapping.md)
    for version, body in ((1, {"topics": [{"name": name}]}),
                          (12, {"topics": [{"name": name, "topic_id": bytes(16)}], "allow_auto_topic_creation": True,
                                "include_topic_authorized_operations": False})):
        t = c.call(METADATA, version, body)["topics"][0]
        assert (t["error_code"], t["is_internal"], t["partitions"]) == (UNKNOWN_TOPIC_OR_PARTITION, True, []), t
    c.close()
