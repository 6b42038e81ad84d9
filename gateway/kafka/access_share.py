"""Kafka's group checks for the share-group APIs (KIP-932), applied by `access.guarded`.

- ShareGroupHeartbeat, ShareFetch, ShareAcknowledge, AlterShareGroupOffsets: READ on the group;
- DeleteShareGroupOffsets: DELETE on the group;
  each refused as a whole with GROUP_AUTHORIZATION_FAILED in the top-level error code;
- ShareGroupDescribe, DescribeShareGroupOffsets: DESCRIBE on each group, the denied ones marked
  GROUP_AUTHORIZATION_FAILED in their own entry.
Topic checks of these APIs are not applied yet: a principal allowed on the group reaches its topics.
"""
from __future__ import annotations

import gateway.kafka.authz as authz
from security.acl import Operation as Op, ResourceType as Res

GROUP_DENIED = authz.GROUP_AUTHORIZATION_FAILED
HEARTBEAT, DESCRIBE, FETCH, ACKNOWLEDGE = 76, 77, 78, 79
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
WHOLE_REQUEST = {HEARTBEAT: Op.READ, FETCH: Op.READ, ACKNOWLEDGE: Op.READ, ALTER_OFFSETS: Op.READ,
                 DELETE_OFFSETS: Op.DELETE}
KEYS = frozenset((*WHOLE_REQUEST, DESCRIBE, DESCRIBE_OFFSETS))


def _refusal(key: int) -> dict:
    body = {"error_code": GROUP_DENIED, "error_message": authz.MESSAGES[GROUP_DENIED]}
    if key in (FETCH, ACKNOWLEDGE, ALTER_OFFSETS, DELETE_OFFSETS):
        body["responses"] = []
    if key in (FETCH, ACKNOWLEDGE):
        body["node_endpoints"] = []
    return body


async def guarded(key: int, fn, ctx):
    """The answer of one of the APIs in KEYS with Kafka's group checks applied."""
    if key in WHOLE_REQUEST:
        if authz.group_error(ctx, WHOLE_REQUEST[key], ctx.request.get("group_id") or ""):
            return _refusal(key)
        return await fn(ctx)
    body = await fn(ctx)
    for g in body["groups"]:
        if authz.group_error(ctx, Op.DESCRIBE, g["group_id"]):
            g.update(error_code=GROUP_DENIED, error_message=authz.MESSAGES[GROUP_DENIED])
            g.update(members=[]) if key == DESCRIBE else g.update(topics=[])
        if key == DESCRIBE:
            g["authorized_operations"] = authz.operations(ctx, Res.GROUP, g["group_id"],
                                                          ctx.request.get("include_authorized_operations", False))
    return body
