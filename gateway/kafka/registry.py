"""The Kafka handler table (a leaf module): `@handler(api)` registers `async fn(ctx) -> dict | None`.

A handler gets one `RequestContext` and returns the response body (the schema's dict for its
API and version), or None when nothing is sent back (acks=0 produce).
"""
from __future__ import annotations

import dataclasses

NODE_ID = 0  # this broker, the only one: leader, coordinator and controller of everything
CLUSTER_ID = "rocketgate-cluster"
HANDLERS: dict = {}  # api key -> handler


@dataclasses.dataclass(slots=True)
class RequestContext:
    """One decoded request and the facts of the connection it came on."""
    app: object
    version: int  # the request's API version
    request: dict  # the decoded request body (`codec.kafka.schema`)
    client_id: str
    peer_host: str  # the client's address
    local_port: int  # the port the client connected to (advertised back to it)
    principal: str = "User:ANONYMOUS"  # who the client authenticated as (SASL, mTLS)
    conn: object = None  # the connection (gateway.kafka.connection.Connection): SASL state, listener


def handler(api):
    """Register the decorated function as the handler of `api` (a `codec.kafka.apis.Api`)."""
    def register(fn):
        HANDLERS[api.key] = fn
        return fn
    return register
