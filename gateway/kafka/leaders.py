"""Leader discovery on errors (KIP-951): a partition answered NOT_LEADER_OR_FOLLOWER carries its
current leader and leader epoch, and the answer the endpoints of those leaders (Produce v10+, Fetch
v16+), so a client moves to the new leader after a failover without a Metadata round trip. Only a
cluster has other leaders; a single gateway's answers are left as they are."""
from __future__ import annotations

import gateway.cluster.routes as routes
import gateway.kafka.errors as errors

# (topic name key, partitions key, partition index key) of each answer's layout
FETCH_LAYOUT = ("topic", "partitions", "partition_index")
PRODUCE_LAYOUT = ("name", "partition_responses", "index")


def with_leader_hints(ctx, body: dict, layout: tuple[str, str, str]) -> dict:
    """`body` with `current_leader` on its NOT_LEADER_OR_FOLLOWER partitions and `node_endpoints`."""
    node = ctx.app.ownership
    if not node.clustered:
        return body
    topic_key, parts_key, index_key = layout
    live = node.live()
    endpoints = {}
    for t in body["responses"]:
        for p in t[parts_key]:
            if p.get("error_code") != errors.NOT_LEADER_OR_FOLLOWER or t[topic_key] is None:
                continue
            a = node.assignment(t[topic_key], p[index_key])
            if a is None or a.leader not in live:
                continue
            p["current_leader"] = {"leader_id": a.leader, "leader_epoch": a.epoch}
            endpoints[a.leader] = routes.kafka_broker(live[a.leader])
    body["node_endpoints"] = [{k: e[k] for k in ("node_id", "host", "port", "rack")}
                              for _, e in sorted(endpoints.items())]
    return body
