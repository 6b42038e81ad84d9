"""Metadata: this broker leads every partition of every topic (auto-creating topics when allowed).

With --authorizer acl (as Kafka): a listing shows only the topics the principal may DESCRIBE; a named
topic it may not describe is TOPIC_AUTHORIZATION_FAILED; auto-creation needs CREATE on the cluster
or the topic; the *_authorized_operations fields are filled when asked for."""
from __future__ import annotations

import gateway.cluster.routes as routes
import gateway.kafka.authz as authz
import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.cluster.ownership import clustered
from gateway.kafka.registry import CLUSTER_ID, NODE_ID, RequestContext, handler
from security.acl import Operation as Op, ResourceType as Res


# RocketMQ's own topics, internal as Kafka's __consumer_offsets (hidden from listings and regex
# subscriptions); a group's %RETRY% and %DLQ% topics are not: users read and replay them.
INTERNAL = ("RMQ_SYS_", "SCHEDULE_TOPIC_", "TBW102")
# Kafka's committed-offsets topic, listed as Kafka lists it (internal, offsets.topic.num.partitions = 50):
# the offset table stays the gateway's source of truth, the topic its mirror (gateway/kafka/offsets_topic.py);
# produce to it is refused (INVALID_TOPIC_EXCEPTION).
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50
# Kafka's other internal topics (Topic.isInternal): the gateway keeps transactions and share-group state
# in its own tables, so they never exist here unless a client created them by name. Every Metadata entry
# naming one says is_internal, as Kafka's does, even an error; a Metadata that may auto-create does not
# make one (Kafka's coordinators make theirs; a plain topic under that name would take client writes).
KAFKA_INTERNAL = ("__transaction_state", "__share_group_state")


def broker_list(ctx: RequestContext) -> list[dict]:
    """This broker, at the address and port the client reached it on (or its listener's advertised one);
    in a cluster every live gateway at its registered address."""
    if clustered(ctx.app):
        return routes.kafka_brokers(ctx.app)
    listener = getattr(ctx.conn, "listener", None)
    host = (listener and listener.advertised_host) or ctx.app.config.advertised
    port = (listener and listener.advertised_port) or ctx.local_port
    return [{"node_id": NODE_ID, "broker_id": NODE_ID, "host": host, "port": port, "rack": None}]


def is_internal(name: str) -> bool:
    return name == OFFSETS_TOPIC or name in KAFKA_INTERNAL or name.startswith(INTERNAL)


def partition_entries(app, name: str, count: int) -> list[dict]:
    """Each partition's leader, replicas and in-sync set: this broker alone, or the cluster's placement."""
    if app is not None and app.ownership.clustered:
        return routes.kafka_partitions(app, name, count)
    return [{"error_code": errors.NONE, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": -1,
             "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []} for p in range(count)]


def partition_count_of(app, name: str) -> int | None:
    """How many partitions a client sees in topic `name` (the offsets topic included); None: no such topic."""
    if name == OFFSETS_TOPIC:
        return OFFSETS_PARTITIONS
    cfg = app.store.topics.get(name) if name else None
    return None if cfg is None else topics.partition_count(cfg)


def topic_metadata(name: str, cfg, error: int, app=None) -> dict:
    if error != errors.NONE or (cfg is None and name != OFFSETS_TOPIC):
        # Kafka: is_internal on error entries too, but never for a topic the principal may not describe
        internal = error != authz.TOPIC_AUTHORIZATION_FAILED and name is not None and is_internal(name)
        return {"error_code": error, "name": name, "is_internal": internal, "partitions": []}
    count = OFFSETS_PARTITIONS if cfg is None else topics.partition_count(cfg)
    return {"error_code": errors.NONE, "name": name, "topic_id": topics.offsets_topic_id() if cfg is None else cfg.topic_id,
            "is_internal": is_internal(name), "partitions": partition_entries(app, name, count)}


def visible_names(app) -> list[str]:
    """Every topic a listing shows, sorted: the store's (but those a cluster member is still writing
    to etcd) and the offsets topic."""
    return sorted({*(n for n in app.store.topics.names() if not app.ownership.creating(n)), OFFSETS_TOPIC})


@handler(apis.METADATA)
async def metadata(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    wanted = req["topics"]
    out = []
    if wanted is None or (ctx.version == 0 and not wanted):
        for name in visible_names(app):
            cfg = app.store.topics.get(name)
            if (cfg is not None or name == OFFSETS_TOPIC) and authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name,
                                                                             log=False):
                out.append(topic_metadata(name, cfg, errors.NONE, app))
    else:
        auto = req.get("allow_auto_topic_creation", True)
        for t in wanted:
            name = t["name"]
            if name is None:  # v10+: a topic asked for by id
                name = topics.name_of_topic_id(app, t["topic_id"])
                if name is None:
                    out.append({"error_code": errors.UNKNOWN_TOPIC_ID, "name": None, "topic_id": t["topic_id"],
                                "partitions": []})
                    continue
            if not authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name):
                out.append(topic_metadata(name, None, authz.TOPIC_AUTHORIZATION_FAILED))
                continue
            if name == OFFSETS_TOPIC:
                out.append(topic_metadata(name, None, errors.NONE, app))
                continue
            if name in KAFKA_INTERNAL and app.store.topics.get(name) is None:
                out.append(topic_metadata(name, None, errors.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            may_create = auto and (app.store.topics.get(name) is not None
                                   or authz.allowed(ctx, Op.CREATE, Res.CLUSTER, log=False)
                                   or authz.allowed(ctx, Op.CREATE, Res.TOPIC, name))
            cfg, err = topics.lookup(app, name, may_create)
            out.append(topic_metadata(name, cfg, err, app))
    include_ops = req.get("include_topic_authorized_operations", False)
    for t in out:
        t["topic_authorized_operations"] = authz.operations(ctx, Res.TOPIC, t["name"] or "", include_ops)
    cluster_ops = authz.operations(ctx, Res.CLUSTER, wanted=req.get("include_cluster_authorized_operations", False))
    controller = routes.controller_id(app) if app.ownership.clustered else NODE_ID
    return {"brokers": broker_list(ctx), "cluster_id": CLUSTER_ID, "controller_id": controller, "topics": out,
            "cluster_authorized_operations": cluster_ops}
