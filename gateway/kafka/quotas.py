"""Client quotas through the Kafka admin API (`kafka-configs --entity-type users/clients`) and their
enforcement on Produce and Fetch (semantics.quotas holds the table and the rates).

DescribeClientQuotas (48) needs DESCRIBE_CONFIGS on the cluster, AlterClientQuotas (49)
ALTER_CONFIGS, as on Kafka, when the authorizer is on.

Enforcement (KIP-13, KIP-219): a Produce is charged its request size, a Fetch the bytes it answers.
Over the quota, the answer carries throttle_time_ms and the connection is muted (not read) for that
long after the answer is sent; for versions older than KIP-219's (Produce < 6, Fetch < 8) the
answer itself is held back that long, as Kafka does. A throttled Fetch is answered empty (its bytes
are not charged), and a Fetch never asks for more than the quota allows over the quota window.
"""
from __future__ import annotations

import os

import gateway.kafka.authz as authz
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from security.acl import Operation
from semantics import quotas
from semantics.quotas import ClientQuotas, QuotaError

INVALID_REQUEST = 42
CLIENT_THROTTLES_FROM = {apis.PRODUCE.key: 6, apis.FETCH.key: 8}  # KIP-219: the client waits itself


def quotas_of(app) -> ClientQuotas:
    """The app's quota table, made on first use from `<store>/config/client_quotas.json`."""
    state = app.kafka
    table = getattr(state, "client_quotas", None)
    if table is None:
        table = state.client_quotas = ClientQuotas(os.path.join(app.store.path, "config"))
    return table


def _user(ctx) -> str:
    return ctx.principal.partition(":")[2] or ctx.principal


def _denied(ctx, operation: Operation) -> bool:
    return ctx.app.security is not None and bool(authz.cluster_error(ctx, operation))


def _throttle(ctx, seconds: float) -> int:
    """Mute the connection for `seconds` after this answer; the answer's throttle_time_ms."""
    if seconds > 0 and ctx.conn is not None:
        ctx.conn.mute_s = max(getattr(ctx.conn, "mute_s", 0.0), seconds)
    return int(seconds * 1000)


def client_throttles(api_key: int, version: int) -> bool:
    """Does the client itself wait out throttle_time_ms (KIP-219), so the answer goes out at once?"""
    return version >= CLIENT_THROTTLES_FROM.get(api_key, 0)


# ------------------------------------------------------------ enforcement hooks
def produce_throttle_ms(ctx, request_bytes: int) -> int:
    """Charge a Produce request; its throttle_time_ms (0 under the quota)."""
    seconds = quotas_of(ctx.app).record(quotas.PRODUCE_KEY, _user(ctx), ctx.client_id, request_bytes)
    return _throttle(ctx, seconds)


def fetch_max_bytes(ctx, max_bytes: int) -> int:
    """A consumer's Fetch carries at most what its quota allows over the quota window."""
    if ctx.request.get("replica_id", -1) >= 0:
        return max_bytes
    limit = quotas_of(ctx.app).max_window_bytes(quotas.FETCH_KEY, _user(ctx), ctx.client_id)
    return max_bytes if limit is None else min(max_bytes, limit)


def fetch_throttle_ms(ctx, answered_bytes: int) -> int:
    """Charge a consumer's Fetch answer; over the quota the charge is taken back (the answer goes out
    empty) and the throttle time is returned."""
    if ctx.request.get("replica_id", -1) >= 0:
        return 0
    table, user = quotas_of(ctx.app), _user(ctx)
    seconds = table.record(quotas.FETCH_KEY, user, ctx.client_id, answered_bytes)
    if seconds > 0:
        table.unrecord(quotas.FETCH_KEY, user, ctx.client_id, answered_bytes)
    return _throttle(ctx, seconds)


# ------------------------------------------------------------ the admin API
def _entity(components: list[tuple[str, str | None]]) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in components]


@handler(apis.DESCRIBE_CLIENT_QUOTAS)
async def describe_client_quotas(ctx: RequestContext):
    if _denied(ctx, Operation.DESCRIBE_CONFIGS):
        return {"error_code": authz.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed.",
                "entries": None}
    filters = [(c["entity_type"], c["match_type"], c["match"]) for c in ctx.request["components"]]
    refused = quotas.describe_filter_error(filters)
    if refused:
        return {"error_code": refused[0], "error_message": refused[1], "entries": None}
    found = quotas_of(ctx.app).describe(filters, ctx.request["strict"])
    return {"error_code": 0, "error_message": "", "entries": [
        {"entity": _entity(list(key)), "values": [{"key": k, "value": v} for k, v in sorted(values.items())]}
        for key, values in found]}


@handler(apis.ALTER_CLIENT_QUOTAS)
async def alter_client_quotas(ctx: RequestContext):
    denied = _denied(ctx, Operation.ALTER_CONFIGS)
    table = quotas_of(ctx.app)
    results = []
    for entry in ctx.request["entries"]:
        components = list(dict((e["entity_type"], e["entity_name"]) for e in entry["entity"]).items())
        code, message = 0, None
        if denied:
            code, message = authz.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        else:
            try:
                table.alter(components, [(o["key"], o["value"], o["remove"]) for o in entry["ops"]],
                            ctx.request["validate_only"])
            except QuotaError as exc:
                code, message = INVALID_REQUEST, str(exc)
        results.append({"error_code": code, "error_message": message, "entity": _entity(components)})
    return {"entries": results}
