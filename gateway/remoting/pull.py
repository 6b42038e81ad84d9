"""Pull processor: PULL_MESSAGE and LITE_PULL_MESSAGE, with long polling (suspended pulls).

A pull that finds nothing and may wait continues in its own task (like PullRequestHoldService):
it wakes on an arrival in its queue, or looks again every RESCAN_S, until its suspend timeout.
"""
from __future__ import annotations

import functools

import trio

import interop.to_rocketmq as inner_batch
from interop.txn_visibility import VISIBLE
from codec.remoting import PullSysFlag, RemotingCommand, RequestCode as RC, ResponseCode
from gateway import tier_reads
from gateway.ops.stats import stats_of
import gateway.remoting.diskless as diskless
from gateway.remoting.common import DEFERRED, FAQ, handles, legal_group, offsets_on_disk, registry
from gateway.remoting.headers import (RequestError, optional_int, optional_long, optional_str, queue_id,
                                      required_long)
from semantics.diskless import is_diskless
from semantics.sql92 import FilterSyntaxError, Selector, subscription_filter

DEFAULT_PULL_BYTES = 256 * 1024
MAX_BODY_BYTES = 8 * 1024 * 1024  # keeps every answer well inside the 16 MiB frame cap
MAX_SUSPEND_S = 20.0
RESCAN_S = 5.0  # like PullRequestHoldService, look again now and then even without a wake-up


@handles(RC.PULL_MESSAGE, RC.LITE_PULL_MESSAGE)
def pull_message(channel, req):
    app = channel.app
    group = optional_str(req, "consumerGroup")
    topic = optional_str(req, "topic")
    qid = queue_id(req)
    offset = required_long(req, "queueOffset")
    max_n = max(1, min(optional_int(req, "maxMsgNums", 32), 1024))
    sys_flag = optional_int(req, "sysFlag", 0)
    max_bytes = min(optional_int(req, "maxMsgBytes", DEFAULT_PULL_BYTES) or DEFAULT_PULL_BYTES, MAX_BODY_BYTES)
    if group and not legal_group(group):
        return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark=f"subscription group [{group}] does not exist,{FAQ}")
    cfg = app.store.topics.get(topic)
    if cfg is None:
        return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
    if qid >= cfg.read_queues:
        raise RequestError(ResponseCode.SYSTEM_ERROR,
                           f"queueId[{qid}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                           f"[{cfg.read_queues}] consumer:[{channel.address[0]}:{channel.address[1]}]")
    committed = False  # sync flush mode: the answer waits until the commit is on disk
    if sys_flag & PullSysFlag.COMMIT_OFFSET and group:
        commit = optional_long(req, "commitOffset", -1)
        if commit >= 0:
            app.offsets.commit(group, topic, qid, commit)
            committed = app.offsets.durable
    if sys_flag & PullSysFlag.SUBSCRIPTION:
        expression, kind = req.get_str("subscription"), req.get_str("expressionType")
    else:
        sub = registry(app).subscription(group, topic) or {}
        expression, kind = sub.get("subString"), sub.get("expressionType")
    try:
        tags = subscription_filter(kind, expression)
    except FilterSyntaxError as exc:
        return req.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=f"parse the subscription failed: {exc}")
    suspend_s = 0.0
    if sys_flag & PullSysFlag.SUSPEND:
        suspend_s = min(optional_long(req, "suspendTimeoutMillis", 15000) / 1000.0, MAX_SUSPEND_S)
    if app.diskless is not None and is_diskless(cfg):  # the index and WAL objects, off the loop
        channel.spawn(req, functools.partial(diskless.pull, app, req, topic, qid, offset, max_n, max_bytes, tags,
                                             suspend_s))
        return DEFERRED
    resp, tier_misses = tier_reads.attempt(_pull_once, app, req, topic, qid, offset, max_n, max_bytes, tags)
    if not tier_misses and (resp.code != ResponseCode.PULL_NOT_FOUND or suspend_s <= 0):
        return offsets_on_disk(channel, req, resp) if committed else resp

    async def long_poll():
        deadline = trio.current_time() + suspend_s
        result, misses = resp, tier_misses
        if misses:  # below the local start: answered once the tier's segments are downloaded
            result = await tier_reads.read(_pull_once, app, req, topic, qid, offset, max_n, max_bytes, tags)
        while result.code == ResponseCode.PULL_NOT_FOUND:
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                break
            await app.arrivals.wait_any([(topic, qid)], min(remaining, RESCAN_S))
            result = _pull_once(app, req, topic, qid, offset, max_n, max_bytes, tags)
        return result
    channel.spawn(req, long_poll)
    return DEFERRED


def _pull_once(app, req, topic, qid, offset, max_n, max_bytes, tags) -> RemotingCommand:
    s = app.store
    lo, top = s.min_offset(topic, qid), app.replication.readable_end(topic, qid, s.max_offset(topic, qid))
    hi = VISIBLE.stable_end(topic, qid, top, lo)  # an open Kafka transaction holds readers back (mapping.md)

    def answer(code, next_offset, body=b""):
        return req.response(code, {"suggestWhichBrokerId": 0, "nextBeginOffset": next_offset,
                                   "minOffset": lo, "maxOffset": hi}, body=body)

    if hi == 0:
        return answer(ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED, 0)
    if offset < lo:
        return answer(ResponseCode.PULL_OFFSET_MOVED, lo)
    if offset > top:
        return answer(ResponseCode.PULL_OFFSET_MOVED, top)
    if offset >= hi:
        return answer(ResponseCode.PULL_NOT_FOUND, offset)
    # SQL92 cannot decide on the tags code: its filter runs on each entry's properties (the client
    # does not re-filter SQL92). Tag filters skip by hash in the ConsumeQueue, then check the exact
    # tag here, so a message whose tag only shares the hash never crosses the network.
    sql = isinstance(tags, Selector)
    tag_filter = None if sql or tags.match_all else tags.matches_code
    matches = tags.matches if sql else (None if tag_filter is None else tags.matches_properties)
    # without a filter on properties the entries' bytes are forwarded as stored: no need to decode them
    result = s.read(topic, qid, offset, max_count=max_n, max_bytes=max_bytes, tag_filter=tag_filter,
                    raw=matches is None, end=hi)
    parts = []
    for qoff, m in result.entries:
        if m.sys_flag & inner_batch.INNER_BATCH_FLAG:
            parts.extend(inner_batch.expand(m, qoff, offset, tags))
        elif matches is None or matches(m.properties):
            parts.append(m.raw)
    if parts:
        body = b"".join(parts)
        stats_of(app).fetched("remoting", topic, len(body))
        return answer(ResponseCode.SUCCESS, result.next_offset, body)
    if result.next_offset > offset:
        return answer(ResponseCode.PULL_RETRY_IMMEDIATELY, result.next_offset)
    return answer(ResponseCode.PULL_NOT_FOUND, offset)
