"""UpdateFeatures v0-v2 and AlterReplicaLogDirs v1-v2, raw, as Kafka 4.3.1 answers them: a feature
update is refused whole at its first bad entry (unknown feature, level outside the supported range, a
downgrade typed as an upgrade, an unknown upgrade type: INVALID_UPDATE_VERSION with Kafka's message),
an update to the finalized level succeeds; a replica move to a path that is not a log dir is
LOG_DIR_NOT_FOUND, to the log dir it is in already NONE, of an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
Run first against Kafka (KAFKA_REFERENCE_BOOTSTRAP, see kafka_target), then the gateway, whose feature
levels are fixed (gateway_only: a supported level other than the finalized one is refused)."""
from __future__ import annotations

import re
import uuid

import pytest
from kafka_target import eventually, gateway_only, target  # noqa: F401 (fixture)

ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS, UPDATE_FEATURES, CREATE_TOPICS, METADATA = 34, 35, 57, 19, 3
NONE, UNKNOWN_TOPIC_OR_PARTITION, LOG_DIR_NOT_FOUND, INVALID_UPDATE_VERSION = 0, 3, 57, 95
UPGRADE, SAFE_DOWNGRADE = 1, 2
FAILED = "The update failed for all features since the following feature had an error: "


def _update(client, version: int, *updates: tuple) -> tuple:
    """(error code, message with the controller's id as N, results or None) for (feature, level, type)s."""
    body = {"timeout_ms": 10000, "validate_only": True, "feature_updates": [
        {"feature": f, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": False}
        for f, level, kind in updates]}
    resp = client.call(UPDATE_FEATURES, version, body)
    message = resp["error_message"] and re.sub(r"Local controller \d+", "Local controller N", resp["error_message"])
    return resp["error_code"], message, resp.get("results")


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_as_kafka(target, version):
    c = target.raw()
    results = (lambda *r: list(r)) if version < 2 else (lambda *r: None)
    assert _update(c, version) == (NONE, None, results())
    assert _update(c, version, ("group.version", 1, UPGRADE)) == (
        NONE, None, results({"feature": "group.version", "error_code": NONE, "error_message": "NONE"}))
    assert _update(c, version, ("group.version", 1, UPGRADE), ("no.such.feature", 1, UPGRADE)) == (
        INVALID_UPDATE_VERSION, FAILED + "Invalid update version 1 for feature no.such.feature. Local controller N "
        "does not support this feature.", results())
    assert _update(c, version, ("group.version", 9, UPGRADE)) == (
        INVALID_UPDATE_VERSION, FAILED + "Invalid update version 9 for feature group.version. Local controller N "
        "only supports versions 0-1", results())
    assert _update(c, version, ("group.version", 0, UPGRADE)) == (
        INVALID_UPDATE_VERSION, FAILED + "Invalid update version 0 for feature group.version. Can't downgrade the "
        "version of this feature without setting the upgrade type to either safe or unsafe downgrade.", results())
    if version >= 1:
        assert _update(c, version, ("group.version", 1, 7)) == (
            INVALID_UPDATE_VERSION, FAILED + "Invalid update version 1 for feature group.version. The controller "
            "does not support the given upgrade type.", results())
    c.close()


@gateway_only
def test_feature_levels_are_fixed(target):
    c = target.raw()
    code, message, _ = _update(c, 1, ("group.version", 0, SAFE_DOWNGRADE))  # Kafka would downgrade
    assert code == INVALID_UPDATE_VERSION and message.endswith("group.version stays at 1.")
    c.close()


@pytest.mark.parametrize("version", [1, 2])
def test_alter_replica_log_dirs_with_one_log_dir(target, version):
    c = target.raw()
    topic = f"logdirs-{uuid.uuid4().hex[:8]}"
    body = {"topics": [{"name": topic, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    assert c.call(CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == NONE
    eventually(lambda: c.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                                             "allow_auto_topic_creation": False})["topics"][0]["error_code"] == NONE
               or 1 / 0)
    log_dir = c.call(DESCRIBE_LOG_DIRS, 4, {"topics": None})["results"][0]["log_dir"]
    resp = c.call(ALTER_REPLICA_LOG_DIRS, version, {"dirs": [
        {"path": "/no/such/dir", "topics": [{"name": topic, "partitions": [0]}]},
        {"path": log_dir, "topics": [{"name": topic, "partitions": [1, 7]}, {"name": "no-such-topic-x", "partitions": [0]}]},
    ]})
    got = {(t["topic_name"], p["partition_index"]): p["error_code"] for t in resp["results"] for p in t["partitions"]}
    assert got == {(topic, 0): LOG_DIR_NOT_FOUND, (topic, 1): NONE, (topic, 7): UNKNOWN_TOPIC_OR_PARTITION,
                   ("no-such-topic-x", 0): UNKNOWN_TOPIC_OR_PARTITION}
    c.close()
