"""`rocketgate store dump`: the entries of a CommitLog range or of one queue, like kafka-dump-log:
each entry's fields under the names of docs/formats.md (parsed with the construct definition),
`print_data` adds bodies and properties, `deep` the records of inner batches (Kafka RecordBatches
stored verbatim)."""
from __future__ import annotations

import base64

from construct import ConstructError, GreedyRange

from codec.formats.kafka import Record, RecordBatch
from codec.formats.message import INNER_BATCH_FLAG, StoredMessage
from codec.kafka.records import decompress
from store.tool.files import CommitLogFiles, consume_queues

RECORDS = GreedyRange(Record)
_HEADER_FIELDS = ("total_size", "queue_id", "queue_offset", "physical_offset", "sys_flag", "born_timestamp",
                  "born_host", "born_port", "store_timestamp", "store_host", "store_port", "reconsume_times",
                  "flag", "body_crc", "prepared_transaction_offset")


def _blob(raw):
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(raw).decode()


def describe(raw: bytes, print_data: bool, deep: bool) -> dict:
    """One entry's fields, from the construct definition of the stored message."""
    p = StoredMessage.parse(raw)
    out = {"position": p.physical_offset, "topic": p.topic}
    out.update({k: p[k] for k in _HEADER_FIELDS})
    out["body_length"] = len(p.body)
    out["inner_batch"] = bool(p.sys_flag & INNER_BATCH_FLAG)
    if print_data:
        out["properties"] = dict(p.properties)
        out["body"] = _blob(p.body)
    if deep and out["inner_batch"]:
        out["records"] = records(p.body, p.queue_offset, print_data)
    return out


def records(body: bytes, base_offset: int, print_data: bool) -> list[dict] | dict:
    try:
        batch = RecordBatch.parse(body)
        h = batch.header
        recs = RECORDS.parse(decompress(h.attributes & 0x7, batch.records))
    except (ConstructError, ValueError) as exc:
        return {"error": f"not a readable RecordBatch: {exc}"}
    out = []
    for r in recs:
        item = {"offset": base_offset + r.offset_delta, "timestamp": h.base_timestamp + r.timestamp_delta,
                "key_length": -1 if r.key is None else len(r.key),
                "value_length": -1 if r.value is None else len(r.value),
                "headers": len(r.headers)}
        if print_data:
            item.update(key=_blob(r.key), value=_blob(r.value),
                        headers=[{"key": _blob(x.key), "value": _blob(x.value)} for x in r.headers])
        out.append(item)
    return out


def commitlog_range(data_dir: str, start: int | None, end: int | None, print_data: bool, deep: bool,
                    progress=None, commitlog_file_size: int = 1 << 30):
    """Dicts of the entries (and damage) from `start` to `end`."""
    cl = CommitLogFiles(data_dir, commitlog_file_size)
    for phys, kind, value in cl.walk(start, end, progress):
        if kind == "entry":
            yield describe(value.raw, print_data, deep)
        elif kind == "blank":
            yield {"position": phys, "blank": value}
        else:
            yield {"position": phys, "damage": value}


def queue(data_dir: str, topic: str, queue_id: int, offset: int | None, count: int | None, print_data: bool,
          deep: bool, commitlog_file_size: int = 1 << 30):
    """Dicts of a queue's units from `offset` (its first by default) with the entries they point at."""
    cl = CommitLogFiles(data_dir, commitlog_file_size)
    cq = consume_queues(data_dir).get((topic, queue_id))
    if cq is None:
        raise LookupError(f"no ConsumeQueue {topic}/{queue_id} in {data_dir}")
    last = None
    shown = 0
    for n, phys, size, code in cq.units(offset or 0):
        if count is not None and shown >= count:
            break
        shown += 1
        item = {"queue_offset": n, "unit": {"physical_offset": phys, "size": size, "tags_code": code}}
        if phys != last:
            msg, why = cl.entry(phys, size)
            item.update(describe(msg.raw, print_data, deep) if msg is not None else {"damage": why})
        else:
            item["same_entry"] = True  # another record of the inner batch above
        last = phys
        yield item
