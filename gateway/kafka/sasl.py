"""SaslHandshake (17) and SaslAuthenticate (36) on SASL listeners (`security.sasl.SaslSession` does the work).
After a SaslHandshake v0 the client sends its SASL tokens bare (size-prefixed, no request header) and gets
the server's the same way, as Kafka's pre-1.0 clients do; a failed token closes the connection.

On a listener without SASL Kafka answers a handshake with ILLEGAL_SASL_STATE; so do we. Re-authentication
(KIP-368) is not offered: session_lifetime_ms is 0, which tells clients the session never expires
(as Kafka does with `connections.max.reauth.ms` unset); docs/security.md.
"""
from __future__ import annotations

from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from security.sasl import ILLEGAL_SASL_STATE, NONE


@handler(apis.SASL_HANDSHAKE)
async def sasl_handshake(ctx: RequestContext):
    session = getattr(ctx.conn, "sasl", None)
    if session is None:
        return {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}
    ctx.app.authentication.refresh()  # users written meanwhile by another process can log in
    error, mechanisms = session.handshake(ctx.request["mechanism"])
    if error != NONE:
        session.failed = True  # Kafka closes the connection after a failed handshake
    elif ctx.version == 0:  # the client's tokens follow bare, without SaslAuthenticate (gateway.kafka.connection)
        ctx.conn.unframed_sasl = True
    return {"error_code": error, "mechanisms": mechanisms}


@handler(apis.SASL_AUTHENTICATE)
async def sasl_authenticate(ctx: RequestContext):
    session = getattr(ctx.conn, "sasl", None)
    if session is None:
        return {"error_code": ILLEGAL_SASL_STATE, "error_message": "SASL is not enabled on this listener",
                "auth_bytes": b"", "session_lifetime_ms": 0}
    error, message, out = session.authenticate(bytes(ctx.request["auth_bytes"]))
    if error == NONE and session.authenticated:
        ctx.conn.authenticated(session.principal)
    elif error != NONE:
        session.failed = True
    return {"error_code": error, "error_message": message, "auth_bytes": out, "session_lifetime_ms": 0}
