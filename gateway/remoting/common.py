"""Shared pieces of the remoting handlers: the handler table, per-app state, topic helpers.

A leaf module: every processor module registers its handlers here with `@handles`; `handlers.py`
imports all processor modules once, and the connection looks requests up in HANDLERS.
"""
from __future__ import annotations

import dataclasses
import re
import time

from codec.remoting import ResponseCode
from semantics.replication import NotLeader
from semantics.rocketmq_clients import ClientRegistry

BROKER_NAME = "broker-a"
CLUSTER_NAME = "DefaultCluster"
REGION = "DefaultRegion"
TBW102 = "TBW102"
HANDLERS: dict = {}
DEFERRED = object()  # a handler returns this when it answers later from its own task

_LEGAL_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]{1,127}$")
# RocketMQ 5's TopicValidator.validateGroup: the topic characters, at most 120 (issue 30: a group
# named with NUL or control bytes was stored and then broke Kafka clients listing groups)
_GROUP_CHARS = re.compile(r"^[%|a-zA-Z0-9_-]+$")
GROUP_MAX_LENGTH = 120
FAQ = " \nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


def handles(*codes: int):
    def register(fn):
        for code in codes:
            HANDLERS[code] = fn
        return fn
    return register


@dataclasses.dataclass(slots=True)
class PopRemotingState:
    """The remoting side's POP state of one process: waiting pops per polling key, and the consume
    mode of each (topic, group) (SET_MESSAGE_REQUEST_MODE), loaded on first use."""

    polling: dict = dataclasses.field(default_factory=dict)
    modes: dict | None = None
    # diskless queues' POP owner of the bucket (gateway.diskless_pop_owner); None without diskless topics
    owner: object = None
    lite_clients: dict = dataclasses.field(default_factory=dict)  # gateway.remoting.pop_lite's subscribers


def registry(app) -> ClientRegistry:
    return app.rocketmq_clients


def legal_topic(name: str | None) -> bool:
    return bool(name) and _LEGAL_TOPIC.match(name) is not None


def group_error(name: str | None) -> str | None:
    """Why RocketMQ would refuse this consumer group name (its remark), or None when it is legal."""
    if not name or not name.strip():
        return "The specified group is blank."
    if not _GROUP_CHARS.match(name):
        return f"The specified group: {name}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(name) > GROUP_MAX_LENGTH:
        return f"The specified group: {name}, is longer than group max length: {GROUP_MAX_LENGTH}."
    return None


def client_group_error(name: str | None) -> str | None:
    """The same check worded as RocketMQ's client `Validators.checkGroup` words it (length first): the
    message the 5.x proxy answers gRPC calls with (ILLEGAL_CONSUMER_GROUP)."""
    if not name or not name.strip():
        return "the specified group is blank"
    if len(name) > GROUP_MAX_LENGTH:
        return f"the specified group[{name}] is longer than group max length: {GROUP_MAX_LENGTH}."
    if not _GROUP_CHARS.match(name):
        return f"the specified group[{name}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    return None


def legal_group(name: str | None) -> bool:
    return group_error(name) is None


def is_system_group_topic(name: str) -> bool:
    return name.startswith("%RETRY%") or name.startswith("%DLQ%")


def ensure_topic(app, name: str, queues: int | None = None):
    """The topic's config, auto-creating it (autoCreateTopicEnable) if allowed; None otherwise.
    Retry and DLQ topics always exist on demand, with one queue, as a real broker creates them."""
    topics = app.store.topics
    cfg = topics.get(name)
    if cfg is not None:
        return cfg
    if not legal_topic(name):
        return None
    if is_system_group_topic(name):
        return topics.create(name, read_queues=1, write_queues=1, perm=6)
    if not app.config.auto_create_topics:
        return None
    n = queues or app.config.default_partitions
    return topics.create(name, read_queues=n, write_queues=n, perm=7 if name == TBW102 else 6)


def mq_key(topic: str, qid: int) -> tuple[str, str, int]:
    return (topic, BROKER_NAME, qid)


def now_ms() -> int:
    return int(time.time() * 1000)


def delay_levels(app):
    return app.delay_levels


def offsets_on_disk(channel, req, resp):
    """Sync flush mode: answer `req` with `resp` once the offset table is on disk."""
    async def on_disk():
        await channel.app.offsets.wait_durable()
        return resp
    channel.spawn(req, on_disk, after_effects=True)
    return DEFERRED


def offsets_committed(channel, req, resp, keys):
    """A two-way offset update: answered once on disk (sync flush mode) and, in a cluster, once etcd
    has it; else SYSTEM_ERROR and the commit of (group, topic, queue) `keys` is undone (as a Kafka
    OffsetCommit refused then). Oneway (the Java client's usual UPDATE_CONSUMER_OFFSET): nothing to
    wait for, the commit stays queued for etcd."""
    offsets = channel.app.offsets
    if req.is_oneway or not offsets.durable and offsets.mirrored is None:
        return offsets_on_disk(channel, req, resp) if offsets.durable else resp

    async def acknowledged():
        await offsets.wait_durable()
        if not await offsets.wait_mirrored(keys):
            return req.response(ResponseCode.SYSTEM_ERROR, remark="offset not written to the cluster (etcd)")
        return resp
    channel.spawn(req, acknowledged, after_effects=True)
    return DEFERRED


def after_durable(channel, req, end_offset: int, resp, replicated: tuple | None = None):
    """Answer once the send is safe: in sync-flush mode once the CommitLog is on disk; and (SYNC_MASTER)
    once the in-sync replicas hold `replicated` = (topic, queue id, end queue offset), in either flush
    mode (RocketMQ's brokerRole is apart from its flushDiskType). Otherwise answer now."""
    app = channel.app
    if replicated is not None and not app.replication.replicates(*replicated[:2]):
        replicated = None
    if not app.sync_flush and replicated is None:
        return resp

    async def wait_durable():
        if app.sync_flush:
            await app.durable(end_offset)
            await app.topics_written()  # an auto-created topic is on disk before its first send is acked
        if replicated is not None:
            try:
                await app.replicated(*replicated)
            except NotLeader as exc:  # stored here, but not known to be replicated
                resp.code, resp.remark = ResponseCode.FLUSH_SLAVE_TIMEOUT, str(exc)
        return resp
    channel.spawn(req, wait_durable, after_effects=True)
    return DEFERRED
