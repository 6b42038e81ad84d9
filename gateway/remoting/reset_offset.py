"""Backtracking by time for RocketMQ admin tools (`mqadmin resetOffsetByTime`, `getConsumerStatus`).

INVOKE_BROKER_TO_RESET_OFFSET (222): header `topic`, `group`, `timestamp` (ms, -1 = end), `isForce`.
As a RocketMQ broker does, it needs a live member of the group: it computes the new offsets
(semantics.backtrack), pushes RESET_CONSUMER_CLIENT_OFFSET (220, oneway, ResetOffsetBody) to every
live member, which applies them, and answers the same ResetOffsetBody. With no live member it
answers CONSUMER_NOT_ONLINE and mqadmin falls back to resetOffsetByTimeOld (GET_CONSUME_STATS,
SEARCH_OFFSET_BY_TIMESTAMP, UPDATE_CONSUMER_OFFSET per queue). Unlike RocketMQ's default, the
gateway also commits the offsets itself (like its `useServerSideResetOffset`), so the reset is in
the one offset table (Kafka sees it) even before the clients act on it.

A group with live Kafka members is refused (SYSTEM_ERROR, the reason as remark; nothing changes),
as Kafka's own tools refuse to reset a group that is not empty.

INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): asks each live member (GET_CONSUMER_STATUS_FROM_CLIENT,
221) for its offset table of the topic; answers GetConsumerStatusBody.
"""
from __future__ import annotations

import json
import logging

import trio

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting.bodies import dumps_mq_map, loads
from gateway import tier_reads
from gateway.cluster.remoting_queues import client_queues, stats_queues
from gateway.remoting.common import DEFERRED, handles, registry
from semantics import backtrack

log = logging.getLogger("rocketgate.remoting")
STATUS_TIMEOUT_S = 5.0


def _live_members(app, group: str) -> list:
    return registry(app).live_consumers(group)


def _kafka_members(app, group: str) -> int:
    """Members of the Kafka group of the same name (one offset table serves both protocols)."""
    return len(app.kafka.coordinator.describe(group)["members"])


def own_queues(app, topic: str, plan: dict[int, int]) -> dict[int, tuple[str, str, int]]:
    """The plan's queues this broker answers for, by the MessageQueue a client knows each by: in a
    cluster (shards) only the queues this gateway leads, under its broker name and broker-local ids,
    as each RocketMQ broker resets its own (mqadmin asks every broker of the route). A queue led by
    another gateway is left to it: its store is not here, so its offset by time is not either."""
    return {qid: key for qid, key in stats_queues(app, topic, max(plan, default=-1) + 1) if qid in plan}


def reset_body(plan: dict[int, int], queues: dict[int, tuple[str, str, int]]) -> bytes:
    """ResetOffsetBody: {"offsetTable": {MessageQueue: offset}} (object keys, fastjson style)."""
    table = {queues[qid]: off for qid, off in sorted(plan.items())}
    return ('{"offsetTable":' + dumps_mq_map(table) + "}").encode()


@handles(RC.INVOKE_BROKER_TO_RESET_OFFSET)
def reset_offset(channel, req):
    """Planned once the tier segments its lookups by time read are downloaded (gateway.tier_reads)."""
    misses = tier_reads.attempt(_plan_lookups, channel.app, req)[1]
    if not misses:
        return _reset_offset(channel, req)

    async def later():
        await tier_reads.settle(misses)
        await tier_reads.read(_plan_lookups, channel.app, req)
        return _reset_offset(channel, req)
    channel.spawn(req, later)
    return DEFERRED


def _plan_lookups(app, req) -> None:
    """The store lookups a reset plan makes, nothing committed."""
    try:
        backtrack.reset_plan(app.store, app.offsets, req.get_str("group") or "", req.get_str("topic") or "",
                             req.get_int("timestamp", -1), True, True)
    except backtrack.ResetRefused:
        pass


def _reset_offset(channel, req):
    app = channel.app
    topic, group = req.get_str("topic") or "", req.get_str("group") or ""
    timestamp = req.get_int("timestamp", -1)
    force = (req.get_str("isForce") or "true").lower() != "false"
    members = _live_members(app, group)
    try:
        plan = backtrack.reset_plan(app.store, app.offsets, group, topic, timestamp, force, bool(members))
    except backtrack.ResetRefused as exc:
        code = ResponseCode.TOPIC_NOT_EXIST if exc.reason == "topic" else ResponseCode.SYSTEM_ERROR
        return req.response(code, remark=str(exc))
    kafka_members = _kafka_members(app, group)
    if kafka_members:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=(
            f"the consumer group <{group}> has {kafka_members} active Kafka member(s): reset refused "
            f"(as Kafka refuses to reset the offsets of a group that is not empty)"))
    if not members:
        return req.response(ResponseCode.CONSUMER_NOT_ONLINE, remark=(
            f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {timestamp}"))
    queues = own_queues(app, topic, plan)
    plan = {qid: off for qid, off in plan.items() if qid in queues}
    backtrack.apply_plan(app.offsets, group, topic, plan)
    body = reset_body(plan, queues)
    fields = {"topic": topic, "group": group, "timestamp": str(timestamp), "isForce": str(force).lower()}
    for entry in members:  # each by the queues it holds (a Java 5 client of shards: the cluster's ids)
        told = reset_body(plan, client_queues(app, topic, queues, entry.language, entry.version))
        entry.channel.send_oneway(RemotingCommand(code=RC.RESET_CONSUMER_CLIENT_OFFSET, flag=2,
                                                  ext_fields=dict(fields), body=told))
    log.info("reset offsets of %s on %s to %s (timestamp %d, %d members told)", group, topic, plan, timestamp,
             len(members))
    return req.response(body=body)


@handles(RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS)
def consumer_status(channel, req):
    app = channel.app
    topic, group = req.get_str("topic") or "", req.get_str("group") or ""
    only = req.get_str("clientAddr") or ""
    members = [e for e in _live_members(app, group) if not only or e.client_id == only]
    if not members:
        return req.response(ResponseCode.SYSTEM_ERROR,
                            remark=f"No Any Consumer online in the consumer group: [{group}]")

    async def gather():
        tables: dict[str, dict] = {}

        async def ask(entry):
            cmd = RemotingCommand(code=RC.GET_CONSUMER_STATUS_FROM_CLIENT, ext_fields={"topic": topic, "group": group})
            resp = await entry.channel.request(cmd, STATUS_TIMEOUT_S)
            if resp is not None and resp.code == ResponseCode.SUCCESS and resp.body:
                try:
                    tables[entry.client_id] = loads(resp.body).get("messageQueueTable") or {}
                except (ValueError, IndexError, AttributeError):
                    log.info("unreadable consumer status from %s", entry.client_id)

        async with trio.open_nursery() as nursery:
            for entry in members:
                nursery.start_soon(ask, entry)
        parts = [json.dumps(cid) + ":" + dumps_mq_map(t) for cid, t in sorted(tables.items())]
        body = '{"consumerTable":{' + ",".join(parts) + '},"messageQueueTable":{}}'
        return req.response(body=body.encode())
    channel.spawn(req, gather)
    return DEFERRED
