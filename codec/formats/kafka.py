"""Kafka framing: the request header v0-v2 and response header v0-v1 (the message bodies are
declared by Kafka's own JSON schemas, codec.kafka.apis), and the RecordBatch v2 header and record
that the gateway stores verbatim as inner batches, and the consumer protocol's subscription metadata.
Hot paths: codec.kafka.protocol, codec.kafka.records, semantics.kafka_groups.subscription_topics."""
from __future__ import annotations

from construct import (Adapter, Array, Bytes, Const, GreedyBytes, Int8sb, Int16sb, Int32sb, Int32ub, Int64sb,
                       PascalString, Prefixed, PrefixedArray, Rebuild, Struct, ZigZag, len_, this)

from codec.formats.common import NullableVarBytes, TaggedFields, register


class _NullableString(Adapter):
    """i16 length (-1 = null), then UTF-8."""

    def _decode(self, obj, context, path):
        return None if obj.length < 0 else obj.data.decode("utf-8")

    def _encode(self, obj, context, path):
        if obj is None:
            return {"length": -1, "data": b""}
        raw = obj.encode("utf-8")
        return {"length": len(raw), "data": raw}


NullableString = _NullableString(Struct("length" / Int16sb, "data" / Bytes(lambda c: max(c.length, 0))))

RequestHeaderV0 = Struct(
    "api_key" / Int16sb * "the API (Produce 0, Fetch 1, ...)",
    "api_version" / Int16sb * "its version",
    "correlation_id" / Int32sb * "echoed by the response",
)
RequestHeaderV1 = Struct(*RequestHeaderV0.subcons,
                         "client_id" / NullableString * "i16 length (-1 = null), then UTF-8 (never compact)")
RequestHeaderV2 = register("RequestHeader", "Kafka", Struct(
    *RequestHeaderV1.subcons,
    "tagged_fields" / TaggedFields * "v2 only (flexible versions): tagged fields",
), "after the i32 size of every request",
    "v0: api_key, api_version, correlation_id; v1 adds client_id; v2 (flexible API versions) adds tagged fields.")

ResponseHeaderV0 = Struct("correlation_id" / Int32sb * "the request's correlation id")
ResponseHeaderV1 = register("ResponseHeader", "Kafka", Struct(
    *ResponseHeaderV0.subcons,
    "tagged_fields" / TaggedFields * "v1 only (flexible versions except ApiVersions): tagged fields",
), "after the i32 size of every response", "v0: correlation_id; v1 adds tagged fields.")

RecordBatchHeader = register("RecordBatchHeader", "Kafka", Struct(
    "base_offset" / Int64sb * "offset of the first record (the gateway writes the queue offset here when serving)",
    "batch_length" / Int32sb * "bytes after this field",
    "partition_leader_epoch" / Int32sb * "leader epoch",
    "magic" / Const(2, Int8sb) * "2",
    "crc" / Int32ub * "CRC-32C of everything from attributes to the end of the batch",
    "attributes" / Int16sb * "bits 0-2 compression, 3 LogAppendTime, 4 transactional, 5 control",
    "last_offset_delta" / Int32sb * "offset delta of the last record",
    "base_timestamp" / Int64sb * "timestamp of the first record",
    "max_timestamp" / Int64sb * "largest timestamp (LogAppendTime: the append time)",
    "producer_id" / Int64sb * "idempotent/transactional producer id, -1 without",
    "producer_epoch" / Int16sb * "its epoch",
    "base_sequence" / Int32sb * "sequence number of the first record",
    "record_count" / Int32sb * "records in the batch",
), "body of an INNER_BATCH CommitLog entry; Produce and Fetch records",
    "RecordBatch v2 header (61 bytes); the records follow, compressed as the attributes say.")

RecordHeader = Struct(
    "key" / NullableVarBytes * "zigzag varint length, then the header name (UTF-8)",
    "value" / NullableVarBytes * "zigzag varint length (-1 = null), then the value",
)

Record = register("Record", "Kafka", Prefixed(ZigZag, Struct(
    "attributes" / Int8sb * "unused (0)",
    "timestamp_delta" / ZigZag * "zigzag varint: timestamp - base_timestamp",
    "offset_delta" / ZigZag * "zigzag varint: offset - base_offset",
    "key" / NullableVarBytes * "zigzag varint length (-1 = null), then the key",
    "value" / NullableVarBytes * "zigzag varint length (-1 = null), then the value",
    "header_count" / Rebuild(ZigZag, len_(this.headers)) * "zigzag varint",
    "headers" / Array(this.header_count, RecordHeader) * "each: name, then value, as varint-length blobs",
)), "records section of a RecordBatch (after decompression)", "One record: zigzag varint length, then its fields.")

RecordBatch = Struct(
    "header" / RecordBatchHeader,
    "records" / Bytes(this.header.batch_length - 49) * "the records section (compressed per attributes)",
)

ConsumerProtocolSubscription = register("ConsumerProtocolSubscription", "Kafka", Struct(
    "version" / Int16sb * "ConsumerProtocolSubscription version (0-3: every version starts with the topics)",
    "topics" / PrefixedArray(Int32sb, PascalString(Int16sb, "utf8")) * "i32 count, then each: i16 length + UTF-8",
    "rest" / GreedyBytes * "user data (i32 length + bytes), then by version owned partitions, generation id, "
                           "rack: not read by the gateway",
), "a member's metadata for the protocol of a classic group of protocol type \"consumer\" (JoinGroup)",
    "Written by the clients; the gateway reads only the topics (semantics.kafka_groups.subscription_topics: "
    "OffsetDelete keeps the offsets of topics a live member subscribes to); bytes that are not one give no topics.")
