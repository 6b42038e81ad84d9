"""Kafka request dispatch and the data-path APIs: ApiVersions, Metadata, Produce, Fetch, ListOffsets.

Produce stores each partition's RecordBatch verbatim as one inner-batch CommitLog entry (one
ConsumeQueue unit per record, so Kafka offsets are ConsumeQueue offsets); Fetch serves those
entries back with BaseOffset patched and encodes native RocketMQ messages as magic-2 batches.
"""
from __future__ import annotations

import itertools
import operator
import struct
import time

import trio

import store
from codec.kafka import apis, protocol, records
from codec.kafka.schema import DecodeError, Spliced
from gateway.kafka import errors, topics
from gateway.sendfile import FileRange, close_spliced
from semantics import flow_control, routing, views
from semantics import transactions
from semantics.producer_state import DUPLICATE, FENCED, OUT_OF_ORDER, ProducerState, TransactionalProducers

NODE_ID = 0
CLUSTER_ID = "rocketgate-cluster"
INNER_BATCH = store.message.INNER_BATCH_FLAG
ROUTING_HEADERS = (routing.PROPERTY_DELAY, routing.PROPERTY_START_DELIVER_TIME)
RESERVED_PROPS = {store.message.PROP_INNER_NUM, store.message.PROP_TAGS_CODES, store.message.PROP_INNER_KEYS}

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_QOFF_AT, _SYSFLAG_AT, _BODYLEN_AT, _BODY_AT = 20, 36, 84, 88
_COUNT_AT = 57  # recordCount inside a RecordBatch
_STORE_TS_AT = store.message.STORE_TS_AT


class KafkaState:
    """Kafka-side shared state of one gateway process (in `app.state["kafka"]`)."""

    def __init__(self, app) -> None:
        from semantics.kafka_groups import Coordinator

        self.coordinator = Coordinator()
        self.producers = ProducerState(app.store)
        self.txns = TransactionalProducers(app, self.producers)
        transactions.register_checker(app, "kafka", self.txns.check)


def kafka_state(app) -> KafkaState:
    st = app.state.get("kafka")
    if st is None:
        st = app.state["kafka"] = KafkaState(app)
    return st


HANDLERS: dict = {}


def handler(api: apis.Api):
    def register(fn):
        HANDLERS[api.key] = fn
        return fn
    return register


async def handle(conn, header, payload) -> bytes | None:
    """The response frame for one request, or None when nothing is sent back."""
    key, version = header.api_key, header.api_version
    if key == apis.API_VERSIONS.key:
        return api_versions_frame(header)
    fn = HANDLERS.get(key)
    if fn is None:
        return None
    api = apis.BY_KEY[key]
    if not api.min_version <= version <= api.max_version:
        clamped = min(max(version, api.min_version), api.max_version)
        return protocol.response_frame(key, clamped, header.correlation_id,
                                       {"error_code": errors.UNSUPPORTED_VERSION})
    req = protocol.decode_request(header, payload)
    body = await fn(conn, version, req)
    if body is None:
        return None
    return protocol.response_frame(key, version, header.correlation_id, body)


# ---------------------------------------------------------------- ApiVersions

def api_versions_frame(header) -> bytes:
    """Our version table; an unknown ApiVersions version gets the v0 answer with error 35 (KIP-511)."""
    table = [{"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version} for a in apis.ALL]
    table.sort(key=lambda e: e["api_key"])
    version = header.api_version
    if not protocol.supported(apis.API_VERSIONS.key, version):
        return protocol.response_frame(apis.API_VERSIONS.key, 0, header.correlation_id,
                                       {"error_code": errors.UNSUPPORTED_VERSION, "api_keys": table})
    return protocol.response_frame(apis.API_VERSIONS.key, version, header.correlation_id,
                                   {"error_code": errors.NONE, "api_keys": table})


# ---------------------------------------------------------------- Metadata

def broker_list(conn) -> list[dict]:
    return [{"node_id": NODE_ID, "broker_id": NODE_ID, "host": conn.app.config.advertised,
             "port": conn.local_port, "rack": None}]


def topic_metadata(app, name: str, cfg, error: int) -> dict:
    if cfg is None:
        return {"error_code": error, "name": name, "partitions": []}
    return {"error_code": errors.NONE, "name": name, "is_internal": False, "partitions": [
        {"error_code": errors.NONE, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": -1,
         "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
        for p in range(topics.partition_count(cfg))]}


@handler(apis.METADATA)
async def metadata(conn, version, req):
    app = conn.app
    wanted = req["topics"]
    out = []
    if wanted is None or (version == 0 and not wanted):
        for name in sorted(app.store.topics.names()):
            cfg = app.store.topics.get(name)
            if cfg is not None:
                out.append(topic_metadata(app, name, cfg, errors.NONE))
    else:
        auto = req.get("allow_auto_topic_creation", True)
        for t in wanted:
            name = t["name"]
            cfg, err = topics.lookup(app, name, auto)
            out.append(topic_metadata(app, name, cfg, err))
    return {"brokers": broker_list(conn), "cluster_id": CLUSTER_ID, "controller_id": NODE_ID, "topics": out}


# ---------------------------------------------------------------- Produce

# Header keys as they appear on the wire (zigzag varint length + name): a batch whose first record
# has no key and no headers is scanned record by record only if one of these occurs in it.
INDEXED_HEADER_MARKS = tuple(records.header_key_bytes(name) for name in ("TAGS", "KEYS", *ROUTING_HEADERS))


def index_info(batch: records.Batch):
    """(tags_codes, keys, routing properties) for the store. Every record is decoded when the first
    record has a key or headers, or when a TAGS or KEYS header key occurs anywhere in the records
    or a DELAY or __STARTDELIVERTIME header key anywhere (C-speed substring searches), so the common
    keyless, headerless batch costs no per-record Python work. (A record key on a later record of a
    batch whose first record has no key or header, and that has none of those header keys, is not
    indexed; the key itself is stored.) A batch with routing properties is split by
    `split_by_routing` into runs that share them."""
    if batch.compression == records.NONE:
        raw, start = batch.data, records.HEADER_SIZE
        payload = memoryview(raw)[start:]
    else:
        payload = raw = batch.records_bytes()
        start = 0
    first = records.decode_records(payload, 1)[0]
    if first.key is None and not first.headers:
        if not any(raw.find(mark, start) >= 0 for mark in INDEXED_HEADER_MARKS):
            return None, None, None
    routing = {}
    codes, keys = [], []
    any_tag = False
    for key, headers in records.scan_keys_headers(payload, batch.record_count):
        code = tag_code(headers)
        any_tag = any_tag or code is not None
        codes.append(code or 0)
        for hk, hv in headers:
            if hk in ROUTING_HEADERS and hv and not routing.get(hk):
                routing[hk] = hv.decode("utf-8", "replace")
            elif hk == "KEYS" and hv:
                keys.extend(k for k in hv.decode("utf-8", "replace").split(" ") if k)
        if key:
            try:
                text = key.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if text and " " not in text:
                keys.append(text)
    return (codes if any_tag else None), (keys or None), routing


def tag_code(headers) -> int | None:
    """The tag hashcode of a record: its first non-empty TAGS header (None without one)."""
    for hk, hv in headers:
        if hk == "TAGS" and hv:
            return store.message.tag_hash(hv.decode("utf-8", "replace"))
    return None


def _partition_error(index: int, code: int, message: str | None = None) -> dict:
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "error_message": message}


def produce_partition(app, st: KafkaState, topic: str, cfg, index: int, data) -> tuple[dict, int]:
    """Validate and append one partition's batches; (partition response, CommitLog end offset)."""
    try:
        batches = records.parse_batches(data or b"")
    except DecodeError as exc:
        return _partition_error(index, errors.CORRUPT_MESSAGE, str(exc)), 0
    if not batches:
        return _partition_error(index, errors.CORRUPT_MESSAGE, "no record batch"), 0
    limit = topics.max_message_bytes(app, cfg)
    for b in batches:
        if len(b.data) > limit:
            return _partition_error(index, errors.MESSAGE_TOO_LARGE), 0
        if b.record_count < 1 or b.last_offset_delta != b.record_count - 1:
            return _partition_error(index, errors.INVALID_RECORD, "bad record count"), 0
        if not b.crc_ok():
            return _partition_error(index, errors.CORRUPT_MESSAGE, "CRC mismatch"), 0
    append_time = topics.log_append_time(cfg)
    base = None
    end = 0
    now = int(time.time() * 1000)
    for b in batches:
        idempotent = b.producer_id >= 0 and b.base_sequence >= 0
        if idempotent:
            verdict, dup_offset = st.producers.check(b.producer_id, b.producer_epoch, topic, index,
                                                     b.base_sequence, b.record_count)
            if verdict == DUPLICATE:
                base = dup_offset if base is None else base
                continue
            if verdict == OUT_OF_ORDER:
                return _partition_error(index, errors.OUT_OF_ORDER_SEQUENCE_NUMBER), end
            if verdict == FENCED:
                return _partition_error(index, errors.INVALID_PRODUCER_EPOCH), end
        try:
            codes, keys, props = index_info(b)
            pieces = split_by_routing(b) if props else None
        except DecodeError as exc:
            return _partition_error(index, errors.CORRUPT_MESSAGE, str(exc)), end
        txn = None
        extra = {}
        if b.attributes & records.TRANSACTIONAL:
            code, txn = st.txns.for_batch(b.producer_id, b.producer_epoch, now)
            if txn is None:
                return _partition_error(index, code), end
            extra = {routing.PROPERTY_TRANSACTION: "true", routing.PROPERTY_PRODUCER_GROUP: txn.txn_id,
                     transactions.PROPERTY_IMMUNITY: str(-(-txn.timeout_ms // 1000))}
        first = None
        for piece in pieces or [b]:
            if pieces:
                codes, keys, props = index_info(piece)
            res = _append_batch(app, topic, index, piece, codes, keys, dict(props or {}, **extra),
                                now, append_time)
            if res is None:
                return _partition_error(index, errors.MESSAGE_TOO_LARGE), end
            if txn is not None:
                txn.halves.append(res.queue_offset)
            first = first or res
            end = max(end, res.end_offset)
        if idempotent:
            st.producers.record(b.producer_id, b.producer_epoch, topic, index, b.base_sequence,
                                b.record_count, first.queue_offset)
        if base is None:
            base = first.queue_offset
    return {"index": index, "error_code": errors.NONE, "base_offset": base,
            "log_append_time_ms": now if append_time else -1,
            "log_start_offset": app.store.min_offset(topic, index)}, end


def _append_batch(app, topic: str, index: int, b: records.Batch, codes, keys, props: dict, now: int,
                  append_time: bool):
    """Store one RecordBatch as an inner-batch entry (routed first when it carries routing or
    transaction properties); the AppendResult, None when it is too large."""
    body = records.with_log_append_time(b.data, now) if append_time else b.data
    msg = store.Message(topic, index, body, sys_flag=INNER_BATCH, batch_count=b.record_count,
                        tags_codes=codes, keys=keys, properties=props,
                        born_timestamp=now if append_time else b.max_timestamp)
    if props:  # a delayed batch goes to the schedule topic first, a transactional one to the half topic
        msg = routing.route(msg, now, getattr(app, "delay_levels", routing.DEFAULT_LEVELS))
    try:
        return app.store.append(msg)
    except store.MessageTooLarge:
        return None


def split_by_routing(b: records.Batch) -> list[records.Batch] | None:
    """A batch whose records do not all carry the same DELAY / __STARTDELIVERTIME headers, cut into
    runs of records that do (each re-encoded with its own sequence range), so that an immediate
    record is not delayed with its neighbours; None when one entry fits all (the usual case)."""
    recs = records.decode_records(b.records_bytes(), b.record_count)
    runs = [list(g) for _k, g in itertools.groupby(
        enumerate(recs), key=lambda ir: [(k, v) for k, v in ir[1].headers if k in ROUTING_HEADERS and v])]
    if len(runs) == 1:
        return None
    out = []
    for run in runs:
        rows = [(b.base_timestamp + r.timestamp_delta, r.key, r.value, r.headers) for _i, r in run]
        seq = (b.base_sequence + run[0][0]) % (1 << 31) if b.base_sequence >= 0 else -1
        data = records.build_batch(rows, base_timestamp=rows[0][0], compression=b.compression,
                                   producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=seq,
                                   transactional=bool(b.attributes & records.TRANSACTIONAL))
        out.extend(records.parse_batches(data))
    return out


@handler(apis.PRODUCE)
async def produce(conn, version, req):
    app = conn.app
    st = kafka_state(app)
    acks = req["acks"]
    responses = []
    end = 0
    for t in req["topic_data"]:
        name = t["name"]
        parts = []
        if version < 3 or acks not in (-1, 0, 1):
            code = errors.UNSUPPORTED_VERSION if version < 3 else errors.INVALID_REQUIRED_ACKS
            parts = [_partition_error(p["index"], code) for p in t["partition_data"]]
        else:
            cfg, err = topics.lookup(app, name, True)
            for p in t["partition_data"]:
                index = p["index"]
                if cfg is not None and views.definition(cfg) is not None:
                    parts.append(_partition_error(index, errors.INVALID_REQUEST,
                                                  f"topic {name!r} is a filtered view (read-only)"))
                    continue
                if not topics.has_partition(cfg, index):
                    parts.append(_partition_error(index, err or errors.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                try:
                    resp, e = produce_partition(app, st, name, cfg, index, p["records"])
                except store.StoreError:
                    resp, e = _partition_error(index, errors.UNKNOWN_SERVER_ERROR), 0
                parts.append(resp)
                end = max(end, e)
        responses.append({"name": name, "partition_responses": parts})
    if acks == 0:
        return None
    if end:
        await app.durable(end)
    return {"responses": responses, "throttle_time_ms": flow_control.throttle_ms(app)}


# ---------------------------------------------------------------- Fetch

UNITS_PER_LOOKUP = 4096  # ConsumeQueue units fetched per store call while filling a Fetch
PEEK_UNITS = 64  # the first look: when all of them share one entry, its end is found by binary search
_PHYS = operator.itemgetter(0)


def fetch_entries(s, topic: str, partition: int, offset: int, high: int, budget: int) -> list[tuple[int, int, int]]:
    """(first offset, phys, size) of the entries from `offset` on, until their stored sizes reach
    `budget` (the entry crossing it included: a stored entry is larger than the batch it serves).
    The units of one inner batch share their phys: a large batch is skipped by binary search,
    smaller ones are grouped with the per-unit work in C."""
    out = []
    total = 0
    lookup = PEEK_UNITS
    while offset < high and total < budget:
        units = s.units(topic, partition, offset, min(high - offset, lookup))
        if not units:
            break
        phys, size = units[0][0], units[0][1]
        if len(units) == PEEK_UNITS and units[-1][0] == phys:  # one large batch
            if not (out and out[-1][1] == phys):
                out.append((offset, phys, size))
                total += size
            offset = s.entry_end(topic, partition, offset + PEEK_UNITS - 1, phys, high)
            continue
        lookup = UNITS_PER_LOOKUP
        start = offset
        for phys, run in itertools.groupby(units, _PHYS):
            n = len(list(run))
            if not (out and out[-1][1] == phys):  # else the batch goes on from the previous lookup
                if total >= budget:
                    break
                size = units[offset - start][1]
                out.append((offset, phys, size))
                total += size
            offset += n
    return out


SPLICE_MIN_BYTES = 64 << 10  # a stored batch at least this large is sent from its file (sendfile)
_SPLICE_HEAD = _BODY_AT + _COUNT_AT + 4  # an entry's bytes up to its batch's record count


def read_batches(app, topic: str, partition: int, offset: int, high: int, max_bytes: int, at_least_one: bool,
                 view=None):
    """Record batches from `offset` up to about `max_bytes` (one batch even if larger when asked):
    a bytearray, or a `Spliced` whose parts are bytearrays and `FileRange`s.

    A large inner-batch entry is not read at all: its RecordBatch is sent from the CommitLog file
    after the 8 bytes of its BaseOffset, which are patched in memory (the batch CRC does not cover
    them). Each contiguous run of smaller entries is read with one call and copied once into the
    answer, BaseOffsets patched there. `view` is the tag filter of a filtered view topic: its
    inner-batch entries are cut to the matching records, renumbered with the view's offsets."""
    out = bytearray()
    parts = []  # finished pieces before `out` when anything is spliced
    total = 0  # bytes in parts and out
    s = app.store
    entries = fetch_entries(s, topic, partition, offset, high, max(max_bytes, 1))
    i = 0
    while i < len(entries):
        first, phys, size = entries[i]
        if size >= SPLICE_MIN_BYTES and view is None and first >= offset:
            head = s.read_entry(phys, _SPLICE_HEAD)
            if len(head) == _SPLICE_HEAD and _I32.unpack_from(head, _SYSFLAG_AT)[0] & INNER_BATCH:
                qoff = _I64.unpack_from(head, _QOFF_AT)[0]
                blen = _I32.unpack_from(head, _BODYLEN_AT)[0]
                if total + blen > max_bytes and (total or not at_least_one):
                    break
                rng = s.open_entry_range(phys + _BODY_AT + 8, blen - 8)
                if rng is not None:
                    out += _I64.pack(qoff)
                    parts += (out, FileRange(rng[0], rng[1], blen - 8))
                    out = bytearray()
                    total += blen
                    offset = qoff + _I32.unpack_from(head, _BODY_AT + _COUNT_AT)[0]
                    i += 1
                    continue
        j = i + 1  # entries[i:j] is one contiguous run of the CommitLog, copied
        while (j < len(entries) and entries[j][1] == entries[j - 1][1] + entries[j - 1][2]
               and entries[j][2] < SPLICE_MIN_BYTES):
            j += 1
        run_start = entries[i][1]
        run_len = entries[j - 1][1] + entries[j - 1][2] - run_start
        run = s.read_entry(run_start, run_len)
        if len(run) < run_len:
            break
        mv = memoryview(run)
        full = False
        for first, phys, size in entries[i:j]:
            if first < offset:
                continue  # already served by the batch before (a view cut)
            if size < _BODY_AT:
                offset = first + 1  # a hole in the ConsumeQueue: nothing to serve
                continue
            at = phys - run_start
            inner = _I32.unpack_from(run, at + _SYSFLAG_AT)[0] & INNER_BATCH
            if inner and view is None:
                qoff = _I64.unpack_from(run, at + _QOFF_AT)[0]
                blen = _I32.unpack_from(run, at + _BODYLEN_AT)[0]
                nxt = qoff + _I32.unpack_from(run, at + _BODY_AT + _COUNT_AT)[0]
                if total + blen > max_bytes and (total or not at_least_one):
                    full = True
                    break
                pos = len(out)
                out += mv[at + _BODY_AT:at + _BODY_AT + blen]
                _I64.pack_into(out, pos, qoff)
                total += blen
            else:
                raw = bytes(mv[at:at + size])
                if inner:
                    batch, nxt = view_batch(s, topic, partition, first, phys, raw, view)
                else:
                    batch, nxt = native_batch(store.message.decode(raw), first), first + 1
                if total + len(batch) > max_bytes and (total or not at_least_one):
                    full = True
                    break
                out += batch
                total += len(batch)
            offset = max(nxt, first + 1)
        mv.release()
        if full:
            break
        i = j
    if not parts:
        return out
    parts.append(out)
    return Spliced(parts, total)


def release(responses) -> None:
    """Close the files held by Spliced records of Fetch responses that will not be sent."""
    for t in responses:
        for p in t["partitions"]:
            if type(p.get("records")) is Spliced:
                close_spliced(p["records"])


def view_batch(s, view_topic: str, partition: int, offset: int, phys: int, raw: bytes, filt) -> tuple[bytes, int]:
    """(batch, next view offset) for a view unit that points at a Kafka record batch entry.

    The view holds one unit per matching record of the batch, contiguous; `offset` may be any of
    them. When every record matches the batch is served verbatim; otherwise the matching records
    from `offset` on are re-encoded (uncompressed) with the view's offsets (per-record work, views
    only)."""
    blen = _I32.unpack_from(raw, _BODYLEN_AT)[0]
    body = raw[_BODY_AT:_BODY_AT + blen]
    b = records.parse_batches(body)[0]
    run = s.units(view_topic, partition, offset, b.record_count)
    n = 1
    while n < len(run) and run[n][0] == phys:
        n += 1
    if n == b.record_count:
        return records.with_base_offset(body, offset), offset + n
    recs = records.decode_records(b.records_bytes(), b.record_count)
    matching = [r for r in recs if filt.matches_code(tag_code(r.headers) or 0)][-n:]
    log_append = bool(b.attributes & records.TIMESTAMP_LOG_APPEND)
    rows = [(b.max_timestamp if log_append else b.base_timestamp + r.timestamp_delta, r.key, r.value, r.headers)
            for r in matching]
    if not rows:  # the entry changed under the view: nothing to serve, skip its units
        return b"", offset + n
    return records.build_batch(rows, base_offset=offset, base_timestamp=rows[0][0],
                               log_append_time=log_append,
                               max_timestamp=max(r[0] for r in rows)), offset + n


def native_batch(msg, offset: int) -> bytes:
    """A RocketMQ message as a one-record batch: properties become headers, KEYS the key."""
    props = {k: v for k, v in msg.properties.items() if k not in RESERVED_PROPS}
    keys = props.get("KEYS")
    headers = [(k, v.encode("utf-8")) for k, v in props.items()]
    return records.build_batch([(msg.born_timestamp, keys.encode("utf-8") if keys else None, msg.body, headers)],
                               base_offset=offset, base_timestamp=msg.born_timestamp)


@handler(apis.FETCH)
async def fetch(conn, version, req):
    app = conn.app
    deadline = trio.current_time() + max(req["max_wait_ms"], 0) / 1000
    min_bytes = req["min_bytes"]
    max_bytes = req.get("max_bytes", 0x7FFFFFFF)
    keys = [(t["topic"], p["partition"]) for t in req["topics"] for p in t["partitions"]]
    while True:
        responses, total, failed = _fetch_once(app, req, max_bytes)
        remaining = deadline - trio.current_time()
        if total >= min_bytes or failed or remaining <= 0 or not keys:
            return {"responses": responses, "session_id": 0}
        release(responses)
        await app.arrivals.wait_any(keys, remaining)


def _fetch_once(app, req, max_bytes: int):
    responses = []
    total = 0
    failed = False
    for t in req["topics"]:
        name = t["topic"]
        cfg = topics.existing(app, name)
        parts = []
        for p in t["partitions"]:
            index = p["partition"]
            if not topics.has_partition(cfg, index):
                parts.append({"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                              "high_watermark": -1, "records": b""})
                failed = True
                continue
            low = app.store.min_offset(name, index)
            high = app.store.max_offset(name, index)
            offset = p["fetch_offset"]
            entry = {"partition_index": index, "high_watermark": high, "last_stable_offset": high,
                     "log_start_offset": low, "records": b""}
            if offset < low or offset > high:
                entry["error_code"] = errors.OFFSET_OUT_OF_RANGE
                failed = True
            elif offset < high and total < max_bytes:
                limit = min(p["partition_max_bytes"], max_bytes - total)
                entry["records"] = read_batches(app, name, index, offset, high, limit, at_least_one=total == 0,
                                                view=views.view_filter(cfg))
                total += len(entry["records"])
            parts.append(entry)
        responses.append({"topic": name, "partitions": parts})
    return responses, total, failed


# ---------------------------------------------------------------- ListOffsets

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
TIME_SCAN_LIMIT = 10_000  # entries scanned forward for a CreateTime match


def batch_at(app, topic: str, partition: int, offset: int):
    """(first offset, stored entry) of the entry holding `offset`, or (None, None)."""
    units = app.store.units(topic, partition, offset, 1)
    if not units:
        return None, None
    msg = app.store.get(units[0][0])
    return (msg.queue_offset, msg) if msg is not None else (None, None)


def entry_records(msg) -> list[tuple[int, int]]:
    """(offset delta, timestamp) of each logical message in a stored entry."""
    if msg.sys_flag & INNER_BATCH:
        b = records.parse_batches(msg.body)[0]
        if b.attributes & records.TIMESTAMP_LOG_APPEND:
            return [(i, b.max_timestamp) for i in range(b.record_count)]
        return [(r.offset_delta, b.base_timestamp + r.timestamp_delta)
                for r in records.decode_records(b.records_bytes(), b.record_count)]
    return [(0, msg.born_timestamp)]


def offset_for_time(app, topic: str, partition: int, ts: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record with timestamp >= ts, or (-1, -1).

    The store finds the first entry stored at or after ts; record timestamps are not later than
    the store time, so no earlier entry can match and we scan forward from there."""
    high = app.store.max_offset(topic, partition)
    offset = max(app.store.offset_for_timestamp(topic, partition, ts), app.store.min_offset(topic, partition))
    for _ in range(TIME_SCAN_LIMIT):
        if offset >= high:
            break
        first, msg = batch_at(app, topic, partition, offset)
        if msg is None:
            break
        for delta, rts in entry_records(msg):
            if first + delta >= offset and rts >= ts:
                return first + delta, rts
        offset = first + max(msg.batch_count, 1)
    return -1, -1


def list_offset(app, topic: str, partition: int, ts: int) -> tuple[int, int]:
    if ts == LATEST:
        return app.store.max_offset(topic, partition), -1
    if ts == EARLIEST:
        return app.store.min_offset(topic, partition), -1
    if ts == MAX_TIMESTAMP:
        high = app.store.max_offset(topic, partition)
        if high <= app.store.min_offset(topic, partition):
            return -1, -1
        first, msg = batch_at(app, topic, partition, high - 1)
        best = max(entry_records(msg), key=lambda r: r[1])
        return first + best[0], best[1]
    return offset_for_time(app, topic, partition, ts)


@handler(apis.LIST_OFFSETS)
async def list_offsets(conn, version, req):
    app = conn.app
    out = []
    for t in req["topics"]:
        name = t["name"]
        cfg = topics.existing(app, name)
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if not topics.has_partition(cfg, index):
                parts.append({"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION})
                continue
            offset, ts = list_offset(app, name, index, p["timestamp"])
            parts.append({"partition_index": index, "error_code": errors.NONE, "offset": offset,
                          "timestamp": ts, "leader_epoch": -1})
        out.append({"name": name, "partitions": parts})
    return {"topics": out}


# The other APIs register themselves on import.
from gateway.kafka import admin as _admin  # noqa: E402,F401
from gateway.kafka import groups as _groups  # noqa: E402,F401
from gateway.kafka import txn as _txn  # noqa: E402,F401
