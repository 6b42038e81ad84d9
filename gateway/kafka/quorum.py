"""DescribeQuorum (55): the KRaft metadata quorum a Kafka 4.x broker describes to clients
(`kafka-metadata-quorum --bootstrap-server ... describe --status`, AdminClient.describeMetadataQuorum).

The gateway has no Raft log; its topic table is its metadata, kept by this process alone (or, in a
cluster, by the controller gateway). So the quorum is one voter, the controller, leading at epoch 1
(a fresh KRaft quorum's first elected epoch) with nothing to catch up: its high watermark and log end
are the number of the newest topic-table write (`store.config`), the gateway's nearest
thing to a metadata log offset. Any partition other than
`__cluster_metadata`-0 is answered as Kafka answers it: UNKNOWN_TOPIC_OR_PARTITION.
"""
from __future__ import annotations

import time

import gateway.cluster.routes as routes
import gateway.kafka.authz as authz
import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.registry import NODE_ID, RequestContext, handler
from security.acl import Operation as Op, ResourceType as Res

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
NOT_HOSTED = "This server does not host this topic-partition."


def _partition(ctx, topic: str, index: int, leader: int) -> dict:
    if (topic, index) != (METADATA_TOPIC, 0):
        return {"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": NOT_HOSTED, "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
                "current_voters": [], "observers": []}
    offset = ctx.app.store.topics.data_version["counter"]  # one metadata record per topic change
    now = int(time.time() * 1000)
    voter = {"replica_id": leader, "replica_directory_id": bytes(16), "log_end_offset": offset,
             "last_fetch_timestamp": now, "last_caught_up_timestamp": now}
    return {"partition_index": index, "error_code": errors.NONE, "error_message": "", "leader_id": leader,
            "leader_epoch": LEADER_EPOCH, "high_watermark": offset, "current_voters": [voter], "observers": []}


def _endpoint(ctx, leader: int) -> dict:
    """Where the controller takes requests: this gateway's port the client reached, or the cluster
    controller's registered Kafka address."""
    for b in routes.kafka_brokers(ctx.app) if ctx.app.ownership.clustered else []:
        if b["node_id"] == leader:
            return {"name": "CONTROLLER", "host": b["host"], "port": b["port"]}
    return {"name": "CONTROLLER", "host": ctx.app.config.advertised, "port": ctx.local_port}


@handler(apis.DESCRIBE_QUORUM)
async def describe_quorum(ctx: RequestContext):
    """DESCRIBE on the cluster, as Kafka requires; the controller's endpoint is the Kafka port the
    client reached (the gateway serves controller requests there too)."""
    if not authz.allowed(ctx, Op.DESCRIBE, Res.CLUSTER):
        code = authz.CLUSTER_AUTHORIZATION_FAILED
        return {"error_code": code, "error_message": authz.MESSAGES[code], "topics": [], "nodes": []}
    leader = routes.controller_id(ctx.app) if ctx.app.ownership.clustered else NODE_ID
    out = [{"topic_name": t["topic_name"], "partitions": [_partition(ctx, t["topic_name"], p["partition_index"], leader)
                                                          for p in t["partitions"]]} for t in ctx.request["topics"]]
    hosted = any(p["error_code"] == errors.NONE for t in out for p in t["partitions"])
    nodes = [{"node_id": leader, "listeners": [_endpoint(ctx, leader)]}] if hosted else []
    return {"error_code": errors.NONE, "error_message": "", "topics": out, "nodes": nodes}
