"""Partition placement APIs on a broker that holds every partition alone: DescribeTopicPartitions (75,
KIP-966's paged describe), ElectLeaders (43), AlterPartitionReassignments (45) and
ListPartitionReassignments (46).

Each answers what a single-node Kafka 4.x answers (checked against one): every partition is led by its
preferred and only replica, so an election is ELECTION_NOT_NEEDED, a reassignment onto the current
replica set completes at once, one naming another broker is INVALID_REPLICA_ASSIGNMENT, and no
reassignment is ever in progress. In a cluster (docs/cluster.md) placements are the cluster's own and
are not moved by these APIs. Authorization (Kafka's rules) is checked here: DESCRIBE on each topic,
ALTER on the cluster for elections and reassignments, DESCRIBE on the cluster for the listing.
"""
from __future__ import annotations

import gateway.kafka.authz as authz
import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.metadata import is_internal, partition_count_of, partition_entries, visible_names
from gateway.kafka.registry import NODE_ID, RequestContext, handler
from gateway.kafka.topics import topic_id
from security.acl import Operation as Op, ResourceType as Res

INVALID_REPLICA_ASSIGNMENT = 39
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
PARTITION_LIMIT = 2000  # Kafka's max.request.partition.size.limit
ZERO_ID = bytes(16)
CLUSTER_DENIED = authz.CLUSTER_AUTHORIZATION_FAILED


# ------------------------------------------------------------ DescribeTopicPartitions
def _topic_entry(ctx, name: str, code: int, partitions: list) -> dict:
    ok = code == errors.NONE
    return {"error_code": code, "name": name, "topic_id": topic_id(ctx.app, name) if ok else ZERO_ID,
            "is_internal": ok and is_internal(name), "partitions": partitions,
            "topic_authorized_operations": authz.operations(ctx, Res.TOPIC, name)}


def _described_partitions(app, name: str, count: int, first: int, room: int) -> list[dict]:
    return [dict(p, leader_epoch=max(p["leader_epoch"], 0), eligible_leader_replicas=[], last_known_elr=[])
            for p in partition_entries(app, name, count)[first:first + room]]


@handler(apis.DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions(ctx: RequestContext):
    """Topics in name order from the cursor on, at most `response_partition_limit` partitions (capped as
    Kafka caps it); `next_cursor` names the first partition left out. An empty topic list means every
    topic the principal may DESCRIBE."""
    app, req = ctx.app, ctx.request
    cursor = req.get("cursor")
    asked = sorted({t["name"] for t in req["topics"]})
    listing = not asked
    if cursor is not None and not listing and cursor["topic_name"] not in asked:
        return {"topics": [_topic_entry(ctx, n, errors.INVALID_REQUEST, []) for n in asked], "next_cursor": None}
    names = [n for n in visible_names(app) if authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, n, log=False)] \
        if listing else asked
    room = min(max(req["response_partition_limit"], 1), PARTITION_LIMIT)
    out, next_cursor = [], None
    for name in names:
        first = 0
        if cursor is not None:
            if name < cursor["topic_name"]:
                continue
            if name == cursor["topic_name"]:
                first = max(cursor["partition_index"], 0)
        if not listing and not authz.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name):
            out.append(_topic_entry(ctx, name, authz.TOPIC_AUTHORIZATION_FAILED, []))
            continue
        count = partition_count_of(app, name)
        if count is None:
            out.append(_topic_entry(ctx, name, errors.UNKNOWN_TOPIC_OR_PARTITION, []))
            continue
        if room == 0:
            next_cursor = {"topic_name": name, "partition_index": first}
            break
        parts = _described_partitions(app, name, count, first, room)
        room -= len(parts)
        out.append(_topic_entry(ctx, name, errors.NONE, parts))
        if first + len(parts) < count:
            next_cursor = {"topic_name": name, "partition_index": first + len(parts)}
            break
    return {"topics": out, "next_cursor": next_cursor}


# ------------------------------------------------------------ ElectLeaders
def _election_result(app, topic: str, partition: int) -> tuple[int, str | None]:
    count = partition_count_of(app, topic)
    if count is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= partition < count:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}"
    placed = app.ownership.assignment(topic, partition) if app.ownership.clustered else None
    if placed is not None and placed.leader != placed.replicas[0]:
        return PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."
    return ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."


@handler(apis.ELECT_LEADERS)
async def elect_leaders(ctx: RequestContext):
    """Preferred and unclean elections alike find each partition led by its preferred replica. Asked for
    every partition (null), Kafka lists only the partitions it elected: none."""
    asked = ctx.request["topic_partitions"]
    denied = not authz.allowed(ctx, Op.ALTER, Res.CLUSTER)
    results = []
    for t in asked or []:
        parts = []
        for p in t["partitions"]:
            code, message = (CLUSTER_DENIED, authz.MESSAGES[CLUSTER_DENIED]) if denied \
                else _election_result(ctx.app, t["topic"], p)
            parts.append({"partition_id": p, "error_code": code, "error_message": message})
        results.append({"topic": t["topic"], "partition_result": parts})
    return {"error_code": CLUSTER_DENIED if denied else errors.NONE, "replica_election_results": results}


# ------------------------------------------------------------ partition reassignments
def _reassignment_result(app, topic: str, partition: int, replicas: list | None) -> tuple[int, str | None]:
    count = partition_count_of(app, topic)
    if count is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not 0 <= partition < count:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}."
    if replicas is None:  # a cancellation: nothing is ever being reassigned
        return NO_REASSIGNMENT_IN_PROGRESS, None
    if not replicas:
        return INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    brokers = set(app.ownership.live()) if app.ownership.clustered else {NODE_ID}
    seen = set()
    for b in replicas:
        if b in seen:
            return INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker {b} more than once."
        if b not in brokers:
            return INVALID_REPLICA_ASSIGNMENT, \
                f"The manual partition assignment includes broker {b}, but no such broker is registered."
        seen.add(b)
    current = [p["replica_nodes"] for p in partition_entries(app, topic, partition + 1)][partition]
    if list(replicas) != list(current):
        return INVALID_REPLICA_ASSIGNMENT, "The gateway's cluster places replicas itself; they cannot be moved " \
                                           "(docs/cluster.md)."
    return errors.NONE, None


@handler(apis.ALTER_PARTITION_REASSIGNMENTS)
async def alter_partition_reassignments(ctx: RequestContext):
    req = ctx.request
    denied = not authz.allowed(ctx, Op.ALTER, Res.CLUSTER)
    responses = []
    for t in req["topics"]:
        parts = []
        for p in t["partitions"]:
            code, message = (CLUSTER_DENIED, authz.MESSAGES[CLUSTER_DENIED]) if denied \
                else _reassignment_result(ctx.app, t["name"], p["partition_index"], p["replicas"])
            parts.append({"partition_index": p["partition_index"], "error_code": code, "error_message": message})
        responses.append({"name": t["name"], "partitions": parts})
    return {"allow_replication_factor_change": req.get("allow_replication_factor_change", True),
            "error_code": CLUSTER_DENIED if denied else errors.NONE,
            "error_message": authz.MESSAGES[CLUSTER_DENIED] if denied else None, "responses": responses}


@handler(apis.LIST_PARTITION_REASSIGNMENTS)
async def list_partition_reassignments(ctx: RequestContext):
    """No reassignment is ever in progress: an empty list (Kafka names no unknown topic here either)."""
    if not authz.allowed(ctx, Op.DESCRIBE, Res.CLUSTER):
        return {"error_code": CLUSTER_DENIED, "error_message": authz.MESSAGES[CLUSTER_DENIED], "topics": []}
    return {"error_code": errors.NONE, "error_message": None, "topics": []}
