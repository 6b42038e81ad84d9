"""Kafka's checks for the share-group APIs (KIP-932), applied by `access.guarded` (as Kafka 4.x's
KafkaApis does them):

- ShareGroupHeartbeat: READ on the group, then DESCRIBE on every subscribed topic; one topic denied
  refuses the whole heartbeat with TOPIC_AUTHORIZATION_FAILED (no message, no assignment);
- ShareFetch, ShareAcknowledge: READ on the group; READ on each topic, checked by the handlers
  (`may_read`): a denied partition answers TOPIC_AUTHORIZATION_FAILED (its acknowledgements too) and
  is never acquired; an unknown topic id stays UNKNOWN_TOPIC_ID;
- ShareGroupDescribe: DESCRIBE on each group; a group whose members are assigned a topic the
  principal may not describe is answered TOPIC_AUTHORIZATION_FAILED without members;
- DescribeShareGroupOffsets: DESCRIBE on each group; asked topics the principal may not describe
  come last with TOPIC_AUTHORIZATION_FAILED per partition (topic id zero, start offset -1); an
  all-topics answer leaves them out;
- AlterShareGroupOffsets: READ on the group, READ on each topic (denied: TOPIC_AUTHORIZATION_FAILED
  on each of its partitions); DeleteShareGroupOffsets: DELETE on the group, READ on each topic
  (denied: TOPIC_AUTHORIZATION_FAILED on the topic). The denied entries come first; a group error
  of the handler (not found, not empty) answers alone.
A denied group refuses the request with GROUP_AUTHORIZATION_FAILED (top level, or in its entry).
"""
from __future__ import annotations

import gateway.kafka.authz as authz
import gateway.kafka.topics as topics
from security.acl import Operation as Op, ResourceType as Res

GROUP_DENIED, TOPIC_DENIED = authz.GROUP_AUTHORIZATION_FAILED, authz.TOPIC_AUTHORIZATION_FAILED
TOPIC_DENIED_MESSAGE = authz.MESSAGES[TOPIC_DENIED]
HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."
HEARTBEAT, DESCRIBE, FETCH, ACKNOWLEDGE = 76, 77, 78, 79
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
WHOLE_REQUEST = {HEARTBEAT: Op.READ, FETCH: Op.READ, ACKNOWLEDGE: Op.READ, ALTER_OFFSETS: Op.READ,
                 DELETE_OFFSETS: Op.DELETE}
KEYS = frozenset((*WHOLE_REQUEST, DESCRIBE, DESCRIBE_OFFSETS))
ZERO_ID = bytes(16)


def may_read(ctx):
    """topic name -> may this request's principal READ it (each topic checked and logged once)."""
    seen: dict = {}

    def check(name: str) -> bool:
        if name not in seen:
            seen[name] = authz.allowed(ctx, Op.READ, Res.TOPIC, name)
        return seen[name]
    return check


def _refusal(key: int) -> dict:
    body = {"error_code": GROUP_DENIED, "error_message": authz.MESSAGES[GROUP_DENIED]}
    if key in (FETCH, ACKNOWLEDGE, ALTER_OFFSETS, DELETE_OFFSETS):
        body["responses"] = []
    if key in (FETCH, ACKNOWLEDGE):
        body["node_endpoints"] = []
    return body


def _split_topics(ctx, items, op: Op, log: bool = True) -> tuple[list, list]:
    allowed, denied = [], []
    for t in items:
        (allowed if authz.allowed(ctx, op, Res.TOPIC, t["topic_name"], log=log) else denied).append(t)
    return allowed, denied


def _id_or_zero(ctx, name: str) -> bytes:
    return topics.topic_id(ctx.app, name)


async def _alter_or_delete(key: int, fn, ctx) -> dict:
    allowed, denied = _split_topics(ctx, ctx.request["topics"], Op.READ)
    ctx.request["topics"] = allowed
    body = await fn(ctx)
    if body.get("error_code"):
        return body
    if key == ALTER_OFFSETS:
        entries = [{"topic_name": t["topic_name"], "topic_id": _id_or_zero(ctx, t["topic_name"]), "partitions": [
            {"partition_index": p["partition_index"], "error_code": TOPIC_DENIED, "error_message": TOPIC_DENIED_MESSAGE}
            for p in t["partitions"]]} for t in denied]
    else:
        entries = [{"topic_name": t["topic_name"], "topic_id": ZERO_ID, "error_code": TOPIC_DENIED,
                    "error_message": TOPIC_DENIED_MESSAGE} for t in denied]
    body["responses"] = entries + list(body["responses"])
    return body


def _heartbeat_topics_denied(ctx) -> bool:
    names = set(ctx.request.get("subscribed_topic_names") or ())
    return any([not authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, n) for n in sorted(names)])


async def _describe_offsets(fn, ctx) -> dict:
    denied_by_group = {}
    for g in ctx.request["groups"]:
        if g["topics"] and not authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
            g["topics"], denied_by_group[g["group_id"]] = _split_topics(ctx, g["topics"], Op.DESCRIBE)
    asked_all = {g["group_id"] for g in ctx.request["groups"] if g["topics"] is None}
    body = await fn(ctx)
    for g in body["groups"]:
        if authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
            g.update(error_code=GROUP_DENIED, error_message=authz.MESSAGES[GROUP_DENIED], topics=[])
        elif g["group_id"] in asked_all:
            g["topics"] = _split_topics(ctx, g["topics"], Op.DESCRIBE, log=False)[0]
        elif not g.get("error_code"):
            g["topics"] = list(g["topics"]) + [
                {"topic_name": t["topic_name"], "topic_id": ZERO_ID, "partitions": [
                    {"partition_index": p, "start_offset": -1, "leader_epoch": 0, "lag": -1,
                     "error_code": TOPIC_DENIED, "error_message": TOPIC_DENIED_MESSAGE} for p in t["partitions"]]}
                for t in denied_by_group.get(g["group_id"], ())]
    return body


def _describe_groups(ctx, body: dict) -> dict:
    for g in body["groups"]:
        if authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
            g.update(error_code=GROUP_DENIED, error_message=authz.MESSAGES[GROUP_DENIED], members=[])
        else:
            assigned = {tp["topic_name"] for m in g["members"] for tp in m["assignment"]["topic_partitions"]}
            if any([not authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t) for t in sorted(assigned)]):
                g.update(error_code=TOPIC_DENIED, error_message=HIDDEN_TOPICS, members=[])
        g["authorized_operations"] = authz.operations(ctx, Res.GROUP, g["group_id"],
                                                      ctx.request.get("include_authorized_operations", False))
    return body


async def guarded(key: int, fn, ctx):
    """The answer of one of the APIs in KEYS with Kafka's group and topic checks applied."""
    if key in WHOLE_REQUEST:
        if authz.group_error(ctx, WHOLE_REQUEST[key], ctx.request.get("group_id") or ""):
            return _refusal(key)
        if key == HEARTBEAT and _heartbeat_topics_denied(ctx):
            return {"error_code": TOPIC_DENIED, "error_message": None}
        if key in (ALTER_OFFSETS, DELETE_OFFSETS):
            return await _alter_or_delete(key, fn, ctx)
        return await fn(ctx)  # ShareFetch/ShareAcknowledge check their topics themselves (may_read)
    if key == DESCRIBE_OFFSETS:
        return await _describe_offsets(fn, ctx)
    return _describe_groups(ctx, await fn(ctx))
