"""Messages by key (the IndexFile) and by offsetMsgId, decoded for people: properties as a dict, the
body as text when it is UTF-8, else hex. A stored Kafka batch shows as its records, as the
remoting QUERY_MESSAGE / VIEW_MESSAGE_BY_ID answers do (gateway.remoting.query)."""
from __future__ import annotations

import interop.to_rocketmq as inner_batch
from codec.remoting.message import decode, parse_msg_id
from codec.remoting.tags import parse_tags
from interop.headers import RESERVED_PROPS

MAX_BODY_SHOWN = 4096  # bytes of a body a lookup returns


def _records(m) -> list:
    """A stored entry as the messages a RocketMQ client would see."""
    if not m.sys_flag & inner_batch.INNER_BATCH_FLAG:
        return [m]
    return [decode(raw) for raw in inner_batch.expand(m, m.queue_offset, 0, parse_tags(None))]


def describe(m, decode=None) -> dict:
    """`decode(body) -> (encoding, text) | None`: a schema-aware decoding tried first (gateway.ops.decode)."""
    decoded = decode(bytes(m.body)) if decode is not None else None
    body = bytes(m.body[:MAX_BODY_SHOWN])
    if decoded is not None:
        encoding, text = decoded
        text = text[:4 * MAX_BODY_SHOWN]
    else:
        try:
            text, encoding = body.decode("utf-8"), "text"
        except UnicodeDecodeError:
            text, encoding = body.hex(), "hex"
    props = {k: v for k, v in m.properties.items() if k not in RESERVED_PROPS}
    return {"topic": m.topic, "queue": m.queue_id, "offset": m.queue_offset, "msg_id": m.msg_id,
            "uniq_key": m.properties.get("UNIQ_KEY", ""), "keys": props.get("KEYS", ""), "tags": props.get("TAGS", ""),
            "born_ms": m.born_timestamp, "stored_ms": m.store_timestamp, "reconsume_times": m.reconsume_times,
            "properties": props, "body_size": len(m.body), "body": text, "body_encoding": encoding}


def by_key(store, topic: str, key: str, max_num: int = 32, decode=None) -> list[dict]:
    out = []
    for m in store.query_by_key(topic, key, max_num):
        out += [describe(r, decode) for r in _records(m)
                if key in r.properties.get("KEYS", "").split(" ") or r.properties.get("UNIQ_KEY") == key]
    return out


def by_msg_id(store, msg_id: str, decode=None) -> dict | None:
    """The message an offsetMsgId names (a Kafka batch: its first record); ValueError for a malformed id."""
    _host, _port, offset = parse_msg_id(msg_id)
    m = store.get(offset)
    return describe(_records(m)[0], decode) if m is not None else None


def browse(store, topic: str, queue: int, offset: int, count: int = 20, decode=None) -> list[dict]:
    """Up to `count` messages of one queue from `offset` (a Kafka batch: its records)."""
    out = []
    for _qoff, m in store.read(topic, queue, offset, count).entries:
        out += [describe(r, decode) for r in _records(m)]
    return [r for r in out if r["offset"] >= offset][:count]


def search(store, topic: str, queues: list[int], since_ms: int | None, until_ms: int | None, tag: str = "",
           prop: tuple[str, str] | None = None, count: int = 20, scan: int = 10_000,
           decode=None) -> tuple[list[dict], int]:
    """Messages of `topic` stored in [since_ms, until_ms) whose tag is `tag` and whose property
    prop[0] is prop[1] (each filter only when given), from each queue's first message at or after
    `since_ms`; at most `count`, reading at most `scan` messages. Returns (rows, messages read)."""
    rows, read = [], 0
    for qid in queues:
        lo, hi = store.min_offset(topic, qid), store.max_offset(topic, qid)
        offset = max(lo, store.offset_for_timestamp(topic, qid, since_ms)) if since_ms is not None else lo
        while offset < hi and read < scan and len(rows) < count:
            res = store.read(topic, qid, offset, min(64, scan - read))
            if not res.entries:
                break
            for _qoff, m in res.entries:
                for r in _records(m):
                    read += 1
                    if r.queue_offset < offset or (until_ms is not None and r.store_timestamp >= until_ms):
                        continue
                    if since_ms is not None and r.store_timestamp < since_ms:
                        continue
                    if tag and r.properties.get("TAGS", "") != tag:
                        continue
                    if prop is not None and r.properties.get(prop[0]) != prop[1]:
                        continue
                    rows.append(describe(r, decode))
            if res.next_offset <= offset:
                break
            offset = res.next_offset
    return rows[:count], read
