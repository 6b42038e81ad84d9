"""DescribeTransactions (65) and ListTransactions (66) over the transactional-id table
(`semantics.producer_state.TransactionalProducers`): what kafka-transactions --list/--describe show."""
from __future__ import annotations

import re

import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler

TRANSACTIONAL_ID_NOT_FOUND = 105
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
          "PrepareEpochFence")


def _partitions(txn) -> list[dict]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


@handler(apis.DESCRIBE_TRANSACTIONS)
async def describe_transactions(ctx: RequestContext):
    txns = ctx.app.kafka.txns
    out = []
    for tid in ctx.request["transactional_ids"]:
        txn = txns.by_id.get(tid)
        if txn is None:
            out.append({"error_code": TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": tid, "transaction_state": "",
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
    out = []
    for tid, txn in sorted(ctx.app.kafka.txns.by_id.items()):
        if wanted and txn.state not in wanted or pids and txn.producer_id not in pids:
            continue
        if duration >= 0 and (txn.started_ms is None or now - txn.started_ms < duration):
            continue
        if regex is not None and not regex.fullmatch(tid):
            continue
        out.append({"transactional_id": tid, "producer_id": txn.producer_id, "transaction_state": txn.state})
    return {"error_code": errors.NONE, "unknown_state_filters": unknown, "transaction_states": out}
