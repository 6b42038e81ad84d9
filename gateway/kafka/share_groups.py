"""KIP-932 share-group APIs: ShareGroupHeartbeat, ShareGroupDescribe and the offset admin APIs
(DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) the Kafka tools use.

A share partition's start offset is the pop engine's first unfinished offset of (group, topic,
partition); -1 for a partition the group never consumed (as Kafka answers).
"""
from __future__ import annotations

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway import share_state
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics.share_groups import ASSIGNOR, NON_EMPTY_GROUP


def _by_ids(app, assignment: dict) -> dict:
    return {"topic_partitions": [{"topic_id": topics.topic_id(app, t), "partitions": ps}
                                 for t, ps in sorted(assignment.items())]}


@handler(apis.SHARE_GROUP_HEARTBEAT)
async def share_group_heartbeat(ctx: RequestContext):
    state = kafka_state(ctx.app)
    group_id = ctx.request["group_id"]
    if group_id and _is_other_group(ctx.app, group_id):
        return {"error_code": errors.INCONSISTENT_GROUP_PROTOCOL, "error_message": f"Group {group_id} is not a "
                "share group.", "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    resp = state.share_groups.heartbeat(ctx.request, ctx.client_id, "/" + ctx.peer_host)
    if resp.get("assignment") is not None:
        resp["assignment"] = _by_ids(ctx.app, resp["assignment"])
    return resp


@handler(apis.SHARE_GROUP_DESCRIBE)
async def share_group_describe(ctx: RequestContext):
    sg = kafka_state(ctx.app).share_groups
    out = []
    for group_id in ctx.request["group_ids"]:
        g = sg.groups.get(group_id)
        if g is None:
            out.append({"error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} not found.",
                        "group_id": group_id, "group_state": "Dead", "assignor_name": ASSIGNOR, "members": []})
            continue
        sg.expire(g)
        out.append({"error_code": errors.NONE, "group_id": group_id, "group_state": g.state(),
                    "group_epoch": g.epoch, "assignment_epoch": g.assignment_epoch, "assignor_name": ASSIGNOR,
                    "members": [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.epoch,
                                 "client_id": m.client_id, "client_host": m.client_host,
                                 "subscribed_topic_names": m.topics,
                                 "assignment": {"topic_partitions": [
                                     {"topic_id": topics.topic_id(ctx.app, t), "topic_name": t, "partitions": ps}
                                     for t, ps in sorted(g.target.get(m.member_id, {}).items()) if ps]}}
                                for m in g.members.values()]})
    return {"groups": out}


def is_share_group(app, group_id: str) -> bool:
    """A group the share coordinator knows (live or with configs), or with share-partition state."""
    sg = kafka_state(app).share_groups
    return group_id in sg.groups


class _OneProcess:
    """Every partition is this gateway's (the cluster's `gateway.cluster.share_offsets.ShareOffsets` otherwise)."""

    @staticmethod
    def leader_of(topic: str, p: int) -> None:
        return None

    @staticmethod
    def others() -> list[int]:
        return []


def _leaders(app):
    return kafka_state(app).share_offsets or _OneProcess


async def _described(app, group: str, wanted: list) -> dict:
    """(topic, partition) -> (start offset, lag) of the partitions asked for, each from its leader:
    here, or another gateway of a cluster (`gateway.cluster.share_offsets`); missing when it did not answer."""
    out, remote = {}, {}
    for name, p in wanted:
        leader = _leaders(app).leader_of(name, p)
        if leader is None:
            out[(name, p)] = share_state.start_and_lag(app, group, name, p)
        else:
            remote.setdefault(leader, []).append([name, p, 0])
    for leader, parts in remote.items():
        for t, p, start, lag in await _leaders(app).ask(leader, {"op": "describe", "group": group, "parts": parts}) or []:
            out[(t, p)] = (start, lag)
    return out


async def _group_queues(app, group: str) -> list[tuple[str, int]]:
    """(topic, partition) of every partition the group has state on, on every gateway."""
    found = set(app.pop.queues(group))
    for node in _leaders(app).others():
        found |= {(t, p) for t, p, _a, _b in await _leaders(app).ask(node, {"op": "queues", "group": group}) or []}
    return sorted(found)


@handler(apis.DESCRIBE_SHARE_GROUP_OFFSETS)
async def describe_share_group_offsets(ctx: RequestContext):
    app = ctx.app
    out = []
    for g in ctx.request["groups"]:
        group = g["group_id"]
        wanted = g["topics"]
        if wanted is None:  # every topic the group has state on
            by_topic: dict = {}
            for topic, p in await _group_queues(app, group):
                by_topic.setdefault(topic, []).append(p)
            wanted = [{"topic_name": t, "partitions": ps} for t, ps in sorted(by_topic.items())]
        known = {t["topic_name"]: topics.existing(app, t["topic_name"]) for t in wanted}
        described = await _described(app, group, [(t["topic_name"], p) for t in wanted for p in t["partitions"]
                                                   if topics.has_partition(known[t["topic_name"]], p)])
        tout = []
        for t in wanted:
            name, cfg = t["topic_name"], known[t["topic_name"]]
            parts = []
            for p in t["partitions"]:
                if not topics.has_partition(cfg, p):
                    parts.append({"partition_index": p, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                                  "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION, "error_message": None})
                    continue
                if (name, p) not in described:  # its leader did not answer: retriable
                    parts.append({"partition_index": p, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                                  "error_code": errors.COORDINATOR_NOT_AVAILABLE, "error_message": None})
                    continue
                start, lag = described[(name, p)]
                parts.append({"partition_index": p, "start_offset": start, "leader_epoch": 0 if start >= 0 else -1,
                              "lag": lag, "error_code": errors.NONE, "error_message": None})
            tout.append({"topic_name": name, "topic_id": topics.topic_id(app, name), "partitions": parts})
        out.append({"group_id": group, "topics": tout, "error_code": errors.NONE, "error_message": None})
    return {"groups": out}


def _is_other_group(app, group_id: str) -> bool:
    state = kafka_state(app)
    return group_id in state.consumer_groups.groups or bool(state.coordinator.groups.get(group_id))


def _refuse_live(app, group: str, create: bool = False) -> dict | None:
    """Refuse offset admin on a group with live members, or on an unknown group (AlterShareGroupOffsets
    creates an unknown group empty instead, as Kafka does; a group of another type stays not found)."""
    sg = kafka_state(app).share_groups
    if create and group and not _is_other_group(app, group):
        sg.get_or_create(group)
    if not is_share_group(app, group) and not app.pop.queues(group):
        return {"error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {group} not found.", "responses": []}
    if not sg.empty(group):
        return {"error_code": NON_EMPTY_GROUP, "error_message": "The group has active members.", "responses": []}
    return None


@handler(apis.ALTER_SHARE_GROUP_OFFSETS)
async def alter_share_group_offsets(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    refused = _refuse_live(app, req["group_id"], create=True)
    if refused is not None:
        return refused
    group, end, out, remote, failed = req["group_id"], 0, [], {}, set()
    for t in req["topics"]:
        name, cfg = t["topic_name"], topics.existing(app, t["topic_name"])
        for p in t["partitions"]:
            index = p["partition_index"]
            if not topics.has_partition(cfg, index):
                continue
            leader = _leaders(app).leader_of(name, index)
            if leader is None:
                end = max(end, share_state.reset(app, group, name, index, p["start_offset"]))
            else:
                remote.setdefault(leader, []).append([name, index, p["start_offset"]])
    for leader, parts in remote.items():  # the partitions another gateway leads: reset there
        if await _leaders(app).ask(leader, {"op": "alter", "group": group, "parts": parts}) is None:
            failed |= {(t, q) for t, q, _ in parts}
    for t in req["topics"]:
        name, cfg = t["topic_name"], topics.existing(app, t["topic_name"])
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            code = errors.NONE if topics.has_partition(cfg, index) else errors.UNKNOWN_TOPIC_OR_PARTITION
            code = errors.COORDINATOR_NOT_AVAILABLE if (name, index) in failed else code
            parts.append({"partition_index": index, "error_code": code, "error_message": None})
        out.append({"topic_name": name, "topic_id": topics.topic_id(app, name), "partitions": parts})
    await app.durable(end)
    return {"error_code": errors.NONE, "responses": out}


async def drop_progress(app, group: str, topic_names=None) -> None:
    """Forget the group's share-partition state (all topics, or these) here and on every other
    gateway of a cluster (each leads some): the next fetch starts by `share.auto.offset.reset`."""
    end = share_state.drop(app, group, topic_names)
    for node in _leaders(app).others():
        await _leaders(app).ask(node, {"op": "delete", "group": group,
                                            "topics": None if topic_names is None else sorted(topic_names)})
    app.offsets.persist()
    await app.durable(end)


@handler(apis.DELETE_SHARE_GROUP_OFFSETS)
async def delete_share_group_offsets(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    refused = _refuse_live(app, req["group_id"])
    if refused is not None:
        return refused
    names = [t["topic_name"] for t in req["topics"]]
    out = []
    for name in names:
        code = errors.NONE if topics.existing(app, name) is not None else errors.UNKNOWN_TOPIC_OR_PARTITION
        out.append({"topic_name": name, "topic_id": topics.topic_id(app, name), "error_code": code, "error_message": None})
    await drop_progress(app, req["group_id"], set(names))
    return {"error_code": errors.NONE, "responses": out}
