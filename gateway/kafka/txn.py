"""Kafka transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn (and the
transactional branch of InitProducerId), over `semantics.producer_state.TransactionalProducers`.
A transaction's end (commit or abort markers: the halves' outcomes) is appended through the send
flow control as Produce is, so on a slow disk it is written off the event loop.
FindCoordinator answers key_type 1 (transaction coordinator) like groups: this broker."""
from __future__ import annotations

import time

import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.offsets_topic import mirror
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics.producer_state import INVALID_TXN_STATE


def _now() -> int:
    return int(time.time() * 1000)


async def _txn(ctx: RequestContext):
    """(error, txn) for a request naming transactional_id / producer_id / producer_epoch."""
    txns = kafka_state(ctx.app).txns
    await txns.expire_due(_now())
    req = ctx.request
    return txns.lookup(req["transactional_id"], req["producer_id"], req["producer_epoch"])


async def _durable(app, ends) -> None:
    if ends:
        await app.durable(max(r.end_offset for r in ends))


async def init_transactional(app, txn_id: str, timeout_ms: int) -> dict:
    txns = kafka_state(app).txns
    await txns.expire_due(_now())
    txn = txns.by_id.get(txn_id)
    ends = await txns.finish_in_turn(txn, commit=False) if txn is not None else []  # abort what is in progress
    code, pid, epoch, _nothing_left = txns.init(txn_id, timeout_ms)
    await _durable(app, ends)
    await txns.persisted()  # the new epoch fences older producers after a restart too
    return {"error_code": code, "producer_id": pid, "producer_epoch": epoch}


@handler(apis.ADD_PARTITIONS_TO_TXN)
async def add_partitions_to_txn(ctx: RequestContext):
    code, txn = await _txn(ctx)
    if txn is not None:
        kafka_state(ctx.app).txns.begin(txn, _now())
        txn.partitions.update((t["name"], p) for t in ctx.request["topics"] for p in t["partitions"])
    return {"results": [{"name": t["name"], "results": [
        {"partition_index": p, "partition_error_code": code} for p in t["partitions"]]}
        for t in ctx.request["topics"]]}


@handler(apis.ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(ctx: RequestContext):
    code, txn = await _txn(ctx)
    if txn is not None:
        kafka_state(ctx.app).txns.begin(txn, _now())
    return {"error_code": code}


@handler(apis.TXN_OFFSET_COMMIT)
async def txn_offset_commit(ctx: RequestContext):
    req = ctx.request
    code, txn = await _txn(ctx)
    out = []
    for t in req["topics"]:
        parts = []
        for p in t["partitions"]:
            if txn is not None:
                txn.offsets.append((req["group_id"], t["name"], p["partition_index"], p["committed_offset"],
                                    p["committed_metadata"] or ""))
            parts.append({"partition_index": p["partition_index"], "error_code": code})
        out.append({"name": t["name"], "partitions": parts})
    return {"topics": out}


@handler(apis.END_TXN)
async def end_txn(ctx: RequestContext):
    app = ctx.app
    code, txn = await _txn(ctx)
    if txn is None:
        return {"error_code": code}
    txns = kafka_state(app).txns
    if txns.ending(txn):  # the previous end is still being written (Kafka: PrepareCommit / PrepareAbort):
        same = txn.state == ("PrepareCommit" if ctx.request["committed"] else "PrepareAbort")  # a retry
        return {"error_code": errors.CONCURRENT_TRANSACTIONS if same else INVALID_TXN_STATE}
    offsets = list(txn.offsets) if ctx.request["committed"] else []
    ends = await txns.finish_in_turn(txn, commit=ctx.request["committed"])  # off the loop on a slow disk
    for group in dict.fromkeys(g for g, *_ in offsets):  # the committed offsets' __consumer_offsets records
        await mirror(app, group, [(t, p, o, -1, m) for g, t, p, o, m in offsets if g == group])
    await _durable(app, ends)
    await app.offsets.wait_durable()  # the TxnOffsetCommit offsets of a commit
    return {"error_code": errors.NONE}
