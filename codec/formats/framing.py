"""Transport framing around the message layouts: the Kafka size prefix, the gRPC message prefix,
the HTTP/2 frame header the gateway packs itself (HEADERS of cached blocks; `h2` does the rest),
and the xerial block framing of snappy-compressed Kafka batches (Java and kafka-python clients).
Hot paths: codec.kafka.connection and gateway.connections, codec.grpc, gateway.grpc.http2,
codec.kafka.records."""
from __future__ import annotations

from construct import Const, GreedyBytes, GreedyRange, Int8ub, Int24ub, Int32sb, Int32ub, Prefixed, Struct

from codec.formats.common import register

KafkaFrame = register("KafkaFrame", "Framing", Struct(
    "payload" / Prefixed(Int32sb, GreedyBytes) * "i32 size, then a request (header + body) or a response",
), "the Kafka TCP stream (port 9092)", "Every Kafka request and response; the size excludes itself.")

GrpcMessage = register("GrpcMessage", "Framing", Struct(
    "compressed" / Int8ub * "1 when the message is compressed (never offered by the gateway: refused)",
    "payload" / Prefixed(Int32ub, GreedyBytes) * "u32 length, then the serialized protobuf",
), "the DATA of a gRPC stream (RocketMQ 5 gRPC port)", "One gRPC message (5-byte prefix).")

Http2FrameHeader = register("Http2FrameHeader", "Framing", Struct(
    "length" / Int24ub * "payload length",
    "type" / Int8ub * "frame type (0x1 HEADERS)",
    "flags" / Int8ub * "0x4 END_HEADERS, 0x1 END_STREAM",
    "stream_id" / Int32ub * "reserved bit + 31-bit stream id",
), "the HTTP/2 connection of the gRPC port", "RFC 9113 §4.1 frame header (9 bytes), then the payload.")

XerialSnappy = register("XerialSnappy", "Framing", Struct(
    "magic" / Const(b"\x82SNAPPY\x00") * "xerial snappy-java stream magic",
    "version" / Int32sb * "framing version (1)",
    "compatible_version" / Int32sb * "oldest compatible version (1)",
    "blocks" / GreedyRange(Prefixed(Int32sb, GreedyBytes)) * "each: i32 length, then one raw snappy block",
), "the records section of a snappy RecordBatch from Java clients",
    "Block framing of snappy-java; librdkafka sends raw snappy without it.")
