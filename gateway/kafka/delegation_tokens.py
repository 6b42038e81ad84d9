"""Delegation tokens (KIP-48): CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken
(40), DescribeDelegationToken (41) on `security.tokens`, with Kafka 4.3's checks in Kafka's order:
only over SASL and never with a token login (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), a token for another
owner needs CREATE_TOKENS on that User, renewers must be Users, no secret key means
DELEGATION_TOKEN_AUTH_DISABLED; renew and expire by the owner, the requester or a renewer; describe
shows a principal its own tokens and those it may DESCRIBE (the token) or DESCRIBE_TOKENS (the owner).
"""
from __future__ import annotations

import time

import gateway.kafka.authz as authz
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from security.acl import Operation, ResourceType

NONE = 0
TOKEN_AUTH_DISABLED = 61
TOKEN_REQUEST_NOT_ALLOWED = 64
TOKEN_AUTHORIZATION_FAILED = 65
INVALID_PRINCIPAL_TYPE = 67
USER_TYPE = "User"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _split(principal: str) -> tuple[str, str]:
    kind, _sep, name = principal.partition(":")
    return kind, name


def _token_requests_allowed(ctx) -> bool:
    return bool(getattr(ctx.conn, "may_manage_tokens", False))


def _refused(ctx) -> int:
    """NONE, or why no token request is served on this connection."""
    if not _token_requests_allowed(ctx):
        return TOKEN_REQUEST_NOT_ALLOWED
    ctx.app.authentication.refresh()  # tokens another gateway process wrote meanwhile
    return NONE if ctx.app.authentication.tokens.enabled else TOKEN_AUTH_DISABLED


@handler(apis.CREATE_DELEGATION_TOKEN)
async def create_delegation_token(ctx: RequestContext):
    req, requester = ctx.request, ctx.principal
    owner_name = req.get("owner_principal_name")
    owner = f"{req.get('owner_principal_type')}:{owner_name}" if owner_name else requester
    answer = {"error_code": NONE, "principal_type": _split(owner)[0], "principal_name": _split(owner)[1],
              "token_requester_principal_type": _split(requester)[0],
              "token_requester_principal_name": _split(requester)[1], "issue_timestamp_ms": -1,
              "expiry_timestamp_ms": -1, "max_timestamp_ms": -1, "token_id": "", "hmac": b"", "throttle_time_ms": 0}
    if not _token_requests_allowed(ctx):
        return {**answer, "error_code": TOKEN_REQUEST_NOT_ALLOWED}
    if owner != requester and not authz.allowed(ctx, Operation.CREATE_TOKENS, ResourceType.USER, owner):
        return {**answer, "error_code": TOKEN_AUTHORIZATION_FAILED}
    if any(r["principal_type"] != USER_TYPE for r in req["renewers"]):
        return {**answer, "error_code": INVALID_PRINCIPAL_TYPE}
    error = _refused(ctx)
    if error:
        return {**answer, "error_code": error}
    renewers = [f"{r['principal_type']}:{r['principal_name']}" for r in req["renewers"]]
    token = ctx.app.authentication.tokens.create(owner, requester, renewers, req["max_lifetime_ms"], _now_ms())
    return {**answer, "issue_timestamp_ms": token.issue_ms, "expiry_timestamp_ms": token.expiry_ms,
            "max_timestamp_ms": token.max_ms, "token_id": token.token_id, "hmac": token.hmac}


async def _change_expiry(ctx: RequestContext, change, period_field: str) -> dict:
    """Renew or expire: `change` names the TokenStore method (renew, expire)."""
    error = _refused(ctx)
    if error == NONE:
        tokens = ctx.app.authentication.tokens
        error, expiry = getattr(tokens, change)(bytes(ctx.request["hmac"]), ctx.principal,
                                                ctx.request[period_field], _now_ms())
    return {"error_code": error, "expiry_timestamp_ms": expiry if error == NONE else -1, "throttle_time_ms": 0}


@handler(apis.RENEW_DELEGATION_TOKEN)
async def renew_delegation_token(ctx: RequestContext):
    return await _change_expiry(ctx, "renew", "renew_period_ms")


@handler(apis.EXPIRE_DELEGATION_TOKEN)
async def expire_delegation_token(ctx: RequestContext):
    return await _change_expiry(ctx, "expire", "expiry_time_period_ms")


def _visible(ctx, token, owners) -> bool:
    """Kafka's DelegationTokenManager.filterToken."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    if token.owner_or_renewer(ctx.principal):
        return True
    return (authz.allowed(ctx, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id, log=False)
            or authz.allowed(ctx, Operation.DESCRIBE_TOKENS, ResourceType.USER, token.owner, log=False))


def _described(token) -> dict:
    return {"principal_type": _split(token.owner)[0], "principal_name": _split(token.owner)[1],
            "token_requester_principal_type": _split(token.requester)[0],
            "token_requester_principal_name": _split(token.requester)[1], "issue_timestamp": token.issue_ms,
            "expiry_timestamp": token.expiry_ms, "max_timestamp": token.max_ms, "token_id": token.token_id,
            "hmac": token.hmac, "renewers": [dict(zip(("principal_type", "principal_name"), _split(r)))
                                             for r in token.renewers]}


@handler(apis.DESCRIBE_DELEGATION_TOKEN)
async def describe_delegation_token(ctx: RequestContext):
    error = _refused(ctx)
    if error:
        return {"error_code": error, "tokens": [], "throttle_time_ms": 0}
    wanted = ctx.request["owners"]
    owners = None if wanted is None else [f"{o['principal_type']}:{o['principal_name']}" for o in wanted]
    if owners == []:
        return {"error_code": NONE, "tokens": [], "throttle_time_ms": 0}
    tokens = [t for t in ctx.app.authentication.tokens.tokens() if _visible(ctx, t, owners)]
    return {"error_code": NONE, "tokens": [_described(t) for t in tokens], "throttle_time_ms": 0}
