"""POP processor (RocketMQ 5): POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME, PEEK_MESSAGE, NOTIFICATION and POLLING_INFO over the one pop engine
(`semantics.pop`). QUERY_ASSIGNMENT / SET_MESSAGE_REQUEST_MODE live in `pop_assignment`.

Answers follow a 5.x broker: messages in the stored layout (reconsumeTimes = earlier deliveries),
header popTime / invisibleTime / reviveQid / restNum always present, startOffsetInfo and
msgOffsetInfo per queue so the client builds each message's ExtraInfo receipt. A record whose
invisible time runs out is delivered again in place (same topic, queue, offset); the POP retry
topic `%RETRY%<group>_<topic>` is popped too when it exists. Receipts that name no current lease
(unknown, stale, expired, acknowledged, another group) are answered NO_MESSAGE and change nothing.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import struct

import trio

import interop.to_rocketmq as inner_batch
from interop.txn_visibility import queue_stable_end
import gateway.remoting.pop_assignment  # noqa: F401  (QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE)
from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting.extra_info import offset_info, parse_extra_info, pop_retry_topic, real_topic, retry_mark
from codec.remoting.message import INNER_BATCH_FLAG, INT32, QUEUE_ID_AT, RECONSUME_TIMES_AT
from gateway.cluster import dead_letters
from gateway.cluster.remoting_queues import local_queue_id, own_broker_name, pop_queues
from gateway.ops.stats import stats_of
from gateway import fifo_hold, tier_reads
from gateway.remoting.common import DEFERRED, FAQ, after_durable, ensure_topic, handles, legal_group, now_ms, registry
from gateway.remoting.headers import (RequestError, optional_int, optional_long, optional_str, required_int,
                                      required_long, required_str)
import gateway.diskless_pop as diskless_pop
from semantics.pop import INIT_MIN, PopEngine, Receipt
from semantics.priority import pop_order
from semantics.replication import NotLeader
from semantics.replication.pop_journal import journaled
from semantics.retry import DEFAULT_MAX_RECONSUME_TIMES, build_send_back
from semantics.sql92 import FilterSyntaxError, subscription_filter

MAX_POP_NUMS = 32  # a 5.x broker refuses more
MAX_INVISIBLE_MS = 12 * 3600 * 1000  # the longest invisible time accepted (gRPC's limit)
MAX_POLL_S = 20.0
REVIVE_QID = 0


def pop_engine(app) -> PopEngine:
    """The app's pop engine (built with the App; its deadline timer is one of the App's services and
    wakes long-polling pops through the arrival hub)."""
    return app.pop


def polling(app) -> dict:
    return app.pop_remoting.polling


def _invisible(req, name: str) -> int:
    value = required_long(req, name)
    if not 0 <= value <= MAX_INVISIBLE_MS:
        raise RequestError(ResponseCode.INVALID_PARAMETER, f"{name} {value} is out of range [0, {MAX_INVISIBLE_MS}]")
    return value


def _topic_queue(app, req, topic: str, qid: int, bad_qid_code: int):
    cfg = app.store.topics.get(topic)
    if cfg is None:
        raise RequestError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
    if qid >= cfg.read_queues:
        raise RequestError(bad_qid_code, f"queueId[{qid}] is illegal, topic:[{topic}] "
                                         f"topicConfig.readQueueNums:[{cfg.read_queues}]")
    return cfg


def _filter(app, req, group, topic):
    kind, expression = optional_str(req, "expType") or None, optional_str(req, "exp") or None
    if expression is None:
        sub = registry(app).subscription(group, topic) or {}
        kind, expression = sub.get("expressionType"), sub.get("subString")
    try:
        return subscription_filter(kind, expression)
    except FilterSyntaxError as exc:
        raise RequestError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: {exc}")


@handles(RC.POP_MESSAGE)
def pop_message(channel, req):
    app = channel.app
    group, topic = required_str(req, "consumerGroup"), required_str(req, "topic")
    if not legal_group(group):
        return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark=f"subscription group [{group}] does not exist,{FAQ}")
    qid = required_int(req, "queueId")
    max_n = required_int(req, "maxMsgNums")
    invisible = _invisible(req, "invisibleTime")
    poll_ms, born = optional_long(req, "pollTime", 0), optional_long(req, "bornTime", 0)
    init_mode = optional_int(req, "initMode", INIT_MIN)
    if poll_ms > 0 and born > 0 and now_ms() - born - poll_ms > 500:
        return req.response(ResponseCode.POLLING_TIMEOUT,
                            remark=f"the broker[{own_broker_name(app)}] pop message is timeout too much")
    if not 0 < max_n <= MAX_POP_NUMS:
        return req.response(ResponseCode.INVALID_PARAMETER,
                            remark=f"the broker[{own_broker_name(app)}] pop message's num is greater than 32")
    cfg = _topic_queue(app, req, topic, qid, ResponseCode.INVALID_PARAMETER)
    subscription = _filter(app, req, group, topic)
    queues = [qid] if qid >= 0 else pop_queues(app, topic, pop_order(cfg, cfg.read_queues))
    retry = app.store.topics.get(pop_retry_topic(group, topic))
    sources = [(topic, q) for q in queues] + ([(retry.name, q) for q in range(retry.read_queues)] if retry else [])

    engine = pop_engine(app)

    def once():
        with engine.writes.deferred(app.flow):
            return _pop_once(app, req, group, sources, max_n, invisible, subscription, init_mode)

    if diskless_pop.diskless_sources(app, sources):  # their messages are loaded off the loop first
        timed_out = functools.partial(_answer, req, ResponseCode.POLLING_TIMEOUT, now_ms(), invisible, 0)
        channel.spawn(req, functools.partial(diskless_pop.pop, app, req, group, sources, once,
                                             min(max(poll_ms, 0) / 1000.0, MAX_POLL_S), timed_out))
        return DEFERRED
    resp, tier_misses = tier_reads.attempt(once)
    if resp.code == ResponseCode.SUCCESS or (poll_ms <= 0 and not tier_misses):
        return _after_logged(channel, req, resp, durable=False)

    async def long_poll():
        key = (group, topic, qid)
        counts = polling(app)
        counts[key] = counts.get(key, 0) + 1
        try:
            deadline = trio.current_time() + min(max(poll_ms, 0) / 1000.0, MAX_POLL_S)
            if engine.writes.pending:  # the first try's ops (a queue's init) do not wait for the poll's end
                await engine.writes.written()
            result, misses, rounds = resp, tier_misses, 0
            while result.code != ResponseCode.SUCCESS:
                remaining = deadline - trio.current_time()
                if misses and rounds < tier_reads.ROUNDS:  # tier segments on their way: wait for them
                    rounds += 1
                    await tier_reads.settle(misses)
                elif remaining > 0:
                    await app.arrivals.wait_any(sources, remaining)
                else:
                    if poll_ms > 0:
                        result = _answer(req, ResponseCode.POLLING_TIMEOUT, now_ms(), invisible, 0)
                    break
                result, misses = tier_reads.attempt(once)
        finally:
            counts[key] -= 1
        if engine.writes.pending:
            await engine.writes.written()
        return result
    channel.spawn(req, long_poll)
    return DEFERRED


def _after_logged(channel, req, resp, end: int = 0, durable: bool = True):
    """Answer `resp` once the engine's ops so far are in the CommitLog (while the disk is slow they
    are written off the event loop, in the flow's turn: `semantics.pop_writes`) and, if `durable`,
    in sync-flush mode once they are on disk."""
    app, engine = channel.app, pop_engine(channel.app)
    if not engine.writes.pending:
        return after_durable(channel, req, end, resp) if durable else resp

    async def logged():
        written = await engine.writes.written()
        if durable and app.sync_flush:
            await app.durable(max(end, written))
        return resp
    channel.spawn(req, logged, after_effects=True)
    return DEFERRED


def _answer(req, code, pop_time, invisible, rest, body=b"", extra=None):
    return req.response(code, {"popTime": pop_time, "invisibleTime": invisible, "reviveQid": REVIVE_QID,
                               "restNum": rest, **(extra or {})}, body=body)


def _pop_once(app, req, group, sources, max_n, invisible, subscription, init_mode):
    engine = pop_engine(app)
    pop_time = engine.new_pop_time()
    parts, starts, offsets, rest, left = [], [], [], 0, max_n
    filters = {"tag_filter": _tag_filter(subscription), "keep": _keeper(subscription),
               "raw_keep": None if getattr(subscription, "match_all", False) else subscription.matches_properties}
    order = fifo_hold.ordered(req)
    for topic, qid in sources:
        if order and fifo_hold.held(app, group, topic, qid):
            continue  # a message group's message from it is in flight
        got = engine.acquire(group, topic, qid, left, invisible, init_mode=init_mode, **filters,
                             max_deliveries=DEFAULT_MAX_RECONSUME_TIMES + 1, pop_time=pop_time, raw=True,
                             dead_letter=lambda g, m, o: _to_dlq(app, g, m, o))
        rest += got.rest
        if order:
            fifo_hold.hold(app, group, topic, qid, pop_time, got.deliveries)
        if got.deliveries:
            mark, local = retry_mark(topic), local_queue_id(app, topic, qid)
            starts.append((mark, local, got.deliveries[0].offset))
            offsets.append((mark, local, [d.offset for d in got.deliveries]))
            encoded = _encode(got.deliveries, local)
            stats_of(app).fetched("remoting", topic, sum(map(len, encoded)))
            parts.extend(encoded)
            left -= len(got.deliveries)
        if left <= 0:
            break
    if not parts:
        return _answer(req, ResponseCode.PULL_NOT_FOUND, pop_time, invisible, rest)
    return _answer(req, ResponseCode.SUCCESS, pop_time, invisible, rest, b"".join(parts),
                   {"startOffsetInfo": offset_info(starts), "msgOffsetInfo": offset_info(offsets)})


def _tag_filter(subscription):
    """Skip by tags code in the ConsumeQueue (tag expressions only; SQL92 needs the properties)."""
    return None if getattr(subscription, "match_all", True) else subscription.matches_code


def _keeper(subscription):
    """The exact check of each new record (a Kafka record batch: of each record in it)."""
    if getattr(subscription, "match_all", False):
        return None
    batches = {}

    def keep(message, offset):
        if message.sys_flag & INNER_BATCH_FLAG:
            records = batches.get(message.physical_offset)
            if records is None:
                records = batches[message.physical_offset] = inner_batch.records_as_messages(message)
            index = offset - message.queue_offset
            record = records[index] if 0 <= index < len(records) else None
            return record is not None and subscription.matches_properties(record.properties)
        return subscription.matches_properties(message.properties)
    return keep


def _encode(deliveries, queue_id: int) -> list[bytes]:
    """Stored-layout bytes of each delivery, reconsumeTimes raised by the earlier deliveries, with
    the queue id the client knows the queue by (broker-local in a cluster)."""
    out, batches = [], {}
    for d in deliveries:
        m = d.message
        if d.raw is not None:  # a plain entry handed over undecoded
            raw, times = d.raw, INT32.unpack_from(d.raw, RECONSUME_TIMES_AT)[0]
        elif m.sys_flag & INNER_BATCH_FLAG:
            records = batches.get(m.physical_offset)
            if records is None:
                records = batches[m.physical_offset] = inner_batch.expand_slots(m)
            index = d.offset - m.queue_offset
            raw, times = records[index] if 0 <= index < len(records) else None, 0
            if raw is None:
                continue  # a gap of a batch leased before it was known as one: nothing to hand over
        else:
            raw, times = m.raw, m.reconsume_times
        buf = bytearray(raw)
        struct.pack_into(">i", buf, RECONSUME_TIMES_AT, times + d.count - 1)
        struct.pack_into(">i", buf, QUEUE_ID_AT, queue_id)
        out.append(bytes(buf))
    return out


def _to_dlq(app, group, message, offset) -> int:
    """Past the last redelivery: the record goes to %DLQ%<group>, as CONSUMER_SEND_MSG_BACK would."""
    if message.sys_flag & INNER_BATCH_FLAG:
        return 0  # a Kafka record batch is not copied record by record here; it is only finished
    dead = build_send_back(message, group, delay_level=-1)
    ensure_topic(app, dead.topic)
    return app.store.append(dead_letters.placed(app, dead)).end_offset


def _receipt(app, req, code_bad_qid):
    group, topic = required_str(req, "consumerGroup"), required_str(req, "topic")
    qid, offset = required_int(req, "queueId"), required_long(req, "offset")
    if qid < 0:
        raise RequestError(ResponseCode.MESSAGE_ILLEGAL, f"queueId[{qid}] is illegal")
    _topic_queue(app, req, topic, qid, code_bad_qid)
    queues = pop_engine(app).store  # a diskless queue's as last loaded (gateway.diskless_pop)
    lo, hi = queues.min_offset(topic, qid), queues.max_offset(topic, qid)
    if not lo <= offset < hi and not diskless_pop.unloaded(app, topic, qid):  # (then the engine looks it up)
        raise RequestError(ResponseCode.NO_MESSAGE, f"offset is illegal, key:{topic}@{qid}, commit:{offset}, store:{lo}~{hi}")
    try:
        info = parse_extra_info(required_str(req, "extraInfo"))
    except ValueError as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"parse extraInfo failed: {exc}") from None
    return Receipt(group, topic, qid, offset, info.pop_time), info


@handles(RC.ACK_MESSAGE)
def ack_message(channel, req):
    if diskless_pop.forwarded(channel, req, [required_str(req, "topic")]):
        return DEFERRED
    receipt, _ = _receipt(channel.app, req, ResponseCode.MESSAGE_ILLEGAL)
    return _ack(channel, req, [receipt], batch=False)


@handles(RC.BATCH_ACK_MESSAGE)
def batch_ack_message(channel, req):
    if diskless_pop.forwarded(channel, req, [a.get("t", a.get("topic")) for a in _batch_acks(req)]):
        return DEFERRED
    receipts = [r for ack in _batch_acks(req) for r in _batch_receipts(channel.app, ack)]
    if not receipts:
        return req.response(ResponseCode.NO_MESSAGE, remark="no acks")
    return _ack(channel, req, receipts, batch=True)


def _ack(channel, req, receipts: list[Receipt], batch: bool):
    """The acks of one socket read are logged as one op just before their answers leave (the
    channel's `before_answers`); in sync-flush mode each is answered by a task once its op is on disk
    (`PopEngine.ack_together`: the acks of one scheduling turn share the op), as they are while the
    disk is slow (the op is then written off the event loop: `semantics.pop_writes`)."""
    app, engine = channel.app, pop_engine(channel.app)

    def answer(done):
        if not done and not batch:
            return req.response(ResponseCode.NO_MESSAGE, remark="the receipt names no message in flight "
                                                                 "(acknowledged, expired or unknown)")
        if done < len(receipts):
            return req.response(ResponseCode.NO_MESSAGE,
                                remark=f"{len(receipts) - done} of {len(receipts)} receipts name no message in flight")
        return req.response(ResponseCode.SUCCESS)
    if not app.sync_flush and engine.writes.inline(app.flow):
        return answer(engine.gather_acks(receipts, _read_acks(channel, engine)))

    async def acked():
        done, end = await engine.ack_together(receipts, app.flow)
        if engine.writes.pending:
            end = max(end, await engine.writes.written())
        if done and app.sync_flush:
            await app.durable(end)
            try:  # a replicated queue: once its in-sync replicas hold the ack (SYNC_MASTER)
                await journaled(app.replication, [(r.topic, r.queue_id) for r in receipts])
            except NotLeader as exc:
                return req.response(ResponseCode.FLUSH_SLAVE_TIMEOUT, remark=str(exc))
        return answer(done)
    channel.spawn(req, acked)
    return DEFERRED


def _read_acks(channel, engine) -> dict:
    """The acks gathered from the channel's current read, logged by its `before_answers` hook."""
    pending = getattr(channel, "pop_acks", None)
    if pending is None:
        pending = channel.pop_acks = {}

        def commit():
            channel.pop_acks = None
            engine.commit_acks(pending)
        channel.before_answers.append(commit)
    return pending


def _batch_acks(req) -> list[dict]:
    try:
        body = json.loads(req.body or b"{}")
    except (ValueError, RecursionError) as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad batch ack body: {exc}") from None
    acks = body.get("acks") if isinstance(body, dict) else None
    if not isinstance(acks, list) or not all(isinstance(a, dict) for a in acks):
        return []
    return acks


def _batch_receipts(app, ack: dict) -> list[Receipt]:
    """A BatchAck (fastjson short names c t r so q pt b; b = base64 of Java BitSet.toByteArray)."""
    def field(short, long_name, kind):
        value = ack.get(short, ack.get(long_name))
        if not isinstance(value, kind) or isinstance(value, bool):
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad batch ack: {long_name} is missing or malformed")
        return value
    group, topic, mark = field("c", "consumerGroup", str), field("t", "topic", str), field("r", "retry", str)
    start, qid, pop_time = field("so", "startOffset", int), field("q", "queueId", int), field("pt", "popTime", int)
    try:
        bits = base64.b64decode(field("b", "bitSet", str), validate=True)
        topic = real_topic(topic, group, mark)
    except (binascii.Error, ValueError) as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad batch ack: {exc}") from None
    return [Receipt(group, topic, qid, start + i * 8 + b, pop_time)
            for i, byte in enumerate(bits) for b in range(8) if byte >> b & 1]


@handles(RC.CHANGE_MESSAGE_INVISIBLETIME)
def change_invisible_time(channel, req):
    invisible = _invisible(req, "invisibleTime")
    if diskless_pop.forwarded(channel, req, [required_str(req, "topic")]):
        return DEFERRED
    receipt, info = _receipt(channel.app, req, ResponseCode.MESSAGE_ILLEGAL)
    app = channel.app
    with pop_engine(app).writes.deferred(app.flow):
        renewed = pop_engine(app).renew(receipt, invisible)
    if renewed is None:
        return req.response(ResponseCode.NO_MESSAGE, remark="the receipt names no message in flight (acknowledged, "
                                                              "expired or unknown)")
    deadline, end = renewed
    resp = req.response(ResponseCode.SUCCESS, {"popTime": receipt.pop_time, "invisibleTime": deadline - receipt.pop_time,
                                               "reviveQid": info.revive_qid})
    return _after_logged(channel, req, resp, end)


@handles(RC.PEEK_MESSAGE)
def peek_message(channel, req):
    """The group's next records without leasing them (nothing changes)."""
    app = channel.app
    group, topic = required_str(req, "consumerGroup"), required_str(req, "topic")
    qid, max_n = required_int(req, "queueId"), required_int(req, "maxMsgNums")
    if not 0 < max_n <= MAX_POP_NUMS:
        return req.response(ResponseCode.INVALID_PARAMETER, remark="peek message's num is greater than 32")
    cfg = _topic_queue(app, req, topic, qid, ResponseCode.INVALID_PARAMETER)
    engine, parts, rest = pop_engine(app), [], 0
    for q in ([qid] if qid >= 0 else pop_queues(app, topic, list(range(cfg.read_queues)))):
        start = engine.start_offset(group, topic, q)
        rest += app.store.max_offset(topic, q) - start
        for offset, m in app.store.read(topic, q, start, max_count=max_n - len(parts),
                                        end=queue_stable_end(app.store, topic, q)).entries:
            parts.append(m.raw)
    code = ResponseCode.SUCCESS if parts else ResponseCode.PULL_NOT_FOUND
    return _answer(req, code, 0, 0, rest, b"".join(parts))


@handles(RC.NOTIFICATION)
def notification(channel, req):
    """Long-poll until the group could pop something from the queue(s); answers hasMsg."""
    app = channel.app
    group, topic = required_str(req, "consumerGroup"), required_str(req, "topic")
    qid, poll_ms = required_int(req, "queueId"), optional_long(req, "pollTime", 0)
    cfg = _topic_queue(app, req, topic, qid, ResponseCode.INVALID_PARAMETER)
    sources = [(topic, q) for q in ([qid] if qid >= 0 else pop_queues(app, topic, list(range(cfg.read_queues))))]

    def has_msg():
        engine = pop_engine(app)
        return any(engine.has_available(group, t, q) for t, q in sources)

    def answer(found):
        return req.response(ResponseCode.SUCCESS, {"hasMsg": found, "pollingFull": False})
    if has_msg() or poll_ms <= 0:
        return answer(has_msg())

    async def wait():
        deadline = trio.current_time() + min(poll_ms / 1000.0, MAX_POLL_S)
        while (remaining := deadline - trio.current_time()) > 0:
            await app.arrivals.wait_any(sources, remaining)
            if has_msg():
                return answer(True)
        return answer(False)
    channel.spawn(req, wait)
    return DEFERRED


@handles(RC.POLLING_INFO)
def polling_info(channel, req):
    app = channel.app
    group, topic, qid = required_str(req, "consumerGroup"), required_str(req, "topic"), required_int(req, "queueId")
    _topic_queue(app, req, topic, qid, ResponseCode.INVALID_PARAMETER)
    return req.response(ResponseCode.SUCCESS, {"pollingNum": polling(app).get((group, topic, qid), 0)})
