"""Kafka's checks for the streams-group APIs (KIP-1071), applied by `access.guarded` as Kafka 4.3's
KafkaApis does them:

- StreamsGroupHeartbeat: READ on the group (GROUP_AUTHORIZATION_FAILED, no message); when the request carries a
  topology, DESCRIBE on every topic it names (source, repartition sink and source, changelog): one
  denied refuses the whole heartbeat with TOPIC_AUTHORIZATION_FAILED (no message). Internal topics the
  coordinator would create need CREATE on the cluster or on each topic (`create_denied`, used by the
  handler): without it none is created and the heartbeat succeeds with a MISSING_INTERNAL_TOPICS status
  ending "Unauthorized to CREATE on topics ...";
- StreamsGroupDescribe: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED in its entry); a group whose
  topology names a topic the principal may not describe is answered TOPIC_AUTHORIZATION_FAILED
  without topology or members.
"""
from __future__ import annotations

import gateway.kafka.authz as authz
from security.acl import Operation as Op, ResourceType as Res

HEARTBEAT, DESCRIBE = 88, 89
KEYS = frozenset((HEARTBEAT, DESCRIBE))
GROUP_DENIED, TOPIC_DENIED = authz.GROUP_AUTHORIZATION_FAILED, authz.TOPIC_AUTHORIZATION_FAILED
HIDDEN_TOPICS = "The described group uses topics that the client is not authorized to describe."


def topology_topics(topology: dict | None) -> list[str]:
    """Every topic a topology (as sent or as described) names, sorted."""
    names = set()
    for s in (topology or {}).get("subtopologies") or ():
        names.update(s["source_topics"] or ())
        names.update(s["repartition_sink_topics"] or ())
        names.update(t["name"] for t in s["repartition_source_topics"] or ())
        names.update(t["name"] for t in s["state_changelog_topics"] or ())
    return sorted(names)


def create_denied(ctx):
    """names -> those this principal may not create (CREATE on the cluster allows them all)."""
    def denied(names: list[str]) -> list[str]:
        if authz.allowed(ctx, Op.CREATE, Res.CLUSTER, log=False):
            return []
        return [n for n in names if not authz.allowed(ctx, Op.CREATE, Res.TOPIC, n)]
    return denied


def _blank(group_id: str, code: int, message: str | None) -> dict:
    """A described group answered with an error only (the other fields at their defaults, as Kafka)."""
    return {"group_id": group_id, "error_code": code, "error_message": message, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "topology": None, "members": [],
            "authorized_operations": authz.NO_AUTH_OPS}


async def _describe(ctx, fn) -> dict:
    """Denied groups come first (GROUP_AUTHORIZATION_FAILED), then the described ones."""
    asked = ctx.request["group_ids"]
    denied = [g for g in asked if authz.group_error(ctx, Op.DESCRIBE, g)]
    ctx.request["group_ids"] = [g for g in asked if g not in denied]
    body = await fn(ctx)
    wanted = ctx.request.get("include_authorized_operations", False)
    described = []
    for g in body["groups"]:
        if any([not authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t) for t in topology_topics(g.get("topology"))]):
            g = _blank(g["group_id"], TOPIC_DENIED, HIDDEN_TOPICS)
        elif not g.get("error_code"):
            g["authorized_operations"] = authz.operations(ctx, Res.GROUP, g["group_id"], wanted)
        described.append(g)
    body["groups"] = [_blank(g, GROUP_DENIED, None) for g in denied] + described
    return body


async def guarded(key: int, fn, ctx):
    """The answer of StreamsGroupHeartbeat or StreamsGroupDescribe with Kafka's checks applied."""
    if key == DESCRIBE:
        return await _describe(ctx, fn)
    req = ctx.request
    if authz.group_error(ctx, Op.READ, req["group_id"]):
        return {"error_code": GROUP_DENIED, "error_message": None}
    if any([not authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t) for t in topology_topics(req.get("topology"))]):
        return {"error_code": TOPIC_DENIED, "error_message": None}
    return await fn(ctx)
