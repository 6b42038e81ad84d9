"""Metadata: this broker leads every partition of every topic (auto-creating topics when allowed)."""
from __future__ import annotations

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.registry import CLUSTER_ID, NODE_ID, RequestContext, handler


def broker_list(ctx: RequestContext) -> list[dict]:
    """This broker, at the address and port the client reached it on."""
    return [{"node_id": NODE_ID, "broker_id": NODE_ID, "host": ctx.app.config.advertised,
             "port": ctx.local_port, "rack": None}]


def topic_metadata(name: str, cfg, error: int) -> dict:
    if cfg is None:
        return {"error_code": error, "name": name, "partitions": []}
    return {"error_code": errors.NONE, "name": name, "topic_id": topics.topic_id(name), "is_internal": False,
            "partitions": [
        {"error_code": errors.NONE, "partition_index": p, "leader_id": NODE_ID, "leader_epoch": -1,
         "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
        for p in range(topics.partition_count(cfg))]}


@handler(apis.METADATA)
async def metadata(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    wanted = req["topics"]
    out = []
    if wanted is None or (ctx.version == 0 and not wanted):
        for name in sorted(app.store.topics.names()):
            cfg = app.store.topics.get(name)
            if cfg is not None:
                out.append(topic_metadata(name, cfg, errors.NONE))
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
            cfg, err = topics.lookup(app, name, auto)
            out.append(topic_metadata(name, cfg, err))
    return {"brokers": broker_list(ctx), "cluster_id": CLUSTER_ID, "controller_id": NODE_ID, "topics": out}
