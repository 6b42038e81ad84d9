"""QueryRoute, Heartbeat, QueryAssignment, NotifyClientTermination: where a topic's queues are
and which queues a consumer group pops (every queue of a broker, as one assignment of queue -1).
One gateway: all on it, one broker "broker-a" whose endpoints are the ones the client used. In a
cluster (--cluster), a cluster topic's route lists each of its queues p, in order, as queue p of
its own broker `queue-<p>` at the gRPC endpoint of the gateway leading it now (`logic_queues`):
the name and id a client keys the queue by never change when leaders move (docs/cluster.md,
"RocketMQ 5 gRPC"). Local topics and QueryAssignment follow the NameServer route
(gateway.cluster.routes): one broker per live gateway leading queues of the topic (broker-<node id>,
at the gRPC endpoint it registered), with broker-local queue ids; a gateway without --grpc-port is
left out.
Gateways sharing a diskless bucket without a cluster: a diskless topic's broker is at the bucket's
POP owner's endpoint (`pop_owner_endpoints`)."""
from __future__ import annotations

import ipaddress

from gateway.cluster import routes
from gateway.cluster.ownership import clustered
from gateway.grpc.common import Code, RpcError, d, ok, rpc, s
from gateway.cluster.routes import MOCK_BROKER
from gateway.remoting.common import BROKER_NAME, client_group_error, ensure_topic, legal_topic
from semantics.diskless import is_diskless

LOGIC_BROKER = "queue-"  # + the cluster queue id: a cluster topic's queue's broker name in gRPC routes
ACCEPTED_TYPES = [d.MessageType.NORMAL, d.MessageType.FIFO, d.MessageType.DELAY, d.MessageType.TRANSACTION]
TYPED = {"NORMAL", "FIFO", "DELAY", "TRANSACTION", "PRIORITY", "LITE"}


def accepted_types(cfg) -> list[int]:
    """The message types a topic's queues accept, as the 5.5 proxy routes them: its `message.type`
    alone (PRIORITY and LITE included), else the four classic ones (the SDK checks each send)."""
    kind = cfg.attributes.get("message.type", "")
    return [d.MessageType.Value(kind)] if kind in TYPED else ACCEPTED_TYPES


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


def brokers(ctx, req, cfg) -> list[tuple[object, int]]:
    """(Broker, how many queues of the topic it serves) for each broker of the topic's route."""
    asked = req.endpoints if req.HasField("endpoints") else None
    if not clustered(ctx.app):
        owner = pop_owner_endpoints(ctx.app, cfg)
        return [(d.Broker(name=BROKER_NAME, id=0, endpoints=owner) if owner is not None else broker(ctx, asked),
                 max(cfg.read_queues, cfg.write_queues))]
    members = {routes.broker_name(n): m for n, m in ctx.app.ownership.live().items() if m.grpc_port}
    out = []
    for queue_data in routes.rocketmq_route(ctx.app, req.topic.name, cfg)["queueDatas"]:
        member = members.get(queue_data["brokerName"])
        if member is not None:
            address = d.Endpoints(scheme=_scheme(member.host), addresses=[d.Address(host=member.host,
                                                                                    port=member.grpc_port)])
            out.append((d.Broker(name=queue_data["brokerName"], id=0, endpoints=address),
                        queue_data["writeQueueNums"]))
    return out


def _member_endpoints(member):
    return d.Endpoints(scheme=_scheme(member.host), addresses=[d.Address(host=member.host, port=member.grpc_port)])


def logic_queues(ctx, req, topic: str) -> list[tuple[object, int]]:
    """(Broker, queue id) of every queue p of a cluster topic, in order: broker `queue-<p>`, id p,
    at its leader's gRPC endpoint, or at this gateway's while it has no live leader with one (the
    queue stays listed, so a producer's hash over the route's queues keeps its meaning; this
    gateway then refuses or forwards what it cannot serve)."""
    node = ctx.app.ownership
    live, here = node.live(), endpoints(ctx, req.endpoints if req.HasField("endpoints") else None)
    out = []
    for p, a in enumerate(node.view.queues_of(topic)):
        leader = live.get(a.leader) if a is not None else None
        address = _member_endpoints(leader) if leader is not None and leader.grpc_port else here
        out.append((d.Broker(name=f"{LOGIC_BROKER}{p}", id=0, endpoints=address), p))
    return out


def logic_queue_id(mq) -> int | None:
    """The cluster queue id a request's MessageQueue names by a logic broker: `queue-<p>` with id p,
    or the remoting side's mock broker `__syslo__global__` with id p; None for another name. A
    `queue-<p>` with another id than p is BAD_REQUEST."""
    name = mq.broker.name
    if name == MOCK_BROKER:
        return mq.id
    if not name.startswith(LOGIC_BROKER) or not name[len(LOGIC_BROKER):].isdigit():
        return None
    if int(name[len(LOGIC_BROKER):]) != mq.id:
        raise RpcError(Code.BAD_REQUEST, f"broker {name!r} has queue {name[len(LOGIC_BROKER):]}, not {mq.id}")
    return mq.id


def pop_owner_endpoints(app, cfg):
    """A diskless topic's endpoints on a gateway (no cluster) that does not own POP of the bucket:
    the owner's (gateway.diskless_pop_owner), so that one group's receives through several gateways
    share one pop state; None otherwise."""
    owner = app.pop_remoting.owner
    address = owner.owner_grpc if owner is not None and is_diskless(cfg) else None
    if address is None:
        return None
    host, _, port = address.rpartition(":")
    return d.Endpoints(scheme=_scheme(host), addresses=[d.Address(host=host, port=int(port))])


def served_queues(app, topic: str) -> list[int] | None:
    """The cluster queue ids of `topic` a send or receive here uses: those this gateway leads; None
    for one gateway or a local topic (all of them). The request's broker name is not checked: the
    RocketMQ proxy serves a receive naming a broker it does not know from a queue it has. A gateway
    leading no queue of the topic (or fenced) answers FORBIDDEN, as the proxy does when it has no
    writable/readable queue: the SDK tries the next queue of its route (another broker)."""
    if not clustered(app):
        return None
    node = app.ownership
    if not node.assigned(topic):
        return None
    led = [q for q in range(len(node.view.queues_of(topic))) if node.owns(topic, q)]  # none while fenced
    if not led:
        raise RpcError(Code.FORBIDDEN, f"{node.broker_name} leads no queue of {topic} now; refresh the route")
    return led


def pulled_queue(app, topic: str, mq) -> int:
    """The cluster queue id a PullMessage / UpdateOffset / GetOffset / QueryOffset means: in a
    cluster, queue p of broker `queue-<p>` (the route's, `logic_queues`) is queue p, served by its
    leader only: at another gateway FORBIDDEN, so the client asks the endpoint of its refreshed
    route, under the same name and id. Unchanged for one gateway or a local topic. Routes before
    `logic_queues` named (broker-<node id>, broker-local id), still read as the remoting side
    translates them (gateway.cluster.remoting_queues). A broker the cluster does not know answers
    BAD_REQUEST (the proxy's INVALID_BROKER_NAME); another live gateway's broker, or no queue led
    here (or fenced), FORBIDDEN: nothing is forwarded."""
    if not clustered(app) or not app.ownership.assigned(topic):
        return mq.id
    node, name = app.ownership, mq.broker.name
    logic = logic_queue_id(mq)
    if logic is not None:
        total = len(node.view.queues_of(topic))
        if not 0 <= logic < total:
            raise RpcError(Code.BAD_REQUEST, f"{topic} has {total} queues, not queue {logic}")
        if not node.owns(topic, logic):
            a = node.assignment(topic, logic)
            raise RpcError(Code.FORBIDDEN, f"queue {logic} of {topic} is not led by {node.broker_name} now "
                                           f"(its leader: node {a.leader if a else -1}); refresh the route")
        return logic
    if name != node.broker_name:
        if name in {routes.broker_name(n) for n in node.live()}:
            raise RpcError(Code.FORBIDDEN, f"{name}'s queues are served at its own endpoint, "
                                           f"not {node.broker_name}'s; refresh the route")
        raise RpcError(Code.BAD_REQUEST, f"cannot find broker {name!r}")
    led = served_queues(app, topic)
    if not 0 <= mq.id < len(led):
        raise RpcError(Code.BAD_REQUEST, f"{name} leads {len(led)} queues of {topic}, not queue {mq.id}")
    return led[mq.id]


@rpc("QueryRoute")
async def query_route(ctx, req):
    cfg, name = topic_config(ctx.app, req.topic.name), req.topic.name
    if await ctx.app.ownership.published([name]):  # a route only once etcd has the topic (ownership.creating)
        raise RpcError(Code.TOPIC_NOT_FOUND, f"topic {name} is not in the cluster's etcd yet")
    if clustered(ctx.app) and ctx.app.ownership.assigned(name):
        listed = logic_queues(ctx, req, name)
    else:
        listed = [(b, qid) for b, count in brokers(ctx, req, cfg) for qid in range(count)]
    queues = [d.MessageQueue(topic=req.topic, id=qid, permission=_permission(cfg.perm), broker=b,
                             accept_message_types=accepted_types(cfg)) for b, qid in listed]
    return s.QueryRouteResponse(status=ok(), message_queues=queues)


@rpc("Heartbeat")
async def heartbeat(ctx, req):
    return s.HeartbeatResponse(status=ok())


@rpc("QueryAssignment")
async def query_assignment(ctx, req):
    error = client_group_error(req.group.name)  # as the 5.5 proxy answers (measured)
    if error:
        raise RpcError(Code.ILLEGAL_CONSUMER_GROUP, error)
    cfg = topic_config(ctx.app, req.topic.name, create=False)
    assignments = [d.Assignment(message_queue=d.MessageQueue(
        topic=req.topic, id=-1, permission=_permission(cfg.perm), broker=b, accept_message_types=accepted_types(cfg)))
        for b, _ in brokers(ctx, req, cfg)]
    return s.QueryAssignmentResponse(status=ok(), assignments=assignments)


@rpc("NotifyClientTermination")
async def notify_client_termination(ctx, req):
    ctx.app.grpc.clients.pop(ctx.client_id, None)
    return s.NotifyClientTerminationResponse(status=ok())
