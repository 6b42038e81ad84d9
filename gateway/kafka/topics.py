"""Topic lookups shared by the Kafka handlers: name rules, auto-creation, partition counts, the
configs produce enforces (their definitions and validation: `semantics.topic_configs`)."""
from __future__ import annotations

import hashlib
import re
import uuid

import gateway.kafka.errors as errors
from semantics import compaction

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,127}$")  # Kafka allows 249; the stored-message layout 127
_TOPIC_IDS = uuid.UUID("6b1f5c8e-4d0a-4e53-9a6f-2f6d1c3b7a90")  # namespace of the name-derived topic ids
_NAMESPACE = _TOPIC_IDS.bytes


def topic_id(name: str) -> bytes:
    """The topic's id (Metadata v10+, KIP-848 assignments): derived from its name, so stable across
    restarts without being stored (a re-created topic gets the same id). It is `uuid.uuid5(_TOPIC_IDS,
    name).bytes`, computed on the bytes (a tenth of uuid5's time: Metadata asks for it per topic)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    return bytes(digest)


def name_of_topic_id(app, tid: bytes) -> str | None:
    """The existing topic whose id is `tid`, or None."""
    return next((n for n in app.store.topics.names() if topic_id(n) == bytes(tid)), None)


def names_by_id(app) -> dict[bytes, str]:
    """Every existing topic by its id: one pass for a request that names many topics by id."""
    return {topic_id(n): n for n in app.store.topics.names()}

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


def create(app, name: str, partitions: int, configs: dict | None = None):
    return app.store.topics.create(name, read_queues=partitions, write_queues=partitions,
                                   attributes=dict(configs or {}))


def lookup(app, name: str, auto_create: bool):
    """(TopicConfig or None, error code) for a topic a client names, auto-creating when allowed."""
    cfg = existing(app, name)
    if cfg is not None:
        return cfg, errors.NONE
    if not legal_name(name):
        return None, errors.INVALID_TOPIC_EXCEPTION
    if auto_create and app.config.auto_create_topics:
        return create(app, name, app.config.default_partitions), errors.NONE
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
