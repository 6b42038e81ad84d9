"""In a cluster, one gateway serves the registry: the leader of `_schemas` queue 0, whose store has the
whole log and who alone appends to it, so ids come from exactly one writer. Every other gateway forwards
each registry request to it (as Confluent's followers forward writes to their leader) and relays the
answer, reads included: a schema registered through any gateway is readable through every other one as
soon as the first answered. `_schemas` is created (and placed over the live members, with
--default-replication-factor replicas) at the cluster's first registry request. A forwarded request reaching a gateway that does not lead either (a view
changing under a failover) is answered 50003, never forwarded again."""
from __future__ import annotations

import logging
from urllib.parse import quote

import httpx

from gateway.schema_registry.common import error
from semantics.schema_registry.log import QUEUE, TOPIC, ensure_topic

log = logging.getLogger("rocketgate.schema_registry")

FORWARDED = b"x-rocketgate-forwarded"
PASSED_HEADERS = (b"authorization", b"content-type", b"accept")
TIMEOUT_S = 15.0


def leader_of(gateway_app):
    """(forward?, leader): (False, None) when this gateway serves the registry (it leads `_schemas` or
    runs alone); else (True, the leading live member, None when unknown)."""
    ownership = gateway_app.ownership
    if not getattr(ownership, "clustered", False):
        return False, None
    if not ownership.assigned(TOPIC):  # the first request: place `_schemas` over the members up now
        ensure_topic(gateway_app.store)
    if ownership.owns(TOPIC, QUEUE):
        return False, None
    assignment = ownership.assignment(TOPIC, QUEUE)
    member = ownership.live().get(assignment.leader) if assignment is not None else None
    return True, member


def base_url(config, member) -> str:
    return f"{'https' if config.schema_registry_tls else 'http'}://{member.host}:{member.schema_registry_port}"


def registry_client(config, timeout: float = TIMEOUT_S) -> httpx.AsyncClient:
    """An HTTP client for a peer's registry port, with this gateway's TLS settings."""
    tls = config.schema_registry_tls
    verify = (config.tls_ca or config.tls_cert) if tls else False
    cert = (config.tls_cert, config.tls_key) if tls and config.tls_ca else None
    return httpx.AsyncClient(timeout=timeout, verify=verify or False, cert=cert)


class ForwardToLeader:
    """ASGI middleware: serve here when this gateway leads `_schemas` (or runs alone), else relay."""

    def __init__(self, app, gateway_app) -> None:
        self.app = app
        self.gateway = gateway_app
        self._client: httpx.AsyncClient | None = None

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = registry_client(self.gateway.config)
        return self._client

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        forward, leader = leader_of(self.gateway)
        if not forward:
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        if FORWARDED in headers:
            return await error(500, 50003, "Error while forwarding the request to the leader: the receiving "
                               "gateway does not lead _schemas")(scope, receive, send)
        if leader is None or not leader.schema_registry_port:
            return await error(500, 50003, "Error while forwarding the request to the leader: no live leader "
                               "of _schemas serves the registry")(scope, receive, send)
        message = await receive()  # BufferedBody hands the whole body in one message
        path = scope.get("raw_path") or quote(scope["path"]).encode()
        url = base_url(self.gateway.config, leader) + path.decode("latin-1")
        query = scope.get("query_string", b"").decode("latin-1")
        if query:
            url += "?" + query
        passed = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items() if k in PASSED_HEADERS}
        passed[FORWARDED.decode()] = "1"
        try:
            answer = await self.client().request(scope["method"], url, content=message.get("body", b""),
                                                 headers=passed)
        except httpx.HTTPError as exc:
            log.warning("schema registry: forwarding to node %d failed: %s", leader.node_id, exc)
            return await error(500, 50003, f"Error while forwarding the request to the leader: {exc}")(
                scope, receive, send)
        await send({"type": "http.response.start", "status": answer.status_code,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.items()
                                if k.lower() in ("content-type", "www-authenticate")]
                    + [(b"content-length", str(len(answer.content)).encode())]})
        await send({"type": "http.response.body", "body": answer.content})
