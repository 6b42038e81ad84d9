"""`__consumer_offsets` as Kafka clients read it: a mirror of the offset table in Kafka's record format.

The shared offset table (`app.offsets`) stays the source of truth; each Kafka offset commit (OffsetCommit,
a committed TxnOffsetCommit) also appends one small batch to partition abs(javaHash(group)) % 50, as a
Kafka 4.3 broker writes it: key OffsetCommitKey v1 (group, topic, partition), value OffsetCommitValue v4
(offset, leader epoch, metadata, commit timestamp, the topic id as tagged field 0); OffsetDelete and
DeleteGroups append tombstones (null value). Classic groups' metadata records (GroupMetadataKey v2,
GroupMetadataValue v3) are written after the leader's SyncGroup, when a LeaveGroup empties the group and
as a tombstone at DeleteGroups. Lag monitors and `kafka-console-consumer --formatter
org.apache.kafka.tools.consumer.OffsetsMessageFormatter` read it through Fetch like any topic. The topic
is created compacted at the first commit or read.
"""
from __future__ import annotations

import logging
import struct
import time

import gateway.kafka.topics as topics
import store
from codec.kafka import records
from gateway.kafka.metadata import OFFSETS_PARTITIONS, OFFSETS_TOPIC
from interop.inner_batch import entry_message, index_info
from semantics.flow_control import append_in_turn

log = logging.getLogger("rocketgate.kafka")

OFFSET_KEY_VERSION = 1  # OffsetCommitKey
OFFSET_VALUE_VERSION = 4  # flexible: compact metadata string, tagged topic id
GROUP_KEY_VERSION = 2  # GroupMetadataKey
GROUP_VALUE_VERSION = 3  # not flexible, as Kafka 4.3 writes it for classic groups


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit signed), which Kafka partitions groups by."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group: str) -> int:
    """The `__consumer_offsets` partition of a group: Utils.abs(groupId.hashCode()) % partitions."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % OFFSETS_PARTITIONS


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _nullable(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else _string(s)


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", OFFSET_KEY_VERSION) + _string(group) + _string(topic) + struct.pack(">i", partition)


def offset_value(offset: int, leader_epoch: int, metadata: str, commit_ms: int, topic_id: bytes) -> bytes:
    meta = metadata.encode()
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, offset, leader_epoch) + _uvarint(len(meta) + 1) + meta
            + struct.pack(">q", commit_ms) + _uvarint(1) + _uvarint(0) + _uvarint(len(topic_id)) + topic_id)


def group_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_KEY_VERSION) + _string(group)


def group_value(g, now_ms: int) -> bytes:
    """GroupMetadataValue v3 of a classic group (`semantics.kafka_groups.Group`): each member with the
    subscription of the group's protocol and its assignment; an empty group has no protocol or leader."""
    members = list(g.members.values())
    out = [struct.pack(">h", GROUP_VALUE_VERSION), _string(g.protocol_type or ""), struct.pack(">i", g.generation),
           _nullable(g.protocol if members else None), _nullable(g.leader if members else None),
           struct.pack(">qi", now_ms, len(members))]
    for m in members:
        out += [_string(m.member_id), _nullable(m.instance_id), _string(m.client_id), _string(m.client_host),
                struct.pack(">ii", m.rebalance_ms, m.session_ms), _bytes(dict(m.protocols).get(g.protocol, b"")),
                _bytes(m.assignment)]
    return b"".join(out)


# Kafka never compacts a partition's active segment (offsets.topic.segment.bytes, 100 MiB), so a
# reader sees the recent history of a group's commits; the mirror keeps records 5 minutes before
# compacting them, or a group's commits would vanish while a reader is reading them.
OFFSETS_CONFIGS = {"cleanup.policy": "compact", "min.compaction.lag.ms": "300000"}


def readable(app, name: str):
    """`topics.existing` for Fetch and ListOffsets: the offsets topic, listed by Metadata from the start,
    is created (empty) when first read before any commit."""
    cfg = topics.existing(app, name)
    if cfg is None and name == OFFSETS_TOPIC:  # compacted as Kafka's: only the latest commit per key stays
        cfg = topics.create(app, OFFSETS_TOPIC, OFFSETS_PARTITIONS, OFFSETS_CONFIGS, topics.offsets_topic_id())
    return cfg


async def mirror(app, group: str, commits: list[tuple]) -> None:
    """Append one batch for a group's commits: (topic, partition, offset, leader epoch, metadata) tuples,
    offset None for a tombstone (the offset was deleted)."""
    now = int(time.time() * 1000)
    await _append(app, group, [(now, offset_key(group, topic, partition), None if offset is None else
                                offset_value(offset, epoch, metadata, now, topics.topic_id(app, topic)), [])
                               for topic, partition, offset, epoch, metadata in commits])


async def mirror_group(app, group: str, g) -> None:
    """A classic group's metadata record (after its leader's SyncGroup, when it empties); g None: its
    tombstone (the group was deleted)."""
    now = int(time.time() * 1000)
    await _append(app, group, [(now, group_key(group), None if g is None else group_value(g, now), [])])


async def _append(app, group: str, rows: list) -> None:
    """Best effort: the offset table is the source of truth, so a mirror write the store refuses (a
    full disk) is logged, at most once a minute, and the commit or SyncGroup it follows still succeeds."""
    global _warned_at
    if not rows:
        return
    now = rows[0][0]
    try:
        readable(app, OFFSETS_TOPIC)
        batch = records.parse_batches(records.build_batch(rows, base_timestamp=now))[0]
        index = partition_for(group)
        msg = entry_message(OFFSETS_TOPIC, index, batch, index_info(batch), {}, now, False)
        await append_in_turn(app.flow, app.store, [msg])  # a slow disk: off the loop; never refused
    except (store.StoreError, OSError) as exc:
        if time.monotonic() - _warned_at >= 60:
            _warned_at = time.monotonic()
            log.warning("%s not written for group %r (%s); the offset table has the commit", OFFSETS_TOPIC, group, exc)


_warned_at = -60.0
