"""The `__consumer_offsets` records the gateway mirrors as a Kafka 4.3 broker writes them (Kafka's
own JSON schemas OffsetCommitKey/Value and GroupMetadataKey/Value, at the versions written).
Hot path: gateway.kafka.offsets_topic."""
from __future__ import annotations

from construct import (Adapter, Bytes, Const, GreedyBytes, Int16sb, Int32sb, Int64sb, PascalString, Prefixed,
                       PrefixedArray, Struct, VarInt)

from codec.formats.common import TaggedFields, register
from codec.formats.kafka import NullableString

String = PascalString(Int16sb, "utf8")
KafkaBytes = Prefixed(Int32sb, GreedyBytes)


class _CompactString(Adapter):
    """uvarint length + 1, then UTF-8 (flexible versions)."""

    def _decode(self, obj, context, path):
        return obj.data.decode("utf-8")

    def _encode(self, obj, context, path):
        raw = obj.encode("utf-8")
        return {"length": len(raw) + 1, "data": raw}


CompactString = _CompactString(Struct("length" / VarInt, "data" / Bytes(lambda c: max(c.length - 1, 0))))

OffsetCommitKey = register("OffsetCommitKey", "__consumer_offsets", Struct(
    "version" / Const(1, Int16sb) * "key version 1",
    "group" / String * "i16 length + group id",
    "topic" / String * "i16 length + topic",
    "partition" / Int32sb * "partition",
), "record key in __consumer_offsets", "Key of an offset commit.")

OffsetCommitValue = register("OffsetCommitValue", "__consumer_offsets", Struct(
    "version" / Const(4, Int16sb) * "value version 4 (flexible)",
    "offset" / Int64sb * "committed offset",
    "leader_epoch" / Int32sb * "leader epoch of the committed offset (-1 unknown)",
    "metadata" / CompactString * "uvarint length + 1, then the commit metadata",
    "commit_timestamp" / Int64sb * "commit time, epoch ms",
    "tagged_fields" / TaggedFields * "tag 0: the topic id (16 bytes)",
), "record value in __consumer_offsets (null: an OffsetDelete/DeleteGroups tombstone)", "Value of an offset commit.")

GroupMetadataKey = register("GroupMetadataKey", "__consumer_offsets", Struct(
    "version" / Const(2, Int16sb) * "key version 2",
    "group" / String * "i16 length + group id",
), "record key in __consumer_offsets", "Key of a classic group's metadata.")

Member = Struct(
    "member_id" / String,
    "group_instance_id" / NullableString,
    "client_id" / String,
    "client_host" / String,
    "rebalance_timeout" / Int32sb,
    "session_timeout" / Int32sb,
    "subscription" / KafkaBytes,
    "assignment" / KafkaBytes,
)

GroupMetadataValue = register("GroupMetadataValue", "__consumer_offsets", Struct(
    "version" / Const(3, Int16sb) * "value version 3",
    "protocol_type" / String * 'i16 length + "consumer" (or the group\'s protocol type)',
    "generation" / Int32sb * "generation id",
    "protocol" / NullableString * "chosen assignor (null: empty group)",
    "leader" / NullableString * "leader member id (null: empty group)",
    "current_state_timestamp" / Int64sb * "epoch ms",
    "members" / PrefixedArray(Int32sb, Member)
    * "i32 count, then each: member_id, group_instance_id (nullable), client_id, client_host, "
      "rebalance_timeout i32, session_timeout i32, subscription and assignment (i32 length + bytes)",
), "record value in __consumer_offsets", "Value of a classic group's metadata.")
