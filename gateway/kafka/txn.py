"""Kafka transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn (and the
transactional branch of InitProducerId), over `semantics.producer_state.TransactionalProducers`.
A transaction's end (commit or abort markers: the halves' outcomes) is appended through the send
flow control as Produce is, so on a slow disk it is written off the event loop.
FindCoordinator answers key_type 1 (transaction coordinator) like groups: this broker. In a cluster each
request goes to `gateway.cluster.txns` (the coordinator state in etcd) instead; etcd unreachable
answers COORDINATOR_NOT_AVAILABLE (the client finds the coordinator again and retries).
A request of the producer that comes while its transaction's end is decided and not complete (here:
being written; in a cluster: its markers not all delivered) is answered CONCURRENT_TRANSACTIONS, as
Kafka 4.3.1 answers AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and InitProducerId while it
is PrepareCommit / PrepareAbort (every version; tests/cluster/test_cluster_txn_concurrent.py); the
client retries it."""
from __future__ import annotations

import time

import gateway.diskless as diskless
import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.cluster.txn_fence import EndInProgress
from gateway.kafka.offsets_topic import mirror
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics.routing import PROPERTY_PRODUCER_GROUP
from semantics.producer_state import INVALID_TXN_STATE, ClusterUnavailable, reinit_verdict


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


async def _clustered(call, answer):
    """`answer(await call)`, or None while etcd (or a partition leader) cannot be reached."""
    try:
        return answer(await call)
    except ClusterUnavailable:
        return None


async def init_transactional(app, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None = None) -> dict:
    """InitProducerId with a transactional.id; `expected`: the re-initialising client's (producer id,
    epoch) (KIP-360)."""
    cluster = kafka_state(app).cluster_txns
    if cluster is not None:
        out = await _clustered(cluster.init(txn_id, timeout_ms, expected), lambda r: {
            "error_code": r[0], "producer_id": r[1], "producer_epoch": r[2]})
        return out or {"error_code": errors.COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
    txns = kafka_state(app).txns
    await txns.expire_due(_now())
    txn = txns.by_id.get(txn_id)
    if txn is not None and txns.ending(txn):  # as Kafka 4.3.1 while its markers are written: retry later
        return {"error_code": errors.CONCURRENT_TRANSACTIONS, "producer_id": -1, "producer_epoch": -1}
    if txn is not None and reinit_verdict(expected, txn.producer_id, txn.epoch, txn.last) is not None:
        code, pid, epoch, _nothing = txns.init(txn_id, timeout_ms, expected)  # a retry, or fenced: no change
        return {"error_code": code, "producer_id": pid, "producer_epoch": epoch}
    ends = await txns.finish_in_turn(txn, commit=False) if txn is not None else []  # abort what is in progress
    ends += await _abort_left_open(app, txn_id)
    code, pid, epoch, _nothing_left = txns.init(txn_id, timeout_ms, expected)
    kafka_state(app).diskless_txns.drop(txn_id)  # what it held for diskless partitions: aborted too
    kafka_state(app).diskless_txns.unmark(txn_id)
    await _durable(app, ends)
    await txns.persisted()  # the new epoch fences older producers after a restart too
    return {"error_code": code, "producer_id": pid, "producer_epoch": epoch}


async def _abort_left_open(app, txn_id: str) -> list:
    """Abort the halves of `txn_id` that an earlier process left undecided (a kill -9 mid-transaction), as
    Kafka's InitProducerId aborts the transaction in progress: its partitions' last stable offset moves
    on now, not after the check-back's timeout."""
    transactions = app.transactions
    if txn_id not in transactions.open_groups_at_start:
        return []
    transactions.open_groups_at_start.discard(txn_id)
    ends = []
    for hoff, half in list(transactions.undecided_halves()):
        if half.properties.get(PROPERTY_PRODUCER_GROUP) == txn_id:
            _result, r = await transactions.end_in_turn(app.flow, hoff, False, producer_group=txn_id)
            ends += [r] if r is not None else []
    return ends


async def _end_diskless(app, txn, commit: bool, offsets: list) -> int:
    """First part of an end: a commit appends the transaction's held batches of diskless partitions
    through the WAL and writes its offsets of diskless partitions to the bucket (a failure answers
    COORDINATOR_NOT_AVAILABLE, retriable: the retry appends only what is left); an abort drops them."""
    held = kafka_state(app).diskless_txns
    if commit:
        state, txn.state = txn.state, "PrepareCommit"  # a concurrent retry: CONCURRENT_TRANSACTIONS
        try:
            done = await held.commit(txn)
            for group in dict.fromkeys(g for g, *_ in offsets):
                done = done and await diskless.save_offsets(
                    app, group, [(t, p, o, -1, m) for g, t, p, o, m in offsets if g == group])
        finally:
            txn.state = state
        if not done:
            return errors.COORDINATOR_NOT_AVAILABLE
    held.drop(txn.txn_id)
    held.unmark(txn.txn_id)
    return errors.NONE


async def _cluster_add_partitions(cluster, req: dict) -> list:
    asked = [(t["name"], p) for t in req["topics"] for p in t["partitions"]]
    try:
        codes = await cluster.add_partitions(req["transactional_id"], req["producer_id"], req["producer_epoch"],
                                             asked, bool(req.get("verify_only")), request=True)
    except ClusterUnavailable:
        codes = dict.fromkeys(asked, errors.COORDINATOR_NOT_AVAILABLE)
    return [{"name": t["name"], "results": [
        {"partition_index": p, "partition_error_code": codes[(t["name"], p)]} for p in t["partitions"]]}
        for t in req["topics"]]


@handler(apis.ADD_PARTITIONS_TO_TXN)
async def add_partitions_to_txn(ctx: RequestContext):
    cluster = kafka_state(ctx.app).cluster_txns
    if cluster is not None:
        if ctx.version >= 4:
            return {"error_code": errors.NONE, "results_by_transaction": [
                {"transactional_id": t["transactional_id"], "topic_results": await _cluster_add_partitions(cluster, t)}
                for t in ctx.request["transactions"]]}
        return {"results": await _cluster_add_partitions(cluster, ctx.request)}
    if ctx.version >= 4:  # batched, as a partition leader asks its coordinator (KIP-890)
        txns = kafka_state(ctx.app).txns
        await txns.expire_due(_now())
        return {"error_code": errors.NONE, "results_by_transaction": [
            {"transactional_id": t["transactional_id"], "topic_results": _add_partitions(ctx.app, t)}
            for t in ctx.request["transactions"]]}
    await kafka_state(ctx.app).txns.expire_due(_now())
    return {"results": _add_partitions(ctx.app, ctx.request)}


def _add_partitions(app, req: dict) -> list:
    """One transaction's per-partition answer; `verify_only` (v4+) checks membership without adding (a
    partition not in the transaction: TRANSACTION_ABORTABLE, as Kafka 4.3.1 answers)."""
    txns = kafka_state(app).txns
    code, txn = txns.lookup(req["transactional_id"], req["producer_id"], req["producer_epoch"])
    asked = [(t["name"], p) for t in req["topics"] for p in t["partitions"]]
    codes = dict.fromkeys(asked, code)
    if txn is not None and txns.ending(txn):
        codes = dict.fromkeys(asked, errors.CONCURRENT_TRANSACTIONS)
    elif txn is not None and req.get("verify_only"):
        codes = {tp: errors.NONE if tp in txn.partitions else errors.TRANSACTION_ABORTABLE for tp in asked}
    elif txn is not None:
        txns.begin(txn, _now())
        txn.partitions.update(asked)
    return [{"name": t["name"], "results": [
        {"partition_index": p, "partition_error_code": codes[(t["name"], p)]} for p in t["partitions"]]}
        for t in req["topics"]]


@handler(apis.ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(ctx: RequestContext):
    cluster, req = kafka_state(ctx.app).cluster_txns, ctx.request
    if cluster is not None:
        try:
            code = await _clustered(cluster.add_offsets(req["transactional_id"], req["producer_id"],
                                                        req["producer_epoch"], None), lambda c: c)
        except EndInProgress as decided:  # (Kafka 4.3.1, while its markers are written)
            code = decided.answer(req["producer_id"], req["producer_epoch"])
        return {"error_code": errors.COORDINATOR_NOT_AVAILABLE if code is None else code}
    code, txn = await _txn(ctx)
    if txn is not None and kafka_state(ctx.app).txns.ending(txn):
        return {"error_code": errors.CONCURRENT_TRANSACTIONS}
    if txn is not None:
        kafka_state(ctx.app).txns.begin(txn, _now())
    return {"error_code": code}


@handler(apis.TXN_OFFSET_COMMIT)
async def txn_offset_commit(ctx: RequestContext):
    req = ctx.request
    cluster = kafka_state(ctx.app).cluster_txns
    if cluster is not None:  # the offsets go into the transaction's state in etcd, committed with it
        offsets = [(req["group_id"], t["name"], p["partition_index"], p["committed_offset"],
                    p["committed_metadata"] or "") for t in req["topics"] for p in t["partitions"]]
        try:
            code = await _clustered(cluster.add_offsets(req["transactional_id"], req["producer_id"],
                                                        req["producer_epoch"], offsets), lambda c: c)
        except EndInProgress as decided:  # (Kafka 4.3.1's group coordinator too, every version)
            code = decided.answer(req["producer_id"], req["producer_epoch"])
        code = errors.COORDINATOR_NOT_AVAILABLE if code is None else code
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]]}
            for t in req["topics"]]}
    code, txn = await _txn(ctx)
    if txn is not None and kafka_state(ctx.app).txns.ending(txn):  # (not begun: the end takes no more offsets)
        code, txn = errors.CONCURRENT_TRANSACTIONS, None
    if txn is not None and ctx.version >= 5:  # TV2: no AddOffsetsToTxn first, this request adds the group
        kafka_state(ctx.app).txns.begin(txn, _now())
    out = []
    for t in req["topics"]:
        parts = []
        for p in t["partitions"]:
            if txn is not None:
                txn.offsets.append((req["group_id"], t["name"], p["partition_index"], p["committed_offset"],
                                    p["committed_metadata"] or ""))
            parts.append({"partition_index": p["partition_index"], "error_code": code})
        out.append({"name": t["name"], "partitions": parts})
    if txn is not None and txn.started_ms is not None and ctx.app.diskless is not None:  # durable first
        await kafka_state(ctx.app).diskless_txns.offsets_added(txn)
    return {"topics": out}


@handler(apis.END_TXN)
async def end_txn(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    txns = kafka_state(app).txns
    tv2 = ctx.version >= 5  # transactions v2 (KIP-890 part 2): every end bumps the epoch
    if kafka_state(app).cluster_txns is not None:
        out = await _clustered(kafka_state(app).cluster_txns.end(
            req["transactional_id"], req["producer_id"], req["producer_epoch"], req["committed"], tv2),
            lambda r: {"error_code": r[0], "producer_id": r[1], "producer_epoch": r[2]} if tv2 else
            {"error_code": r[0]})
        return out or {"error_code": errors.COORDINATOR_NOT_AVAILABLE}
    code, txn = await _txn(ctx)
    if txn is None and tv2:
        retried = txns.retried_end(req["transactional_id"], req["producer_id"], req["producer_epoch"],
                                   req["committed"])
        if retried is not None:  # the answer to this end was lost: the same answer again
            if not await app.offsets.wait_mirrored():  # (or it was refused: its offsets not in etcd yet)
                return {"error_code": errors.COORDINATOR_NOT_AVAILABLE}
            return {"error_code": errors.NONE, "producer_id": retried.producer_id, "producer_epoch": retried.epoch}
    if txn is None:
        return {"error_code": code}
    if txns.ending(txn):  # the previous end is still being written (Kafka: PrepareCommit / PrepareAbort):
        same = txn.state == ("PrepareCommit" if req["committed"] else "PrepareAbort")  # a retry
        return {"error_code": errors.CONCURRENT_TRANSACTIONS if same else INVALID_TXN_STATE}
    offsets = list(txn.offsets) if req["committed"] else []
    code = await _end_diskless(app, txn, req["committed"], offsets)
    if code != errors.NONE:
        return {"error_code": code}
    if tv2:
        txns.bump_epoch(txn)  # first: a write of the old epoch arriving during the end is fenced
    # the epoch this end hands out, taken now: an InitProducerId of another instance during the awaits
    # below bumps it again, and that newer epoch is the other instance's alone
    producer_id, epoch = txn.producer_id, txn.epoch
    ends = await txns.finish_in_turn(txn, commit=req["committed"])  # off the loop on a slow disk
    for group in dict.fromkeys(g for g, *_ in offsets):  # the committed offsets' __consumer_offsets records
        await mirror(app, group, [(t, p, o, -1, m) for g, t, p, o, m in offsets if g == group])
    await _durable(app, ends)
    await app.offsets.wait_durable()  # the TxnOffsetCommit offsets of a commit
    # in a cluster, a commit is answered once etcd has its offsets (and every local offset change etcd
    # lacks: a retried end of a commit whose offsets are still queued); else COORDINATOR_NOT_AVAILABLE,
    # and the client retries the end. Not withdrawn: the transaction is committed, its offsets stay queued
    if req["committed"] and not await app.offsets.wait_mirrored():
        return {"error_code": errors.COORDINATOR_NOT_AVAILABLE}
    if tv2:
        await txns.persisted()
        return {"error_code": errors.NONE, "producer_id": producer_id, "producer_epoch": epoch}
    return {"error_code": errors.NONE}
