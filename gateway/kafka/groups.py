"""Group and producer-id APIs: coordinator lookup, classic group membership, offsets (commit, fetch,
delete), InitProducerId.

Membership is `semantics.kafka_groups.Coordinator`; committed offsets go to `app.offsets`, the one
offset table RocketMQ groups use too.
"""
from __future__ import annotations

import re
import time

import gateway.cluster.routes as routes
import gateway.diskless as diskless
import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.cluster.ownership import clustered
from gateway.kafka.consumer_groups import consumer_groups
from gateway.kafka.metadata import broker_list
from gateway.kafka.offsets_topic import mirror, mirror_group
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.share_configs import publish as publish_group_configs
from gateway.kafka.share_groups import drop_progress, is_share_group
from gateway.kafka.state import kafka_state
from gateway.kafka.streams_groups import streams_groups
from gateway.kafka.txn import init_transactional
from semantics.producer_state import PRODUCER_FENCED, ClusterUnavailable

MAX_EPOCH = 32767
TRANSACTION_MAX_TIMEOUT_MS = 900_000  # Kafka's transaction.max.timeout.ms default
CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"  # ListGroups v5 group types
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2  # FindCoordinator key types (share: v6+, KIP-932)
NO_BROKER = {"node_id": -1, "host": "", "port": -1}
# A share coordinator key: "group:topicId:partition", the id as Kafka prints it (unpadded URL-safe base64).
SHARE_PARTITION_KEY = re.compile(r"[^:]+:[A-Za-z0-9_-]{22}:-?[0-9]{1,10}")


def _coordinator_key_error(key_type: int, key: str | None, version: int) -> int:
    """Kafka's INVALID_REQUEST for an unknown key type, a share key before v6 or a malformed share key."""
    if key_type not in (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY):
        return errors.INVALID_REQUEST
    if key_type == SHARE_KEY and (version < 6 or not SHARE_PARTITION_KEY.fullmatch(key or "")):
        return errors.INVALID_REQUEST
    return errors.NONE


@handler(apis.FIND_COORDINATOR)
async def find_coordinator(ctx: RequestContext):
    """This broker; in a cluster the live gateway the key hashes to (docs/cluster.md)."""
    keys = ctx.request["coordinator_keys"] if ctx.version >= 4 else [ctx.request["key"]]
    key_type = ctx.request.get("key_type", GROUP_KEY)
    found = []
    for k in keys:
        code = _coordinator_key_error(key_type, k, ctx.version)
        if code != errors.NONE:
            found.append((k, NO_BROKER, code))
        elif clustered(ctx.app):
            found.append((k, routes.kafka_broker(ctx.app.ownership.coordinator(k)), code))
        else:
            found.append((k, broker_list(ctx)[0], code))  # the address the client's listener advertises
    if ctx.version >= 4:
        return {"coordinators": [{"key": k, "node_id": b["node_id"], "host": b["host"], "port": b["port"],
                                  "error_code": code, "error_message": ""} for k, b, code in found]}
    _, b, code = found[0]
    return {"error_code": code, "node_id": b["node_id"], "host": b["host"], "port": b["port"]}


@handler(apis.JOIN_GROUP)
async def join_group(ctx: RequestContext):
    group_id = ctx.request["group_id"]
    others = (consumer_groups(ctx.app).groups.get(group_id), streams_groups(ctx.app).groups.get(group_id))
    if any(g is not None and g.members for g in others):  # one protocol per group id (no online migration)
        return {"error_code": errors.INCONSISTENT_GROUP_PROTOCOL, "member_id": ctx.request["member_id"]}
    return await kafka_state(ctx.app).coordinator.join(ctx.request, ctx.version, ctx.client_id, "/" + ctx.peer_host)


@handler(apis.SYNC_GROUP)
async def sync_group(ctx: RequestContext):
    coordinator = kafka_state(ctx.app).coordinator
    resp = await coordinator.sync(ctx.request)
    g = coordinator.groups.get(ctx.request["group_id"])
    if resp["error_code"] == errors.NONE and g is not None and ctx.request["member_id"] == g.leader:
        await mirror_group(ctx.app, g.group_id, g)  # the assignment stored, as Kafka writes it
    return resp


@handler(apis.HEARTBEAT)
async def heartbeat(ctx: RequestContext):
    return {"error_code": kafka_state(ctx.app).coordinator.heartbeat(ctx.request)}


@handler(apis.LEAVE_GROUP)
async def leave_group(ctx: RequestContext):
    req = ctx.request
    coordinator = kafka_state(ctx.app).coordinator
    if ctx.version < 3:
        codes = coordinator.leave(req["group_id"], [(req["member_id"], None)])
        await _mirror_if_empty(ctx.app, req["group_id"], codes)
        return {"error_code": codes[0]}
    members = [(m["member_id"], m["group_instance_id"]) for m in req["members"]]
    codes = coordinator.leave(req["group_id"], members)
    await _mirror_if_empty(ctx.app, req["group_id"], codes)
    return {"error_code": errors.NONE, "members": [
        {"member_id": mid, "group_instance_id": iid, "error_code": code}
        for (mid, iid), code in zip(members, codes)]}


async def _mirror_if_empty(app, group_id: str, codes: list[int]) -> None:
    """The Empty group's metadata record once a LeaveGroup removed its last member."""
    g = kafka_state(app).coordinator.groups.get(group_id)
    if errors.NONE in codes and g is not None and not g.members:
        await mirror_group(app, group_id, g)


@handler(apis.OFFSET_COMMIT)
async def offset_commit(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    group = req["group_id"]
    epoch = req.get("generation_id_or_member_epoch", -1)
    code = consumer_groups(app).check_commit(group, req.get("member_id", ""), epoch)  # KIP-848 groups
    if code is None:  # KIP-1071 streams groups commit with the member epoch too
        code = streams_groups(app).check_commit(group, req.get("member_id", ""), epoch)
    if code is None:
        code = kafka_state(app).coordinator.check_commit(group, epoch, req.get("member_id", ""),
                                                         req.get("group_instance_id"),
                                                         bool(app.offsets.group_offsets(group)))
    out = []
    committed = []
    by_id = app.store.topics.name_of_id if ctx.version >= 10 else None  # v10 names topics by id (KIP-848)
    for t in req["topics"]:
        name = t["name"] if by_id is None else by_id(bytes(t["topic_id"]))
        cfg = topics.existing(app, name)
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if name is None:
                part_code = errors.UNKNOWN_TOPIC_ID
            else:
                part_code = code if topics.has_partition(cfg, index) else errors.UNKNOWN_TOPIC_OR_PARTITION
            if part_code == errors.NONE:
                offset, epoch, meta = p["committed_offset"], p.get("committed_leader_epoch", -1), \
                    p["committed_metadata"] or ""
                app.offsets.commit(group, name, index, offset, meta, epoch)
                committed.append((name, index, offset, epoch, meta))
            parts.append({"partition_index": index, "error_code": part_code})
        out.append({"name": name, "topic_id": t.get("topic_id"), "partitions": parts})
    await mirror(app, group, committed)  # the __consumer_offsets records Kafka would write
    if not await diskless.save_offsets(app, group, committed):  # diskless queues' offsets: in the bucket too
        for t in out:
            for p in t["partitions"]:
                if p["error_code"] == errors.NONE and diskless.is_diskless(topics.existing(app, t["name"])):
                    p["error_code"] = errors.REQUEST_TIMED_OUT
    # Kafka acknowledges a commit once it is durable (sync flush mode: on disk) and replicated: in a
    # cluster, once etcd has it; else COORDINATOR_NOT_AVAILABLE, as Kafka answers a commit whose
    # __consumer_offsets write timed out (the client finds the coordinator again and retries)
    await app.offsets.wait_durable()
    if committed and not await app.offsets.wait_mirrored([(group, t, p) for t, p, *_ in committed]):
        for t in out:
            for p in t["partitions"]:
                if p["error_code"] == errors.NONE:
                    p["error_code"] = errors.COORDINATOR_NOT_AVAILABLE
    return {"topics": out}


def _fetch_group_offsets(app, group: str, wanted, by_id=None) -> list[dict]:
    """OffsetFetch topics for one group; `wanted` None means every committed partition. With `by_id`
    (v10+) topics are named by id: an unknown id gets UNKNOWN_TOPIC_ID, and the whole-group answer
    leaves out offsets of topics that no longer exist (they have no id), as Kafka does."""
    if wanted is None:
        by_topic: dict[str, list[int]] = {}
        for (topic, qid) in sorted(app.offsets.group_offsets(group)):
            by_topic.setdefault(topic, []).append(qid)
        wanted = [{"name": t, "partition_indexes": q} for t, q in by_topic.items()
                  if by_id is None or topics.existing(app, t) is not None]
        if by_id is not None:
            wanted = [{**t, "topic_id": topics.topic_id(app, t["name"])} for t in wanted]
    elif by_id is not None:
        wanted = [{**t, "name": by_id(bytes(t["topic_id"]))} for t in wanted]
    out = []
    for t in wanted:
        if t["name"] is None:
            out.append({"topic_id": t["topic_id"], "partitions": [
                {"partition_index": qid, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                 "error_code": errors.UNKNOWN_TOPIC_ID} for qid in t["partition_indexes"]]})
            continue
        parts = []
        for qid in t["partition_indexes"]:
            offset, metadata, epoch = app.offsets.acknowledged(group, t["name"], qid)
            parts.append({"partition_index": qid, "committed_offset": -1 if offset is None else offset,
                          "committed_leader_epoch": epoch, "metadata": metadata, "error_code": errors.NONE})
        out.append({"name": t["name"], "topic_id": t.get("topic_id"), "partitions": parts})
    return out


def _wanted_keys(app, group: str, wanted, by_id=None) -> list[tuple[str, str, int]]:
    """(group, topic, partition) of what an OffsetFetch asks for (None: every committed partition)."""
    if wanted is None:
        return [(group, t, q) for t, q in app.offsets.group_offsets(group)]
    names = [(by_id(bytes(t["topic_id"])) if by_id is not None else t["name"], t["partition_indexes"]) for t in wanted]
    return [(group, name, q) for name, qs in names if name is not None for q in qs]


async def _current_offsets(app, group: str, wanted, by_id=None) -> tuple[int, list[dict]]:
    """The group's offsets as the cluster has them now (etcd, not this gateway's watch, which may lag
    behind commits made on the group's previous coordinator); COORDINATOR_NOT_AVAILABLE (retriable)
    when etcd does not answer."""
    current = await app.offsets.wait_current(_wanted_keys(app, group, wanted, by_id))
    topics_out = _fetch_group_offsets(app, group, wanted, by_id)
    if current:
        return errors.NONE, topics_out
    for t in topics_out:
        for p in t["partitions"]:
            p["error_code"] = errors.COORDINATOR_NOT_AVAILABLE
    return errors.COORDINATOR_NOT_AVAILABLE, topics_out


@handler(apis.OFFSET_FETCH)
async def offset_fetch(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    if ctx.version >= 8:
        out = []
        by_id = app.store.topics.name_of_id if ctx.version >= 10 else None
        for g in req["groups"]:
            code, fetched = errors.NONE, []
            if g.get("member_id") is not None:  # v9: a KIP-848 member fetches with its epoch
                code = consumer_groups(app).check_commit(g["group_id"], g["member_id"], g["member_epoch"]) or errors.NONE
            if not code:
                code, fetched = await _current_offsets(app, g["group_id"], g["topics"], by_id)
            out.append({"group_id": g["group_id"], "error_code": code, "topics": fetched if not code else []})
        return {"groups": out}
    code, fetched = await _current_offsets(app, req["group_id"], req["topics"])
    return {"error_code": code, "topics": fetched}


@handler(apis.LIST_GROUPS)
async def list_groups(ctx: RequestContext):
    app = ctx.app
    states = {s.lower() for s in ctx.request.get("states_filter") or []}
    types = {s.lower() for s in ctx.request.get("types_filter") or []}
    seen = {}
    for group_id, state in kafka_state(app).share_groups.listing():
        seen[group_id] = ("share", state, SHARE)
    for group_id, state in consumer_groups(app).listing():
        seen.setdefault(group_id, ("consumer", state, CONSUMER))
    for group_id, state in streams_groups(app).listing():
        seen.setdefault(group_id, ("streams", state, STREAMS))
    for group_id, ptype, state in kafka_state(app).coordinator.listing():
        seen.setdefault(group_id, (ptype, state, CLASSIC))
    for group_id in app.offsets.groups():
        seen.setdefault(group_id, ("", "Empty", CLASSIC))
    here = _coordinated_here(app)
    return {"error_code": errors.NONE, "groups": [
        {"group_id": g, "protocol_type": ptype, "group_state": state, "group_type": gtype}
        for g, (ptype, state, gtype) in sorted(seen.items())
        if (not states or state.lower() in states) and (not types or gtype in types) and here(g)]}


def _coordinated_here(app):
    """In a cluster a broker lists the groups it coordinates, as Kafka's (the admin client asks
    every broker and merges): the one offset table makes every group known everywhere, and another
    gateway would list a live KIP-848 or share group of its coordinator as an offsets-only classic one."""
    if not clustered(app):
        return lambda group_id: True
    node = app.ownership
    return lambda group_id: node.coordinator(group_id).node_id == node.node_id


def _rocketmq_members(app, group_id: str) -> int:
    """Live RocketMQ consumers of the group of the same name (one offset table for both protocols)."""
    return len(app.rocketmq_clients.live_consumers(group_id))


@handler(apis.DESCRIBE_GROUPS)
async def describe_groups(ctx: RequestContext):
    app = ctx.app
    coordinator = kafka_state(app).coordinator
    out = []
    for group_id in ctx.request["groups"]:
        d = coordinator.describe(group_id)
        consumer_group = group_id in consumer_groups(app).groups or group_id in streams_groups(app).groups
        # ^ not a classic group: Dead, as Kafka says
        if d["group_state"] == "Dead" and not consumer_group and group_id in set(app.offsets.groups()):
            d["group_state"] = "Empty"
        if d["group_state"] in ("Dead", "Empty") and _rocketmq_members(app, group_id):
            d["group_state"] = "Stable"  # live RocketMQ consumers use these offsets: not resettable now
        d["error_code"] = errors.NONE
        if d["group_state"] == "Dead" and ctx.version >= 6:  # KIP-1043: say so instead of a Dead group
            d["error_code"] = errors.GROUP_ID_NOT_FOUND
            other = consumer_group or is_share_group(app, group_id)
            d["error_message"] = f"Group {group_id} {'is not a classic group' if other else 'not found'}."
        out.append(d)
    return {"groups": out}


@handler(apis.DELETE_GROUPS)
async def delete_groups(ctx: RequestContext):
    app = ctx.app
    coordinator = kafka_state(app).coordinator
    out = []
    for group_id in ctx.request["groups_names"]:
        known = group_id in coordinator.groups or group_id in set(app.offsets.groups())
        if is_share_group(app, group_id):  # KIP-932: its share-partition state goes with it
            code = kafka_state(app).share_groups.delete(group_id)
            if code == errors.NONE:
                await publish_group_configs(app, [group_id])  # its configs go on every gateway (a cluster's etcd)
                await drop_progress(app, group_id)
                app.offsets.delete_group(group_id)
                await app.offsets.wait_durable()
            out.append({"group_id": group_id, "error_code": code})
            continue
        code = consumer_groups(app).delete(group_id)
        if code is None:
            code = streams_groups(app).delete(group_id)
        if code is None:
            code = coordinator.delete(group_id) if known else errors.GROUP_ID_NOT_FOUND
        if code == errors.NONE:
            await mirror(app, group_id, [(t, q, None, -1, "") for t, q in sorted(app.offsets.group_offsets(group_id))])
            await mirror_group(app, group_id, None)
            app.offsets.delete_group(group_id)
            await app.offsets.wait_durable()
        out.append({"group_id": group_id, "error_code": code})
    return {"results": out}


@handler(apis.OFFSET_DELETE)
async def offset_delete(ctx: RequestContext):
    """Forget committed offsets of partitions the group's live members do not subscribe to."""
    app, group = ctx.app, ctx.request["group_id"]
    coordinator = kafka_state(app).coordinator
    if group not in coordinator.groups and not app.offsets.group_offsets(group):
        return {"error_code": errors.GROUP_ID_NOT_FOUND, "topics": []}
    subscribed = coordinator.subscribed_topics(group)
    out = []
    deleted = []
    for t in ctx.request["topics"]:
        cfg = topics.existing(app, t["name"])
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if not topics.has_partition(cfg, index):
                code = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif t["name"] in subscribed:
                code = errors.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                app.offsets.delete(group, t["name"], index)
                deleted.append((t["name"], index, None, -1, ""))
                code = errors.NONE
            parts.append({"partition_index": index, "error_code": code})
        out.append({"name": t["name"], "partitions": parts})
    app.offsets.persist()
    await mirror(app, group, deleted)  # tombstones, as Kafka writes for deleted offsets
    # answered once the deletion is durable like a commit: in a cluster, once etcd has it (before,
    # an OffsetFetch right after still answered etcd's old offset)
    if deleted and not await app.offsets.wait_mirrored([(group, t, p) for t, p, *_ in deleted]):
        return {"error_code": errors.COORDINATOR_NOT_AVAILABLE, "topics": []}
    return {"error_code": errors.NONE, "topics": out}


@handler(apis.INIT_PRODUCER_ID)
async def init_producer_id(ctx: RequestContext):
    out = await _init_producer_id(ctx)
    if out.get("error_code") == errors.NONE:
        kafka_state(ctx.app).producer_clients.note(out["producer_id"], ctx.client_id, ctx.peer_host,
                                                   ctx.request.get("transactional_id"), int(time.time() * 1000))
    return out


async def _init_producer_id(ctx: RequestContext):
    req = ctx.request
    try:
        await ctx.app.ownership.reserve_producer_ids()  # a cluster member's block from etcd
    except ClusterUnavailable:  # as Kafka while its next block is not there: retried by the client
        code = errors.COORDINATOR_NOT_AVAILABLE if req.get("transactional_id") else errors.COORDINATOR_LOAD_IN_PROGRESS
        return {"error_code": code, "producer_id": -1, "producer_epoch": -1}
    if req.get("transactional_id"):
        if not 0 < req["transaction_timeout_ms"] <= TRANSACTION_MAX_TIMEOUT_MS:
            return {"error_code": errors.INVALID_TRANSACTION_TIMEOUT}
        pid, epoch = req.get("producer_id", -1), req.get("producer_epoch", -1)
        if (pid == -1) != (epoch == -1):  # KIP-360: both or neither, as Kafka checks
            return {"error_code": errors.INVALID_REQUEST, "producer_id": -1, "producer_epoch": -1}
        out = await init_transactional(ctx.app, req["transactional_id"], req["transaction_timeout_ms"],
                                       None if pid == -1 else (pid, epoch))
        if out["error_code"] == PRODUCER_FENCED and ctx.version < 4:  # older clients know only this one
            out["error_code"] = errors.INVALID_PRODUCER_EPOCH
        return out
    producers = kafka_state(ctx.app).producers
    pid, epoch = req.get("producer_id", -1), req.get("producer_epoch", -1)
    if pid >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        return {"error_code": errors.NONE, "producer_id": pid, "producer_epoch": epoch + 1}
    pid = producers.allocate()
    await producers.reserved()  # never handed out twice, even across a crash
    return {"error_code": errors.NONE, "producer_id": pid, "producer_epoch": 0}
