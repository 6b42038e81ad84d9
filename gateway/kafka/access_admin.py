"""Kafka's authorization for the admin describe APIs, applied by `access.guarded`.

- DescribeLogDirs (35): DESCRIBE on the cluster, else no results and CLUSTER_AUTHORIZATION_FAILED in
  the top-level error code (v3+; older versions only get the empty results);
- DescribeProducers (61): READ on each topic, else TOPIC_AUTHORIZATION_FAILED on its partitions;
- DescribeTransactions (65): DESCRIBE on each transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  for that entry; the partitions of a described transaction keep only the topics the principal may DESCRIBE;
- ListTransactions (66): only the transactional ids the principal may DESCRIBE;
- ListConfigResources (74): DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED and nothing.
"""
from __future__ import annotations

import gateway.kafka.authz as authz
from security.acl import Operation as Op, ResourceType as Res

DESCRIBE_LOG_DIRS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 35, 61, 65, 66
LIST_CONFIG_RESOURCES = 74
KEYS = frozenset((DESCRIBE_LOG_DIRS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS,
                  LIST_CONFIG_RESOURCES))
CLUSTER_DENIED = authz.CLUSTER_AUTHORIZATION_FAILED
TOPIC_DENIED = authz.TOPIC_AUTHORIZATION_FAILED
TXN_DENIED = authz.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


async def guarded(key: int, fn, ctx):
    """The answer of one of the APIs in KEYS with Kafka's checks applied."""
    if key == DESCRIBE_LOG_DIRS:
        if authz.allowed(ctx, Op.DESCRIBE, Res.CLUSTER):
            return await fn(ctx)
        return {"error_code": CLUSTER_DENIED, "results": []}
    if key == LIST_CONFIG_RESOURCES:
        if authz.allowed(ctx, Op.DESCRIBE_CONFIGS, Res.CLUSTER):
            return await fn(ctx)
        return {"error_code": CLUSTER_DENIED, "config_resources": []}
    if key == DESCRIBE_PRODUCERS:
        return await _describe_producers(ctx, fn)
    if key == DESCRIBE_TRANSACTIONS:
        return await _describe_transactions(ctx, fn)
    body = await fn(ctx)
    body["transaction_states"] = [s for s in body["transaction_states"]
                                  if authz.allowed(ctx, Op.DESCRIBE, Res.TRANSACTIONAL_ID, s["transactional_id"])]
    return body


async def _describe_producers(ctx, fn):
    asked = ctx.request["topics"]
    denied = [t for t in asked if not authz.allowed(ctx, Op.READ, Res.TOPIC, t["name"])]
    ctx.request["topics"] = [t for t in asked if t not in denied]
    body = await fn(ctx) if ctx.request["topics"] else {"topics": []}
    refused = [{"name": t["name"], "partitions": [
        {"partition_index": p, "error_code": TOPIC_DENIED, "error_message": authz.MESSAGES[TOPIC_DENIED],
         "active_producers": []} for p in t["partition_indexes"]]} for t in denied]
    body["topics"] = list(body["topics"]) + refused
    return body


def _refused_transaction(tid: str) -> dict:
    return {"error_code": TXN_DENIED, "transactional_id": tid, "transaction_state": "",
            "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
            "producer_epoch": -1, "topics": []}


async def _describe_transactions(ctx, fn):
    asked = ctx.request["transactional_ids"]
    denied = [tid for tid in asked if authz.txn_error(ctx, Op.DESCRIBE, tid)]
    ctx.request["transactional_ids"] = [tid for tid in asked if tid not in denied]
    body = await fn(ctx) if ctx.request["transactional_ids"] else {"transaction_states": []}
    for state in body["transaction_states"]:
        state["topics"] = [t for t in state["topics"]
                           if authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t["topic"], log=False)]
    body["transaction_states"] = list(body["transaction_states"]) + [_refused_transaction(t) for t in denied]
    return body
