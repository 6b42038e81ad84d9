"""Topic ids (KIP-516): a random UUID made with the topic, the same in CreateTopics, Metadata and
DescribeTopicPartitions, new when a topic is deleted and re-created under its name, UNKNOWN_TOPIC_ID
for an id no topic has, and (the gateway's store) kept across a restart. Run first against Kafka 4.3.1
(KAFKA_REFERENCE_BOOTSTRAP, see kafka_target), then the gateway."""
from __future__ import annotations

import uuid

from kafka_target import eventually, gateway_only, target  # noqa: F401 (fixture)

from store.config import ConfigDir, TopicTable, legacy_topic_id

METADATA, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = 3, 19, 20, 75
NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 0, 3, 100
ZERO = bytes(16)


def _create(client, name: str) -> bytes:
    body = {"topics": [{"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    t = client.call(CREATE_TOPICS, 7, body)["topics"][0]
    assert t["error_code"] == NONE
    return bytes(t["topic_id"])


def _metadata_id(client, name: str) -> bytes:
    def ask():
        t = client.call(METADATA, 12, {"topics": [{"name": name, "topic_id": ZERO}],
                                       "allow_auto_topic_creation": False})["topics"][0]
        assert t["error_code"] == NONE
        return bytes(t["topic_id"])
    return eventually(ask)


def _delete(client, name: str) -> None:
    resp = client.call(DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": ZERO}], "timeout_ms": 10000})
    assert resp["responses"][0]["error_code"] == NONE


def test_created_id_is_random_and_answered_everywhere(target):
    c = target.raw()
    name = f"tid-{uuid.uuid4().hex[:8]}"
    tid = _create(c, name)
    assert tid != ZERO and tid != legacy_topic_id(name)  # not derived from the name
    assert _metadata_id(c, name) == tid
    described = c.call(DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": name}], "response_partition_limit": 10,
                                                      "cursor": None})["topics"][0]
    assert described["error_code"] == NONE and bytes(described["topic_id"]) == tid
    by_id = c.call(METADATA, 12, {"topics": [{"name": None, "topic_id": tid}], "allow_auto_topic_creation": False})
    assert by_id["topics"][0]["name"] == name
    c.close()


def test_recreated_topic_gets_a_new_id_and_the_old_one_is_unknown(target):
    c = target.raw()
    name = f"tid-re-{uuid.uuid4().hex[:8]}"
    first = _create(c, name)
    _metadata_id(c, name)
    _delete(c, name)

    def recreate():
        return _create(c, name)
    second = eventually(recreate)  # Kafka finishes a deletion asynchronously
    assert second not in (ZERO, first)
    assert _metadata_id(c, name) == second
    old = c.call(METADATA, 12, {"topics": [{"name": None, "topic_id": first}], "allow_auto_topic_creation": False})
    assert [(t["error_code"], bytes(t["topic_id"])) for t in old["topics"]] == [(UNKNOWN_TOPIC_ID, first)]
    c.close()


def _delete_by_id(client, tid: bytes) -> list[tuple]:
    resp = client.call(DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": tid}], "timeout_ms": 10000})
    return [(r["error_code"], r["name"], bytes(r["topic_id"])) for r in resp["responses"]]


def test_delete_by_id_and_by_unknown_id(target):
    c = target.raw()
    stranger = uuid.uuid4().bytes
    assert _delete_by_id(c, stranger) == [(UNKNOWN_TOPIC_ID, None, stranger)]
    name = f"tid-del-{uuid.uuid4().hex[:8]}"
    tid = _create(c, name)
    _metadata_id(c, name)
    assert _delete_by_id(c, tid) == [(NONE, name, tid)]
    c.close()


@gateway_only
def test_id_survives_a_restart(target):
    c = target.raw()
    name = f"tid-keep-{uuid.uuid4().hex[:8]}"
    tid = _create(c, name)
    c.close()
    target.gateway.restart()
    c = target.raw()
    assert _metadata_id(c, name) == tid
    c.close()


def test_store_keeps_ids_and_gives_old_entries_the_name_derived_one(tmp_path):
    table = TopicTable(ConfigDir(str(tmp_path)))
    made = table.create("fresh", 1, 1)
    assert len(made.topic_id) == 16 and made.topic_id != legacy_topic_id("fresh")
    assert table.name_of_id(made.topic_id) == "fresh"
    again = TopicTable(ConfigDir(str(tmp_path)))
    assert again.get("fresh").topic_id == made.topic_id and again.name_of_id(made.topic_id) == "fresh"
    again.delete("fresh")
    assert again.name_of_id(made.topic_id) is None
    assert again.create("fresh", 1, 1).topic_id != made.topic_id

    legacy_dir = tmp_path / "legacy"
    legacy_dir.mkdir()
    (legacy_dir / "topics.json").write_text('{"topicConfigTable": {"orders": {"topicName": "orders", '
                                            '"readQueueNums": 1, "writeQueueNums": 1, "perm": 6}}}')
    old = TopicTable(ConfigDir(str(legacy_dir)))
    assert old.get("orders").topic_id.hex() == "a3e2778e3b045c8f9e79229377b8a2a5"  # the id it was answered with
    assert uuid.UUID(bytes=legacy_topic_id("orders")) == uuid.uuid5(
        uuid.UUID("6b1f5c8e-4d0a-4e53-9a6f-2f6d1c3b7a90"), "orders")
