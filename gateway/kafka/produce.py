"""Produce: each partition's RecordBatch is validated, deduplicated (idempotent producers) and
stored verbatim as one inner-batch CommitLog entry (`interop.inner_batch`); a batch with DELAY /
__STARTDELIVERTIME headers is routed to the schedule topic, a transactional one to the half topic,
and the partition keeps their offsets as gaps, so base_offset + index is each record's own offset.
"""
from __future__ import annotations

import time

import trio

import gateway.kafka.errors as errors
import gateway.kafka.leaders as leaders
import gateway.kafka.quotas as quotas
import gateway.kafka.record_errors as record_errors
import gateway.kafka.timestamps as timestamps
import gateway.kafka.diskless as diskless
import gateway.kafka.topics as topics
import store
from codec.kafka import apis, records
from codec.kafka.schema import DecodeError
from gateway.kafka.metadata import KAFKA_INTERNAL, is_internal
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.state import KafkaState, kafka_state
from interop.inner_batch import EntryIndex, entry_message, index_info, split_by_routing, with_gaps
from interop.txn_visibility import VISIBLE
from semantics import routing, transactions, views
from semantics.diskless import is_diskless
from semantics.flow_control import ProduceFlow
from semantics.replication import NotLeader
from semantics.producer_state import DUPLICATE, FENCED, INVALID_TXN_STATE, OUT_OF_ORDER
from semantics.txn_layout import half_record

# Kafka's other internal topics (the gateway keeps their state elsewhere): Kafka answers a Produce to one
# that does not exist yet UNKNOWN_TOPIC_OR_PARTITION, so the gateway does not auto-create them either.


def _keyless_record_errors(batches, topic: str, index: int) -> list[dict]:
    """KIP-467 `record_errors` for the records without a key (Kafka refuses those on a compacted
    topic): one entry per such record, indexed within its batch; records that cannot be read count."""
    why = f"Compacted topic cannot accept message without key in topic partition {topic}-{index}"
    errors_ = []
    for batch in batches:
        try:
            keys = [key for key, _ in records.scan_keys_headers(batch.records_bytes(), batch.record_count)]
        except (DecodeError, ValueError):
            keys = [None]
        errors_ += [{"batch_index": i, "batch_index_error_message": why} for i, key in enumerate(keys) if key is None]
    return errors_


def _partition_error(index: int, code: int, message: str | None = None) -> dict:
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "error_message": message}


async def produce_partition(app, st: KafkaState, topic: str, cfg, index: int, data, append,
                            version: int = 3) -> tuple[dict, int]:
    """Validate and append one partition's batches (`append`: a `ProduceFlow` turn's); (partition
    response, CommitLog end offset)."""
    try:
        batches = records.parse_batches(data or b"")
    except DecodeError as exc:
        return _partition_error(index, errors.CORRUPT_MESSAGE, str(exc)), 0
    if not batches:
        return _partition_error(index, errors.CORRUPT_MESSAGE, "no record batch"), 0
    limit = topics.max_message_bytes(app, cfg)
    for b in batches:
        if b.size > limit:
            return _partition_error(index, errors.MESSAGE_TOO_LARGE), 0
        problem = b.problem()
        if problem is not None:
            kind, why = problem
            return _partition_error(index, errors.INVALID_RECORD if kind == "invalid" else errors.CORRUPT_MESSAGE,
                                    why), 0
    keyless = _keyless_record_errors(batches, topic, index) if topics.compacted(cfg) else []
    refused = keyless or record_errors.delay_record_errors(batches, int(time.time() * 1000), app.delay_levels)
    if not refused:
        rule = app.schema_validation.rule(cfg)  # schema validation (semantics.schema_validation)
        refused = await record_errors.schema_record_errors(app, rule, batches, topic) if rule is not None else None
    if refused:  # nothing of the partition is stored
        return record_errors.invalid_records(index, refused, errors.INVALID_RECORD,
                                             app.store.min_offset(topic, index)), 0
    append_time = topics.log_append_time(cfg)
    now = int(time.time() * 1000)
    for b in [] if append_time else batches:
        bad = timestamps.refused(cfg, b, now)
        if bad:
            return dict(_partition_error(index, timestamps.INVALID_TIMESTAMP, timestamps.BATCH_MESSAGE),
                        record_errors=bad, log_start_offset=app.store.min_offset(topic, index)), 0
    base = None
    end = 0
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
            entry = index_info(b)
            pieces = split_by_routing(b) if entry.routing else None
        except DecodeError as exc:
            return _partition_error(index, errors.CORRUPT_MESSAGE, str(exc)), end
        txn = None
        extra = {}
        if b.attributes & records.TRANSACTIONAL:
            # Produce v12+ adds the partition to the transaction (transactions v2, KIP-890)
            txns = st.cluster_txns or st.txns  # in a cluster: checked against etcd before the write turn
            code, txn = txns.for_batch(b.producer_id, b.producer_epoch, now, (topic, index), version >= 12)
            if txn is None:
                if code == INVALID_TXN_STATE and version >= 11:  # not added: the client aborts (Kafka 4.3)
                    code = errors.TRANSACTION_ABORTABLE
                return _partition_error(index, code), end
            extra = {routing.PROPERTY_TRANSACTION: "true", routing.PROPERTY_PRODUCER_GROUP: txn.txn_id,
                     transactions.PROPERTY_IMMUNITY: str(-(-txn.timeout_ms // 1000))}
        # Kafka's layout (one gateway; a cluster with --cluster-txn-layout kafka: gateway.cluster.txn_layout)
        layout = txn is not None and not entry.routing and (st.cluster_txns is None or st.cluster_txns.layout)
        try:
            if layout:
                msgs = _in_partition(app, topic, index, b, entry, txn, now, append_time, st.cluster_txns is None)
            else:
                msgs = _batch_messages(app, topic, index, b, entry, pieces, extra, now, append_time)
            results = await append(msgs)
        except store.StoreError as exc:
            code = errors.for_store_error(exc)
            return _partition_error(index, code, None if code == errors.MESSAGE_TOO_LARGE else str(exc)), end
        except DecodeError as exc:
            return _partition_error(index, errors.CORRUPT_MESSAGE, str(exc)), end
        stored = results[-1]  # the entry in the partition itself: its offsets are the batch's
        if txn is not None:
            txns.stored(txn, (topic, index), [res.queue_offset for res in results[:-1]])
            if layout:
                VISIBLE.opened(topic, index, b.producer_id, stored.queue_offset)
        end = max([end] + [res.end_offset for res in results])
        if idempotent:
            st.producers.record(b.producer_id, b.producer_epoch, topic, index, b.base_sequence,
                                b.record_count, stored.queue_offset)
        if base is None:
            base = stored.queue_offset
    return {"index": index, "error_code": errors.NONE, "base_offset": base,
            "log_append_time_ms": now if append_time else -1,
            "log_start_offset": app.store.min_offset(topic, index)}, end


def _in_partition(app, topic: str, index: int, b: records.Batch, entry: EntryIndex, txn, now: int,
                  append_time: bool, with_half: bool) -> list:
    """Kafka's transaction layout: the batch in its partition now, at the offsets the client computes;
    on one gateway (`with_half`) the first batch of the transaction there also writes its half record
    (`semantics.txn_layout`), first, naming the offset the batch gets (the partition's end: nothing
    appends between, a turn). A cluster's coordinator times the transaction out instead."""
    msgs = [entry_message(topic, index, b, entry, {}, now, append_time)]
    if with_half and not VISIBLE.is_open(topic, index, b.producer_id):
        first = app.store.max_offset(topic, index)
        msgs.insert(0, half_record(topic, index, b.producer_id, b.producer_epoch, first, txn.txn_id, txn.timeout_ms))
    return msgs


def _batch_messages(app, topic: str, index: int, b: records.Batch, entry: EntryIndex, pieces, extra: dict,
                    now: int, append_time: bool) -> list:
    """The entries that store batch `b`, the one in the partition last. Records that go elsewhere
    first (a delayed run to the schedule topic, a transactional batch to the half topic) leave gaps
    at their offsets in the partition's entry, so every record stored there now keeps offset
    base + its index in `b`, the offset the client computes from the response's base_offset
    (docs/mapping.md, "Produce"). A batch stored whole stays one verbatim entry."""
    if not entry.routing and not extra:
        return [entry_message(topic, index, b, entry, {}, now, append_time)]
    elsewhere, kept = [], set()
    for piece, at in pieces or [(b, range(b.record_count))]:
        msg = _batch_message(app, topic, index, piece, index_info(piece) if pieces else entry, extra, now,
                             append_time)
        if msg.topic == topic and msg.queue_id == index:
            kept.update(at)  # not delayed after all (DELAY=0, a deliver time in the past)
        else:
            elsewhere.append(msg)
    if not elsewhere:
        return [entry_message(topic, index, b, entry, {}, now, append_time)]
    b, entry = with_gaps(b, entry, kept)
    return elsewhere + [entry_message(topic, index, b, entry, {}, now, append_time)]


def _batch_message(app, topic: str, index: int, b: records.Batch, entry: EntryIndex, extra: dict, now: int,
                   append_time: bool):
    """One RecordBatch as an inner-batch entry (routed first when it carries routing or transaction
    properties)."""
    props = dict(entry.routing, **extra)
    msg = entry_message(topic, index, b, entry, props, now, append_time)
    if props:  # a delayed batch goes to the schedule topic first, a transactional one to the half topic
        msg = routing.route(msg, now, app.delay_levels)
    return msg


def _leads(app, topic: str, index: int) -> bool:
    """Whether this gateway may append a client's batch to the partition now (it leads it, unfenced)."""
    return app.ownership.owns(topic, index) and not app.replication.write_refusal(topic, index)


@handler(apis.PRODUCE)
async def produce(ctx: RequestContext):
    app, req, version = ctx.app, ctx.request, ctx.version
    request_bytes = getattr(ctx.conn, "request_bytes", 0)  # read before any wait: the connection reads on
    read_on = getattr(ctx.conn, "read_on", None)  # gateway.kafka.connection: this request's, pipelining
    st = kafka_state(app)
    acks = req["acks"]
    flow = ProduceFlow(app.flow, app.store)  # on a slow disk: appends off the loop, throttle_time_ms
    responses = []
    end = 0
    replicated = []
    wal_writes = []  # (response, topic, config, index, records) of diskless partitions
    for t in req["topic_data"]:
        name = t["name"]  # None: v13 named an unknown topic id (handlers: topics.name_topics_by_id)
        parts = []
        if version < 3 or acks not in (-1, 0, 1):
            code = errors.UNSUPPORTED_VERSION if version < 3 else errors.INVALID_REQUIRED_ACKS
            parts = [_partition_error(p["index"], code) for p in t["partition_data"]]
        elif name is None:
            parts = [_partition_error(p["index"], errors.UNKNOWN_TOPIC_ID) for p in t["partition_data"]]
        elif name in KAFKA_INTERNAL and app.store.topics.get(name) is None:  # Kafka 4.3: never created by a Produce
            parts = [_partition_error(p["index"], errors.UNKNOWN_TOPIC_OR_PARTITION) for p in t["partition_data"]]
        elif is_internal(name):  # Kafka's and RocketMQ's internal topics: the broker writes them
            parts = [_partition_error(p["index"], errors.INVALID_TOPIC_EXCEPTION) for p in t["partition_data"]]
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
                if not _leads(app, name, index):
                    parts.append(_partition_error(index, errors.NOT_LEADER_OR_FOLLOWER))
                    continue
                if app.diskless is not None and is_diskless(cfg):  # answered below, all in one WAL object
                    parts.append(_partition_error(index, errors.UNKNOWN_SERVER_ERROR))
                    wal_writes.append((parts[-1], name, cfg, index, p["records"]))
                    continue
                if st.cluster_txns is not None:  # a transactional batch's producer checked against etcd first
                    code = await st.cluster_txns.verify(req.get("transactional_id"), name, index, p["records"],
                                                        version >= 12)
                    if code != errors.NONE:
                        parts.append(_partition_error(index, errors.TRANSACTION_ABORTABLE if
                                                      code == INVALID_TXN_STATE and version >= 11 else code))
                        continue
                try:
                    async with flow.turn() as append:
                        if _leads(app, name, index):  # still: the turn may have waited for a slow disk
                            resp, e = await produce_partition(app, st, name, cfg, index, p["records"], append,
                                                              version)
                        else:
                            resp, e = _partition_error(index, errors.NOT_LEADER_OR_FOLLOWER), 0
                except store.StoreError as exc:
                    resp, e = _partition_error(index, errors.for_store_error(exc), str(exc)), 0
                parts.append(resp)
                end = max(end, e)
                if acks == -1 and resp["error_code"] == errors.NONE and app.replication.replicates(name, index):
                    replicated.append((name, index, app.store.max_offset(name, index), resp))
        responses.append({"name": name, "topic_id": t.get("topic_id"), "partition_responses": parts})
    quota_ms = quotas.produce_throttle_ms(ctx, request_bytes)
    if wal_writes:  # the request's diskless partitions join the WAL buffer together, not one flush each;
        # an all-diskless request lets its connection read on once they joined (responses stay in order)
        await diskless.produce_partitions(app, wal_writes, None if end or replicated else read_on,
                                          version, req.get("transactional_id"))
    if acks == 0:
        return None
    if end:
        await app.durable(end)
    with trio.move_on_after(max(req["timeout_ms"], 0) / 1000):
        while replicated:  # acks=all: the in-sync replicas have it too (within the request's timeout)
            name, index, queue_end, resp = replicated[0]
            try:
                await app.replicated(name, index, queue_end)
            except NotLeader:
                resp.update(_partition_error(index, errors.NOT_LEADER_OR_FOLLOWER))
            replicated.pop(0)
    for _name, index, _end, resp in replicated:
        resp.update(_partition_error(index, errors.REQUEST_TIMED_OUT))
    body = {"responses": responses, "throttle_time_ms": max(flow.throttle_ms(), quota_ms)}
    return leaders.with_leader_hints(ctx, body, leaders.PRODUCE_LAYOUT)
