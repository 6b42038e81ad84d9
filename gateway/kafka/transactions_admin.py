"""DescribeTransactions (65) and ListTransactions (66) over the transactional-id table
(`semantics.producer_state.TransactionalProducers`; in a cluster the states in etcd,
`gateway.cluster.txns`): what kafka-transactions --list/--describe show."""
from __future__ import annotations

import re

import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from semantics.producer_state import ClusterUnavailable, Txn

TRANSACTIONAL_ID_NOT_FOUND = 105
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
          "PrepareEpochFence")


def _partitions(txn) -> list[dict]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


async def _table(app, txn_ids=None) -> dict[str, Txn] | None:
    """Transactional id -> Txn: this gateway's table, or a cluster's states in etcd (None: unreachable)."""
    cluster = app.kafka.cluster_txns
    if cluster is None:
        return app.kafka.txns.by_id
    try:
        states = await cluster.states(txn_ids)
    except ClusterUnavailable:
        return None
    return {tid: Txn(tid, s["pid"], s["epoch"], s["timeout"], started_ms=s["started"] if s["state"] == "Ongoing"
                     else None, partitions={tuple(p) for p in s["partitions"]}, state=s["state"],
                     last_start_ms=s["started"] if s["started"] is not None else -1) for tid, s in states.items()}


@handler(apis.DESCRIBE_TRANSACTIONS)
async def describe_transactions(ctx: RequestContext):
    table = await _table(ctx.app, list(ctx.request["transactional_ids"]))
    out = []
    for tid in ctx.request["transactional_ids"]:
        txn = None if table is None else table.get(tid)
        if txn is None:
            out.append({"error_code": errors.COORDINATOR_NOT_AVAILABLE if table is None else TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": tid, "transaction_state": "",
                        "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
                        "producer_epoch": -1, "topics": []})
            continue
        out.append({"error_code": errors.NONE, "transactional_id": tid, "transaction_state": txn.state,
                    "transaction_timeout_ms": txn.timeout_ms,
                    "transaction_start_time_ms": txn.last_start_ms,
                    "producer_id": txn.producer_id, "producer_epoch": txn.epoch, "topics": _partitions(txn)})
    return {"transaction_states": out}


@handler(apis.LIST_TRANSACTIONS)
async def list_transactions(ctx: RequestContext):
    req = ctx.request
    now = ctx.app.clock.now_ms()
    wanted = set(req["state_filters"])
    unknown = sorted(wanted - set(STATES))
    pids = set(req["producer_id_filters"])
    duration = req.get("duration_filter", -1)
    pattern = req.get("transactional_id_pattern")
    try:
        regex = re.compile(pattern) if pattern else None
    except re.error:
        return {"error_code": errors.INVALID_REQUEST, "unknown_state_filters": [], "transaction_states": []}
    table = await _table(ctx.app)
    if table is None:
        return {"error_code": errors.COORDINATOR_NOT_AVAILABLE, "unknown_state_filters": [], "transaction_states": []}
    out = []
    for tid, txn in sorted(table.items()):
        if wanted and txn.state not in wanted or pids and txn.producer_id not in pids:
            continue
        if duration >= 0 and (txn.started_ms is None or now - txn.started_ms < duration):
            continue
        if regex is not None and not regex.fullmatch(tid):
            continue
        out.append({"transactional_id": tid, "producer_id": txn.producer_id, "transaction_state": txn.state})
    return {"error_code": errors.NONE, "unknown_state_filters": unknown, "transaction_states": out}
