"""QueryRoute, Heartbeat, QueryAssignment, NotifyClientTermination: where a topic's queues are
(all on this gateway: one broker "broker-a" whose endpoints are the ones the client used) and
which queues a consumer group pops (all of them, as one assignment of queue -1)."""
from __future__ import annotations

import ipaddress

from gateway.grpc.common import Code, RpcError, d, ok, rpc, s
from gateway.remoting.common import BROKER_NAME, ensure_topic, legal_topic

ACCEPTED_TYPES = [d.MessageType.NORMAL, d.MessageType.FIFO, d.MessageType.DELAY, d.MessageType.TRANSACTION]


def _scheme(host: str) -> int:
    try:
        return d.AddressScheme.IPv6 if ipaddress.ip_address(host).version == 6 else d.AddressScheme.IPv4
    except ValueError:
        return d.AddressScheme.DOMAIN_NAME


def endpoints(ctx, asked=None):
    """The endpoints clients reach this gateway at: those the client asked with, else the
    advertised host and the port this connection came in on."""
    if asked is not None and asked.addresses:
        return asked
    host = ctx.app.config.advertised
    port = ctx.call.conn.socket.getsockname()[1]
    return d.Endpoints(scheme=_scheme(host), addresses=[d.Address(host=host, port=port)])


def topic_config(app, name: str, create: bool = True):
    """The topic's config (auto-created when allowed); RpcError TOPIC_NOT_FOUND otherwise."""
    if not legal_topic(name):
        raise RpcError(Code.ILLEGAL_TOPIC, f"topic name {name!r} is illegal")
    cfg = ensure_topic(app, name) if create else app.store.topics.get(name)
    if cfg is None:
        raise RpcError(Code.TOPIC_NOT_FOUND, f"topic {name} does not exist")
    return cfg


def _permission(perm: int) -> int:
    readable, writable = bool(perm & 4), bool(perm & 2)
    if readable and writable:
        return d.Permission.READ_WRITE
    return d.Permission.READ if readable else d.Permission.WRITE if writable else d.Permission.NONE


def broker(ctx, asked=None):
    return d.Broker(name=BROKER_NAME, id=0, endpoints=endpoints(ctx, asked))


@rpc("QueryRoute")
async def query_route(ctx, req):
    cfg = topic_config(ctx.app, req.topic.name)
    b = broker(ctx, req.endpoints if req.HasField("endpoints") else None)
    queues = [d.MessageQueue(topic=req.topic, id=qid, permission=_permission(cfg.perm), broker=b,
                             accept_message_types=ACCEPTED_TYPES)
              for qid in range(max(cfg.read_queues, cfg.write_queues))]
    return s.QueryRouteResponse(status=ok(), message_queues=queues)


@rpc("Heartbeat")
async def heartbeat(ctx, req):
    return s.HeartbeatResponse(status=ok())


@rpc("QueryAssignment")
async def query_assignment(ctx, req):
    cfg = topic_config(ctx.app, req.topic.name, create=False)
    if not req.group.name:
        raise RpcError(Code.ILLEGAL_CONSUMER_GROUP, "the consumer group is empty")
    queue = d.MessageQueue(topic=req.topic, id=-1, permission=_permission(cfg.perm),
                           broker=broker(ctx, req.endpoints if req.HasField("endpoints") else None),
                           accept_message_types=ACCEPTED_TYPES)
    return s.QueryAssignmentResponse(status=ok(), assignments=[d.Assignment(message_queue=queue)])


@rpc("NotifyClientTermination")
async def notify_client_termination(ctx, req):
    ctx.app.grpc.clients.pop(ctx.client_id, None)
    return s.NotifyClientTerminationResponse(status=ok())
