"""Kafka authorization: the one check every handler calls (`security.acl` decides, Kafka's error codes).

`allowed(ctx, op, resource_type, name)` is True when the gateway runs without `--authorizer acl`;
a refusal is logged through the denial log (once per principal/resource/minute). The `*_error`
helpers give the error code to put in a response: NONE or Kafka's *_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from security.acl import CLUSTER_NAME, Operation as Op, ResourceType as Res

NONE = 0
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
SECURITY_DISABLED = 54
NO_AUTH_OPS = -2147483648
# The messages Kafka's Errors enum gives these codes (what clients print when the broker sends one).
MESSAGES = {
    TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}  # Kafka's "not asked for" value of *_authorized_operations

# The operations Kafka reports in *_authorized_operations, per resource type (AclEntry.supportedOperations).
SUPPORTED = {
    Res.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                Op.ALTER_CONFIGS),
    Res.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE),
    Res.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                  Op.ALTER, Op.DESCRIBE),
    Res.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
}


def allowed(ctx, operation: Op, resource_type: Res, name: str = CLUSTER_NAME, log: bool = True) -> bool:
    sec = getattr(ctx.app, "security", None)
    if sec is None:
        return True
    sec.refresh()
    decision = sec.authorizer.decide(ctx.principal, ctx.peer_host, operation, resource_type, name)
    if not decision.allowed and log:
        sec.denials.denied(ctx.principal, operation.name, f"{resource_type.name}:{name}", ctx.peer_host,
                           decision.reason)
    return decision.allowed


def topic_error(ctx, operation: Op, topic: str) -> int:
    return NONE if allowed(ctx, operation, Res.TOPIC, topic) else TOPIC_AUTHORIZATION_FAILED


def group_error(ctx, operation: Op, group: str) -> int:
    return NONE if allowed(ctx, operation, Res.GROUP, group) else GROUP_AUTHORIZATION_FAILED


def cluster_error(ctx, operation: Op) -> int:
    return NONE if allowed(ctx, operation, Res.CLUSTER) else CLUSTER_AUTHORIZATION_FAILED


def txn_error(ctx, operation: Op, transactional_id: str) -> int:
    return NONE if allowed(ctx, operation, Res.TRANSACTIONAL_ID, transactional_id) \
        else TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def idempotent_write_allowed(ctx) -> bool:
    """IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (Kafka 2.8+, KIP-679)."""
    sec = getattr(ctx.app, "security", None)
    if sec is None or allowed(ctx, Op.IDEMPOTENT_WRITE, Res.CLUSTER, log=False):
        return True
    return sec.authorizer.authorize_any(ctx.principal, ctx.peer_host, Op.WRITE, Res.TOPIC)


def operations(ctx, resource_type: Res, name: str = CLUSTER_NAME, wanted: bool = True) -> int:
    """The *_authorized_operations bit field (bit = operation code); NO_AUTH_OPS when not asked for."""
    if not wanted:
        return NO_AUTH_OPS
    ops = SUPPORTED[resource_type]
    sec = getattr(ctx.app, "security", None)
    if sec is not None:
        ops = sec.authorizer.authorized_operations(ctx.principal, ctx.peer_host, resource_type, name, ops)
    return sum(1 << op for op in ops)
