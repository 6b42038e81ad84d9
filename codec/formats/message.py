"""The stored message: one CommitLog entry in RocketMQ's MessageDecoder layout (V1 magic, IPv4
hosts), the blank marker that ends a CommitLog file, the SEND_BATCH_MESSAGE body of inner
records, and the two message ids. The hot path (codec.remoting.message, codec.remoting.bodies)
packs these with precompiled `struct`; tests/formats hold the two to each other."""
from __future__ import annotations

import zlib

from construct import (Const, GreedyBytes, GreedyRange, Int8ub, Int16sb, Int32sb, Int32ub, Int64sb, PascalString,
                       Prefixed, Rebuild, Struct, Bytes)

from codec.formats.common import IPv4, PropertiesString, properties_text, register

MAGIC_V1 = 0xDAA320A7
BLANK_MAGIC = 0xCBD43194
INNER_BATCH_FLAG = 0x80


def _total_size(ctx) -> int:
    return (88 + len(ctx.body) + 1 + len(ctx.topic.encode()) + 2
            + len(properties_text(ctx.properties).encode()))


StoredMessage = register("StoredMessage", "CommitLog", Struct(
    "total_size" / Rebuild(Int32sb, _total_size) * "TOTALSIZE: bytes of the whole entry, this field included",
    "magic" / Const(MAGIC_V1, Int32ub) * "MAGICCODE: 0xDAA320A7 (MESSAGE_MAGIC_CODE V1, IPv4 hosts)",
    "body_crc" / Rebuild(Int32sb, lambda ctx: zlib.crc32(ctx.body) & 0x7FFFFFFF)
    * "BODYCRC: CRC-32 (zlib polynomial) of the body, masked to 31 bits",
    "queue_id" / Int32sb * "QUEUEID: queue (Kafka partition) of the entry's topic",
    "flag" / Int32sb * "FLAG: the producer's message flag",
    "queue_offset" / Int64sb * "QUEUEOFFSET: logical offset in the queue (of the first record of an inner batch)",
    "physical_offset" / Int64sb * "PHYSICALOFFSET: CommitLog offset of this entry (checked by recovery and verify)",
    "sys_flag" / Int32sb * "SYSFLAG: MessageSysFlag bits; 0x80 INNER_BATCH = the body is a Kafka RecordBatch",
    "born_timestamp" / Int64sb * "BORNTIMESTAMP: producer's time, epoch ms",
    "born_host" / IPv4 * "BORNHOST: producer's IPv4 address",
    "born_port" / Int32sb * "BORNHOST port",
    "store_timestamp" / Int64sb * "STORETIMESTAMP: append time, epoch ms",
    "store_host" / IPv4 * "STOREHOST: the gateway's IPv4 address",
    "store_port" / Int32sb * "STOREHOST port",
    "reconsume_times" / Int32sb * "RECONSUMETIMES: deliveries so far (retry topics)",
    "prepared_transaction_offset" / Int64sb * "PREPAREDTRANSACTIONOFFSET: CommitLog offset of the half message",
    "body" / Prefixed(Int32sb, GreedyBytes)
    * "BODYLENGTH i32, then BODY; an inner batch's body is one Kafka RecordBatch v2, stored verbatim",
    "topic" / PascalString(Int8ub, "utf8") * "TOPICLENGTH u8, then TOPIC (UTF-8, at most 127 bytes)",
    "properties" / PropertiesString(Int16sb)
    * "PROPERTIESLENGTH i16, then PROPERTIES: name\\x01value\\x02... (UTF-8); reserved names "
      "INNER_NUM (records of an inner batch), TAGS_CODES, INNER_KEYS keep the entry self-describing",
), "commitlog/<20-digit start offset>", "One CommitLog entry (RocketMQ MessageDecoder V1). All integers big-endian. "
   "This is also the byte form PULL_MESSAGE returns to RocketMQ clients.")

BlankMarker = register("BlankMarker", "CommitLog", Struct(
    "total_size" / Int32sb * "bytes from here to the end of the CommitLog file",
    "magic" / Const(BLANK_MAGIC, Int32ub) * "BLANK_MAGIC_CODE 0xCBD43194: the rest of this file is empty",
), "commitlog/<20-digit start offset>", "Ends a CommitLog file where the next entry does not fit (an entry never "
   "spans two files).")

EntryHead = register("EntryHead", "CommitLog", Struct(
    "total_size" / Int32sb * "TOTALSIZE of an entry, or the blank marker's size",
    "magic" / Int32ub * "MAGIC_V1 (an entry) or BLANK_MAGIC (end of file); anything else is damage",
), "commitlog/<20-digit start offset>", "The first 8 bytes at any entry position: what recovery, verify and the "
   "quarantine read first to tell an entry from a blank marker or damage.")

BatchItem = register("BatchItem", "Remoting bodies", Struct(
    "total_size" / Rebuild(Int32sb, lambda ctx: 22 + len(ctx.body) + len(ctx.properties.encode()))
    * "bytes of this item, this field included",
    "magic" / Int32sb * "0 (unused in a batch item)",
    "body_crc" / Int32sb * "0 (unused in a batch item)",
    "flag" / Int32sb * "the message flag",
    "body" / Prefixed(Int32sb, GreedyBytes) * "BODYLENGTH i32, then BODY",
    "properties" / PascalString(Int16sb, "utf8") * "PROPERTIESLENGTH i16, then the raw properties string",
), "SEND_BATCH_MESSAGE request body (items back to back)",
   "One message of a RocketMQ batch send (MessageDecoder.encodeMessages); the gateway stores each as its own entry.")

MessageBatch = GreedyRange(BatchItem)

OffsetMsgId = register("OffsetMsgId", "Ids", Struct(
    "store_host" / IPv4 * "the storing gateway's IPv4",
    "store_port" / Int32sb * "its port",
    "physical_offset" / Int64sb * "CommitLog offset of the entry",
), "offsetMsgId (32 upper-case hex digits)", "The id that locates an entry: the store host and CommitLog offset.")

UniqKey = register("UniqKey", "Ids", Struct(
    "ip" / Bytes(4) * "producer's IPv4",
    "pid" / Int16sb * "producer's process id (low 16 bits)",
    "salt" / Int32sb * "class-loader hash",
    "ms_in_month" / Int32sb * "ms since the start of the month",
    "counter" / Int16sb * "per-producer counter",
), "UNIQ_KEY property (32 upper-case hex digits)", "MessageClientIDSetter's client message id.")
