"""What each Kafka API needs (Kafka's KafkaApis checks), applied around the handlers by `handlers.handle`.

With `--authorizer acl`, `guarded(api_key, fn, ctx)` runs a handler with Kafka's authorization:
- whole-request checks (the group of JoinGroup, the transactional id of EndTxn, ...) answer with the
  API's own error (GROUP/TRANSACTIONAL_ID/CLUSTER_AUTHORIZATION_FAILED) without running the handler;
- per-topic checks (Produce, Fetch, ListOffsets, OffsetCommit, CreateTopics, ...) take the denied
  topics out of the request, run the handler on the rest and add TOPIC_AUTHORIZATION_FAILED entries
  for the denied ones to its answer;
- listings (ListGroups, OffsetFetch of all topics, DescribeGroups, DescribeConfigs, FindCoordinator
  v4) are filtered or marked after the handler ran; Metadata filters itself (metadata.py);
- DescribeLogDirs, DescribeProducers, DescribeTransactions and ListTransactions: access_admin.py;
  the share-group APIs: access_share.py; the streams-group APIs: access_streams.py.
An API with no rule here (one added later) is served to principals with ALTER on the cluster only;
others get their connection closed (`Refused`), never an unchecked answer.
"""
from __future__ import annotations

import gateway.kafka.access_admin as access_admin
import gateway.kafka.access_share as access_share
import gateway.kafka.access_streams as access_streams
import gateway.kafka.authz as authz
from gateway.kafka.authz import NONE
from security.acl import Operation as Op, ResourceType as Res

GROUP_DENIED = authz.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = authz.TOPIC_AUTHORIZATION_FAILED
TXN_DENIED = authz.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
CLUSTER_DENIED = authz.CLUSTER_AUTHORIZATION_FAILED


class Refused(Exception):
    """An API without an authorization rule, asked by a principal that may not alter the cluster."""


def _partitions(parts, code: int, error: str = "error_code") -> list:
    """Error entries for request partitions given as indexes or as {"partition_index": ...}."""
    return [{"partition_index": p if isinstance(p, int) else p["partition_index"], error: code} for p in parts]


# ------------------------------------------------------------ per-topic splits
# api key -> (request list, name field, response list, operation, entry for a denied topic)
def _produce_entry(t, code):
    return {"name": t["name"], "topic_id": t.get("topic_id"), "partition_responses": [
        {"index": p["index"], "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
         "log_start_offset": -1} for p in t["partition_data"]]}


def _fetch_entry(t, code):
    return {"topic": t["topic"], "topic_id": t.get("topic_id"), "partitions": [
        {"partition_index": p["partition"], "error_code": code, "high_watermark": -1, "records": None}
        for p in t["partitions"]]}


def _offsets_entry(t, code):
    return {"name": t["name"], "partitions": _partitions(t["partitions"], code)}


def _leader_epoch_entry(t, code):
    return {"topic": t["topic"], "partitions": [{"partition": p["partition"], "error_code": code}
                                                for p in t["partitions"]]}


def _add_partitions_entry(t, code):
    return {"name": t["name"], "results": _partitions(t["partitions"], code, error="partition_error_code")}


def _named_error(t, code):
    name = t if isinstance(t, str) else t["name"]
    return {"name": name, "error_code": code, "error_message": authz.MESSAGES[code]}


SPLITS = {
    0: ("topic_data", "name", "responses", Op.WRITE, _produce_entry),
    1: ("topics", "topic", "responses", Op.READ, _fetch_entry),
    2: ("topics", "name", "topics", Op.DESCRIBE, _offsets_entry),
    23: ("topics", "topic", "topics", Op.DESCRIBE, _leader_epoch_entry),  # OffsetForLeaderEpoch
    8: ("topics", "name", "topics", Op.READ, _offsets_entry),
    19: ("topics", "name", "topics", Op.CREATE, _named_error),
    20: ("topic_names", None, "responses", Op.DELETE, _named_error),
    21: ("topics", "name", "topics", Op.DELETE, _offsets_entry),  # DeleteRecords
    47: ("topics", "name", "topics", Op.READ, _offsets_entry),  # OffsetDelete
    24: ("topics", "name", "results", Op.WRITE, _add_partitions_entry),
    28: ("topics", "name", "topics", Op.READ, _offsets_entry),
    37: ("topics", "name", "results", Op.ALTER, _named_error),
}


def _topic_allowed(ctx, key: int, op: Op, name: str) -> bool:
    if key == 19 and authz.allowed(ctx, Op.CREATE, Res.CLUSTER, log=False):
        return True  # CreateTopics: CREATE on the cluster or on the topic
    return authz.allowed(ctx, op, Res.TOPIC, name)


async def _split(ctx, key: int, fn):
    req_list, name_field, resp_list, op, entry = SPLITS[key]
    if key == 20 and ctx.version >= 6:
        req_list, name_field = "topics", "name"
    items = ctx.request.get(req_list) or []
    allowed, denied = [], []
    for item in items:
        name = item if name_field is None else item[name_field]
        if name is None and key in (0, 1):  # v13+: an unknown topic id stays UNKNOWN_TOPIC_ID, as Kafka answers
            allowed.append(item)
            continue
        (allowed if _topic_allowed(ctx, key, op, name or "") else denied).append(item)
    if not denied:
        return await fn(ctx)
    ctx.request[req_list] = allowed
    if allowed or key in (19, 20):
        body = await fn(ctx)
        if body is None:
            return None
    elif key == 0 and ctx.request["acks"] == 0:
        return None
    else:
        body = {"session_id": 0} if key == 1 else {}
        body.setdefault(resp_list, [])
    body.setdefault(resp_list, [])
    body[resp_list] = list(body[resp_list]) + [entry(item, TOPIC_DENIED) for item in denied]
    return body


# ------------------------------------------------------------ whole-request checks
def _denied_offsets(ctx, code: int):
    return {"topics": [_offsets_entry(t, code) for t in ctx.request["topics"]]}


def _before(ctx, key: int):
    """None, or the answer refusing the whole request."""
    req = ctx.request
    if key == 0 and req.get("transactional_id") and authz.txn_error(ctx, Op.WRITE, req["transactional_id"]):
        return {"responses": [_produce_entry(t, TXN_DENIED) for t in req["topic_data"]]}
    if key in (11, 12, 13, 14) and authz.group_error(ctx, Op.READ, req["group_id"]):
        return {"error_code": GROUP_DENIED, "members": []}
    if key == 68 and authz.group_error(ctx, Op.READ, req["group_id"]):
        return {"error_code": GROUP_DENIED, "error_message": authz.MESSAGES[GROUP_DENIED]}
    if key == 47 and authz.group_error(ctx, Op.DELETE, req["group_id"]):
        return {"error_code": GROUP_DENIED}
    if key in (8, 28) and authz.group_error(ctx, Op.READ, req["group_id"]):
        return _denied_offsets(ctx, GROUP_DENIED)
    if key in (24, 25, 26, 28) and authz.txn_error(ctx, Op.WRITE, req["transactional_id"]):
        if key == 24:
            return {"results": [_add_partitions_entry(t, TXN_DENIED) for t in req["topics"]]}
        return _denied_offsets(ctx, TXN_DENIED) if key == 28 else {"error_code": TXN_DENIED}
    if key == 25 and authz.group_error(ctx, Op.READ, req["group_id"]):
        return {"error_code": GROUP_DENIED}
    if key == 22:
        tid = req.get("transactional_id")
        if tid and authz.txn_error(ctx, Op.WRITE, tid):
            return {"error_code": TXN_DENIED}
        if not tid and not authz.idempotent_write_allowed(ctx):
            authz.allowed(ctx, Op.IDEMPOTENT_WRITE, Res.CLUSTER)  # logs the denial
            return {"error_code": CLUSTER_DENIED}
    if key == 10 and ctx.version < 4:
        if req.get("key_type", 0) == 1:
            code = authz.txn_error(ctx, Op.DESCRIBE, req["key"])
        else:
            code = authz.group_error(ctx, Op.DESCRIBE, req["key"])
        if code:
            return {"error_code": code, "error_message": authz.MESSAGES[code], "node_id": -1, "host": "",
                    "port": -1}
    return None


# ------------------------------------------------------------ after the handler
def _after(ctx, key: int, body: dict) -> dict:
    req = ctx.request
    if key == 16 and not authz.allowed(ctx, Op.DESCRIBE, Res.CLUSTER, log=False):
        body["groups"] = [g for g in body["groups"]
                          if authz.allowed(ctx, Op.DESCRIBE, Res.GROUP, g["group_id"], log=False)]
    elif key == 15:
        for g in body["groups"]:
            if authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
                g.update(error_code=GROUP_DENIED, group_state="", protocol_type="", protocol_data="", members=[])
            g["authorized_operations"] = authz.operations(ctx, Res.GROUP, g["group_id"],
                                                          req.get("include_authorized_operations", False))
    elif key == 9:
        _filter_offset_fetch(ctx, body)
    elif key == 10 and ctx.version >= 4:
        for c in body["coordinators"]:
            res, denied = (Res.TRANSACTIONAL_ID, TXN_DENIED) if req["key_type"] == 1 else (Res.GROUP, GROUP_DENIED)
            if not authz.allowed(ctx, Op.DESCRIBE, res, c["key"]):
                c.update(error_code=denied, error_message=authz.MESSAGES[denied], node_id=-1, host="", port=-1)
    elif key == 32:
        for r in body["results"]:
            res, name, code = _config_resource(r)
            if not authz.allowed(ctx, Op.DESCRIBE_CONFIGS, res, name):
                r.update(error_code=code, error_message=authz.MESSAGES[code], configs=[])
    elif key == 69:
        for g in body["groups"]:
            if authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
                g.update(error_code=GROUP_DENIED, error_message=authz.MESSAGES[GROUP_DENIED], members=[])
            g["authorized_operations"] = authz.operations(ctx, Res.GROUP, g["group_id"],
                                                          req.get("include_authorized_operations", False))
    elif key == 60:
        body["cluster_authorized_operations"] = authz.operations(
            ctx, Res.CLUSTER, wanted=req.get("include_cluster_authorized_operations", False))
    return body


CONFIG_TOPIC, CONFIG_GROUP = 2, 32  # ConfigResource types; the others (brokers, loggers) are the cluster's


def _config_resource(r: dict):
    """(resource type, name, refusal code) a config resource is authorized on."""
    if r["resource_type"] == CONFIG_TOPIC:
        return Res.TOPIC, r["resource_name"], TOPIC_DENIED
    if r["resource_type"] == CONFIG_GROUP:
        return Res.GROUP, r["resource_name"], GROUP_DENIED
    return Res.CLUSTER, "kafka-cluster", CLUSTER_DENIED


async def _alter_configs(ctx, fn):
    """AlterConfigs / IncrementalAlterConfigs: ALTER_CONFIGS on each resource; the denied are answered here."""
    allowed, denied = [], []
    for r in ctx.request["resources"]:
        res, name, code = _config_resource(r)
        (allowed if authz.allowed(ctx, Op.ALTER_CONFIGS, res, name) else denied).append((r, code))
    ctx.request["resources"] = [r for r, _ in allowed]
    body = await fn(ctx) if allowed else {"responses": []}
    body["responses"] = list(body["responses"]) + [
        {"error_code": code, "error_message": authz.MESSAGES[code], "resource_type": r["resource_type"],
         "resource_name": r["resource_name"]} for r, code in denied]
    return body


def _filter_offset_fetch(ctx, body: dict) -> None:
    """OffsetFetch: DESCRIBE on the group, then on each topic (dropped from an all-topics answer)."""
    req = ctx.request
    groups = body.get("groups") if ctx.version >= 8 else [dict(body, group_id=req["group_id"])]
    asked_all = {g["group_id"]: g["topics"] is None for g in req.get("groups") or []} if ctx.version >= 8 \
        else {req["group_id"]: req["topics"] is None}
    for g in groups:
        if authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
            g.update(error_code=GROUP_DENIED, topics=[])
            continue
        kept = []
        for t in g["topics"]:
            if authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t["name"], log=not asked_all.get(g["group_id"])):
                kept.append(t)
            elif not asked_all.get(g["group_id"]):
                kept.append({"name": t["name"], "partitions": [
                    {"partition_index": p["partition_index"], "committed_offset": -1, "metadata": None,
                     "error_code": TOPIC_DENIED} for p in t["partitions"]]})
        g["topics"] = kept
    if ctx.version < 8:
        body.update(error_code=groups[0].get("error_code", NONE), topics=groups[0]["topics"])


# ------------------------------------------------------------ entry point
# Metadata, SASL, ACL and user APIs, the partition placement APIs (partitions.py) and DescribeQuorum check themselves;
# client telemetry (71, 72) needs no ACL in Kafka either; the delegation-token APIs (38-41) check themselves
OWN_CHECKS = frozenset((3, 17, 18, 29, 30, 31, 34, 36, 38, 39, 40, 41, 43, 45, 46, 48, 49, 50, 51, 55, 57, 71, 72,
                        75))
AFTER = frozenset((9, 10, 15, 16, 32, 60, 69))
GROUP_DELETE = 42
ADD_PARTITIONS = 24


async def guarded(key: int, fn, ctx):
    """The handler's answer with Kafka's authorization applied (unchanged without --authorizer acl)."""
    if getattr(ctx.app, "security", None) is None or key in OWN_CHECKS:
        return await fn(ctx)
    if key == ADD_PARTITIONS and ctx.version >= 4:  # the batched form brokers send (Kafka: CLUSTER_ACTION)
        if not authz.allowed(ctx, Op.CLUSTER_ACTION, Res.CLUSTER):
            return {"error_code": CLUSTER_DENIED, "results_by_transaction": []}
        return await fn(ctx)
    refusal = _before(ctx, key)
    if refusal is not None:
        return refusal
    if key == GROUP_DELETE:
        return await _delete_groups(ctx, fn)
    if key in access_admin.KEYS:
        return await access_admin.guarded(key, fn, ctx)
    if key in access_share.KEYS:
        return await access_share.guarded(key, fn, ctx)
    if key in access_streams.KEYS:
        return await access_streams.guarded(key, fn, ctx)
    if key in (33, 44):
        return await _alter_configs(ctx, fn)
    if key in SPLITS:
        return await _split(ctx, key, fn)
    if key in AFTER or key in (11, 12, 13, 14, 22, 25, 26, 68):
        body = await fn(ctx)
        return body if body is None or key not in AFTER else _after(ctx, key, body)
    if not authz.allowed(ctx, Op.ALTER, Res.CLUSTER):
        raise Refused(f"api {key} has no authorization rule; only principals with ALTER on the cluster may use it")
    return await fn(ctx)


async def _delete_groups(ctx, fn):
    names = ctx.request["groups_names"]
    denied = [g for g in names if authz.group_error(ctx, Op.DELETE, g)]
    ctx.request["groups_names"] = [g for g in names if g not in denied]
    body = await fn(ctx)
    body["results"] = list(body["results"]) + [{"group_id": g, "error_code": GROUP_DENIED} for g in denied]
    return body
