"""Store files other than the CommitLog: the ConsumeQueue unit, the IndexFile header/slot/entry,
the derived directories' checkpoints, the topic journal's records and the JSON documents of
config/. The hot paths (store.consumequeue, store.indexfile, store.flush, store.topic_journal,
store.config) keep their own `struct`/text code; tests/formats hold them to these."""
from __future__ import annotations

import json
import zlib

from construct import (Adapter, Bytes, Check, Const, GreedyBytes, Int32sb, Int64sb, NullTerminated, StringEncoded,
                       Struct)

from codec.formats.common import CompactJson, DecimalText, DecimalTextUntil, JsonDocument, register

ConsumeQueueUnit = register("ConsumeQueueUnit", "ConsumeQueue", Struct(
    "physical_offset" / Int64sb * "CommitLog offset of the entry",
    "size" / Int32sb * "TOTALSIZE of the entry (every unit of an inner batch points at the whole entry)",
    "tags_code" / Int64sb * "hash of the TAGS (Java String.hashCode, sign-extended), 0 without tags",
), "consumequeue/<topic>/<queueId>/<20-digit byte position>",
   "Unit n of a queue is logical offset n; a file holds cq_units_per_file units (default 300 000). "
   "Derived data: rebuilt from the CommitLog.")

IndexHeader = register("IndexHeader", "IndexFile", Struct(
    "begin_timestamp" / Int64sb * "store time of the first entry, epoch ms",
    "end_timestamp" / Int64sb * "store time of the last entry",
    "begin_phys" / Int64sb * "CommitLog offset of the first entry",
    "end_phys" / Int64sb * "CommitLog offset of the last entry",
    "used_slots" / Int32sb * "hashSlotCount: slots in use",
    "index_count" / Int32sb * "indexCount: next entry number (entry 0 is never used)",
), "index/<yyyyMMddHHmmssSSS> at 0", "IndexFile header (40 bytes), then the slots, then the entries.")

IndexSlot = register("IndexSlot", "IndexFile", Struct(
    "newest" / Int32sb * "entry number of the newest entry of this slot's chain (0 = empty)",
), "index/<yyyyMMddHHmmssSSS> at 40 + 4 * (keyHash % slots)", "One hash slot (default 5 000 000 per file).")

IndexEntry = register("IndexEntry", "IndexFile", Struct(
    "key_hash" / Int32sb * "abs(String.hashCode of topic#key), 0 for Integer.MIN_VALUE",
    "physical_offset" / Int64sb * "CommitLog offset of the entry",
    "time_diff" / Int32sb * "seconds since the header's begin_timestamp",
    "prev_index" / Int32sb * "previous entry of the same slot (always smaller; 0 = end of chain)",
), "index/<yyyyMMddHHmmssSSS> at 40 + 4 * slots + 20 * n", "Entry n (default 20 000 000 per file).")

Checkpoint = register("Checkpoint", "Checkpoints", DecimalText,
                      "consumequeue/.checkpoint, index/.checkpoint",
                      "ASCII decimal: the CommitLog offset up to which the directory's files are complete and "
                      "on disk; recovery replays the CommitLog from there (no file: from its start).")


class _TopicRecord(Adapter):
    """`%08x %s\\n`: CRC-32 of the JSON in hex, a space, the JSON, a newline."""

    def _decode(self, obj, context, path):
        return json.loads(obj.payload)

    def _encode(self, obj, context, path):
        payload = json.dumps(obj, separators=(",", ":")).encode()
        return {"crc": b"%08x" % zlib.crc32(payload), "payload": payload}



TopicJournalRecord = register("TopicJournalRecord", "Config", _TopicRecord(Struct(
    "crc" / Bytes(8) * "CRC-32 (zlib) of the JSON payload, 8 lower-case hex digits",
    Const(b" ") * "separator",
    "payload" / GreedyBytes * 'the JSON {"v": version, "op": "put"|"del", "name": ..., "topic": {...}} '
                              "(a line of its own: the record ends with \\n)",
    Check(lambda ctx: int(ctx.crc, 16) == zlib.crc32(ctx.payload)) * "a record whose CRC fails ends the replay",
)), "config/topics.journal, config/topics.journal.<version> (one record a line, without the newline)",
    "The topic table's write-ahead journal; config/topics.json holds the whole table now and then.")

CONFIG_DOCUMENTS = {
    "topics.json": 'RocketMQ topicConfigTable: {"topicConfigTable": {name: {...}}, "dataVersion": {...}}',
    "quarantine.json": '{"entries": {"<CommitLog offset>": "why"}}: corrupt entries served to no client',
    "consumerOffset.json": "committed offsets of RocketMQ and Kafka groups",
    "delayOffset.json": "how far each delay level's schedule queue has been forwarded",
    "popState.json": 'the POP engine\'s snapshot and "logNext", the pop log position it covers',
    "logStartOffsets.json": "{topic: {queue id: first readable offset}} (DeleteRecords)",
    "leaderEpochs.json": "{topic: {queue id: [[epoch, start offset], ...]}} (replication)",
    "transactionCheck.json": "transaction check state",
    "kafkaProducerIds.json": '{"next": first producer id not handed out}',
    "shareGroupConfigs.json": "share groups and their configs",
    "messageRequestMode.json": "POP/PULL mode per group and topic",
}

ConfigDocument = register("ConfigDocument", "Config", JsonDocument, "config/*.json but store.json",
                          "A JSON document written atomically (temp file, fsync, rename) with indent 1. "
                          "Documents: " + "; ".join(f"{k}: {v}" for k, v in CONFIG_DOCUMENTS.items()) + ".")


class _JsonLine(Adapter):
    """json.dumps with its default separators (", ", ": "), then a newline."""

    def _decode(self, obj, context, path):
        return json.loads(obj)

    def _encode(self, obj, context, path):
        return json.dumps(obj).encode() + b"\n"


StoreSize = register("StoreSize", "Config", _JsonLine(GreedyBytes), "config/store.json",
                     '{"commitlog_file_size": N} and a newline, written atomically once, when a store is made '
                     "(store.segment_size): the CommitLog file size positions map to files by; another "
                     "--commitlog-file-size is refused at start.")

DataDirLockFile = register("DataDirLockFile", "Config", Struct(
    "pid" / DecimalTextUntil(b" ") * "the exclusive holder's PID in ASCII decimal, then a space",
    "what" / StringEncoded(NullTerminated(GreedyBytes, term=b"\n"), "utf8") * 'what it is ("gateway", ...), then \\n',
), "<data dir>/lock", "flock(2)ed by the process that writes the store (shared by read-only tools); its holder "
   "writes this so a refused process can name it (store.lock). Empty when no exclusive holder is left.")


PopLogOp = register("PopLogOp", "System topics", CompactJson,
                    "body of an RMQ_SYS_POP_LOG entry (queue 0), or of an RMQ_SYS_POP_JOURNAL_<topic> entry",
                    'One POP engine op as compact JSON: {"k": kind ("init", "pop", "ack", "nack", "drop", '
                    '"states" ...), "g": group, "t": topic, "q": queue id, ...}; a pop journal entry adds "cp", '
                    "the journal offset of the latest checkpoint. config/popState.json holds the snapshot and "
                    '"logNext", the log position it covers (semantics.pop_log, semantics.replication.pop_journal).')
