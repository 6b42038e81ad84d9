"""Topic lookups shared by the Kafka handlers: name rules, auto-creation, partition counts, the
configs produce enforces (their definitions and validation: `semantics.topic_configs`)."""
from __future__ import annotations

import re

import gateway.kafka.errors as errors
from store.config import legacy_topic_id
from semantics import compaction

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,127}$")  # Kafka allows 249; the stored-message layout 127
ZERO_ID = bytes(16)  # Kafka's Uuid.ZERO_UUID: no topic


def topic_id(app, name: str) -> bytes:
    """The topic's id (KIP-516): made at random with the topic and stored with it (store.config),
    so it survives restarts and a re-created topic gets a new one; ZERO_ID for no such topic."""
    cfg = app.store.topics.get(name) if name else None
    return cfg.topic_id if cfg is not None else ZERO_ID


def offsets_topic_id() -> bytes:
    """The id of __consumer_offsets, also before it is stored (it is created on first use with it)."""
    return legacy_topic_id("__consumer_offsets")


def name_of_topic_id(app, tid) -> str | None:
    """The existing topic whose id is `tid`, or None."""
    return app.store.topics.name_of_id(bytes(tid)) if tid is not None else None


# api key -> (first version naming topics by id (KIP-516), topic list, name field) of such requests
_BY_ID = {0: (13, "topic_data", "name"), 1: (13, "topics", "topic")}


def name_topics_by_id(app, key: int, version: int, request: dict) -> None:
    """Fill in the name of each topic a Produce v13+ or Fetch v13+ request names by id (None for an id
    no topic has: the handler answers UNKNOWN_TOPIC_ID), so authorization and handlers work by name."""
    spec = _BY_ID.get(key)
    if spec is not None and version >= spec[0]:
        for t in request[spec[1]]:
            t[spec[2]] = name_of_topic_id(app, t["topic_id"])


def legal_name(name: str | None) -> bool:
    """Whether Kafka may create a topic of this name; existing topics are served whatever their name
    (RocketMQ names its own topics `%DLQ%<group>`, `%RETRY%<group>`)."""
    return bool(name) and bool(_LEGAL.match(name)) and name not in (".", "..")


def partition_count(cfg) -> int:
    return max(cfg.read_queues, cfg.write_queues)


def existing(app, name: str):
    """The TopicConfig of an existing topic, else None (no auto-creation)."""
    return app.store.topics.get(name) if name else None


def has_partition(cfg, index: int) -> bool:
    return cfg is not None and 0 <= index < partition_count(cfg)


def create(app, name: str, partitions: int, configs: dict | None = None, topic_id: bytes | None = None):
    return app.store.topics.create(name, read_queues=partitions, write_queues=partitions,
                                   attributes=dict(configs or {}), topic_id=topic_id)


def lookup(app, name: str, auto_create: bool):
    """(TopicConfig or None, error code) for a topic a client names, auto-creating when allowed. A
    topic a cluster member is still writing to etcd is not there yet (ownership.creating): being
    created (auto-creation) it answers LEADER_NOT_AVAILABLE, as Kafka does for a topic it creates."""
    cfg = existing(app, name)
    if cfg is None and legal_name(name) and auto_create and app.config.auto_create_topics:
        cfg = create(app, name, app.config.default_partitions)
    if cfg is not None and app.ownership.creating(name):
        return None, errors.LEADER_NOT_AVAILABLE if auto_create else errors.UNKNOWN_TOPIC_OR_PARTITION
    if cfg is not None:
        return cfg, errors.NONE
    if not legal_name(name):
        return None, errors.INVALID_TOPIC_EXCEPTION
    return None, errors.UNKNOWN_TOPIC_OR_PARTITION


def max_message_bytes(app, cfg) -> int:
    try:
        return int((cfg.attributes or {}).get("max.message.bytes", app.config.max_message_bytes))
    except ValueError:
        return app.config.max_message_bytes


def compacted(cfg) -> bool:
    """Whether the topic's `cleanup.policy` includes compact (keyless records are refused then)."""
    return compaction.policy_of(cfg.attributes or {}) is not None


def log_append_time(cfg) -> bool:
    return (cfg.attributes or {}).get("message.timestamp.type") == "LogAppendTime"
