"""Broker role: sends, pulls (long polling), consumer offsets, client registry, locks, lookups."""
from __future__ import annotations

import json
import logging
import random
import time

import trio

import store
from codec.remoting import FLAG_RESPONSE, PullSysFlag, RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting.bodies import decode_batch, dumps
from gateway.remoting import inner_batch
from gateway.remoting.common import (BROKER_NAME, CLUSTER_NAME, DEFERRED, REGION, ensure_topic, handles,
                                     registry)
from semantics import flow_control, retry, routing
from semantics.sql92 import FilterSyntaxError, Selector, subscription_filter
from semantics.tags import parse_tags
from store import message as smsg

log = logging.getLogger("rocketgate.remoting")

# SendMessageRequestHeaderV2 short names -> SendMessageRequestHeader names.
V2_NAMES = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
            "e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
            "j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "brokerName"}
DEFAULT_PULL_BYTES = 256 * 1024
MAX_BODY_BYTES = 8 * 1024 * 1024  # keeps every answer well inside the 16 MiB frame cap
MAX_SUSPEND_S = 20.0
MAX_PROPERTIES_CHARS = 32767 - 64  # a Java short, with room for the properties the broker adds
RESCAN_S = 5.0  # like PullRequestHoldService, look again now and then even without a wake-up


# The send header fields prepare_send reads, in V1 (long) and V2 (short) names, in one order.
_SEND_FIELDS = ("topic", "defaultTopicQueueNums", "queueId", "properties", "flag", "sysFlag", "bornTimestamp",
                "reconsumeTimes", "batch", "maxReconsumeTimes")
_SEND_FIELDS_V2 = tuple({v: k for k, v in V2_NAMES.items()}[name] for name in _SEND_FIELDS)


def _int(value: str | None, default: int, name: str) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        raise store.StoreError(f"bad header field {name}: {value!r}") from None


# ---------------------------------------------------------------- send

class PreparedSend:
    """The messages of one send request, checked and routed, waiting for their CommitLog append.
    Consecutive sends on one connection are appended together (connection.py), one write for many."""
    __slots__ = ("req", "msgs", "qid")

    def __init__(self, req, msgs, qid) -> None:
        self.req, self.msgs, self.qid = req, msgs, qid


def prepare_send(channel, req) -> "RemotingCommand | PreparedSend":
    """Validate a SEND_MESSAGE(_V2)/SEND_BATCH_MESSAGE and build its messages; an error answer if bad."""
    app = channel.app
    busy = flow_control.refusal(app, channel.read_at)
    if busy:
        return req.response(ResponseCode.SYSTEM_BUSY, remark=busy)
    (topic, default_queues, queue_id, raw_props, flag, sys_flag, born, reconsume, batch, max_reconsume) = map(
        req.ext_fields.get, _SEND_FIELDS if req.code == RC.SEND_MESSAGE else _SEND_FIELDS_V2)
    topic = topic or ""
    try:
        cfg = ensure_topic(app, topic, _int(default_queues, app.config.default_partitions, "defaultTopicQueueNums"))
        if cfg is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST,
                                remark=f"topic[{topic}] not exist, apply first please!")
        if not cfg.perm & 2:
            return req.response(ResponseCode.NO_PERMISSION, remark=f"the topic[{topic}] sending is forbidden")
        qid = _int(queue_id, -1, "queueId")
        if qid < 0 or qid >= cfg.write_queues:
            qid = random.randrange(cfg.write_queues) if qid < 0 else qid % cfg.write_queues
        raw_props = raw_props or ""
        if len(raw_props) > MAX_PROPERTIES_CHARS and len(raw_props.encode()) > MAX_PROPERTIES_CHARS:
            return req.response(ResponseCode.MESSAGE_ILLEGAL, remark="the message properties are too long")
        header_props = smsg.string_to_properties(raw_props)
        base = dict(flag=_int(flag, 0, "flag"), sys_flag=_int(sys_flag, 0, "sysFlag"),
                    born_timestamp=_int(born, 0, "bornTimestamp") or _now_ms(),
                    born_host=channel.address, reconsume_times=_int(reconsume, 0, "reconsumeTimes"))
        if req.code == RC.SEND_BATCH_MESSAGE or batch == "true":
            try:
                items = decode_batch(req.body)
            except ValueError as exc:
                return req.response(ResponseCode.MESSAGE_ILLEGAL, remark=str(exc))
            if not items:
                return req.response(ResponseCode.MESSAGE_ILLEGAL, remark="empty batch")
            msgs = []
            for it in items:
                props = smsg.string_to_properties(it.properties)
                props.update(header_props)
                props["CLUSTER"] = CLUSTER_NAME
                msgs.append(store.Message(topic=topic, queue_id=qid, body=it.body, properties=props,
                                          **{**base, "flag": it.flag}))
        else:
            header_props["CLUSTER"] = CLUSTER_NAME
            msgs = [store.Message(topic=topic, queue_id=qid, body=req.body, properties=header_props, **base)]
        # One limit for the request body: a message's body, or a whole batch (as RocketMQ's store does).
        if len(req.body or b"") > app.config.max_message_bytes:
            return req.response(ResponseCode.MESSAGE_ILLEGAL,
                                remark=f"the message body size over max value, MAX: {app.config.max_message_bytes}")
        if topic.startswith(retry.RETRY_PREFIX):
            limit = _int(max_reconsume, retry.DEFAULT_MAX_RECONSUME_TIMES, "maxReconsumeTimes")
            msgs = [_retry_or_dlq(app, m, limit) for m in msgs]
        now, levels = _now_ms(), _levels(app)
        msgs = [routing.route(m, now, levels) for m in msgs]
    except store.StoreError as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
    return PreparedSend(req, msgs, qid)


def append_error(req, exc: Exception) -> RemotingCommand:
    """The answer to a send whose append failed."""
    if isinstance(exc, store.MessageTooLarge):
        return req.response(ResponseCode.MESSAGE_ILLEGAL, remark=str(exc))
    return req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))


def finish_send(channel, p: PreparedSend, results):
    """The answer to an appended send (deferred until durable in sync-flush mode)."""
    msgs = p.msgs
    fields = {"msgId": ",".join([smsg.make_msg_id(channel.app.config.advertised, channel.local_port,
                                                   r.physical_offset) for r in results]),
              "queueId": str(p.qid), "queueOffset": str(results[0].queue_offset), "MSG_REGION": REGION,
              "TRACE_ON": "true"}
    uniq = msgs[0].properties.get("UNIQ_KEY") if len(msgs) == 1 else None
    if uniq:
        fields["transactionId"] = uniq
    return _after_durable(channel, p.req, results[-1].end_offset,
                          RemotingCommand(code=0, ext_fields=fields, opaque=p.req.opaque, flag=FLAG_RESPONSE))


@handles(RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE)
def send_message(channel, req):
    p = prepare_send(channel, req)
    if not isinstance(p, PreparedSend):
        return p
    msgs = p.msgs
    try:
        results = channel.app.store.append_many(msgs) if len(msgs) > 1 else [channel.app.store.append(msgs[0])]
    except store.StoreError as exc:
        return append_error(req, exc)
    return finish_send(channel, p, results)


def _after_durable(channel, req, end_offset: int, resp):
    """Answer now in async-flush mode; in sync mode only once the CommitLog is on disk."""
    app = channel.app
    if not app.sync_flush:
        return resp

    async def wait_durable():
        await app.durable(end_offset)
        return resp
    channel.spawn(req, wait_durable)
    return DEFERRED


def _now_ms() -> int:
    return int(time.time() * 1000)


def _levels(app):
    return getattr(app, "delay_levels", None) or routing.DEFAULT_LEVELS


def _retry_or_dlq(app, m, max_reconsume_times: int):
    """A client-side retry send (%RETRY% topic) past maxReconsumeTimes goes to the DLQ."""
    group = m.topic[len(retry.RETRY_PREFIX):]
    if m.reconsume_times >= max_reconsume_times:
        ensure_topic(app, retry.dlq_topic(group))
        m.topic, m.queue_id = retry.dlq_topic(group), 0
        m.properties.pop("DELAY", None)
    return m


# ---------------------------------------------------------------- pull

@handles(RC.PULL_MESSAGE, RC.LITE_PULL_MESSAGE)
def pull_message(channel, req):
    app = channel.app
    group = req.get_str("consumerGroup") or ""
    topic = req.get_str("topic") or ""
    qid = req.get_int("queueId")
    offset = req.get_int("queueOffset")
    max_n = max(1, min(req.get_int("maxMsgNums", 32), 1024))
    sys_flag = req.get_int("sysFlag", 0)
    max_bytes = min(req.get_int("maxMsgBytes", DEFAULT_PULL_BYTES) or DEFAULT_PULL_BYTES, MAX_BODY_BYTES)
    if sys_flag & PullSysFlag.COMMIT_OFFSET and group:
        commit = req.get_int("commitOffset", -1)
        if commit >= 0:
            app.offsets.commit(group, topic, qid, commit)
    if app.store.topics.get(topic) is None:
        return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
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
        suspend_s = min(req.get_int("suspendTimeoutMillis", 15000) / 1000.0, MAX_SUSPEND_S)
    resp = _pull_once(app, req, topic, qid, offset, max_n, max_bytes, tags)
    if resp.code != ResponseCode.PULL_NOT_FOUND or suspend_s <= 0:
        return resp

    async def long_poll():
        deadline = trio.current_time() + suspend_s
        result = resp
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
    lo, hi = s.min_offset(topic, qid), s.max_offset(topic, qid)

    def answer(code, next_offset, body=b""):
        return req.response(code, {"suggestWhichBrokerId": 0, "nextBeginOffset": next_offset,
                                   "minOffset": lo, "maxOffset": hi}, body=body)

    if hi == 0:
        return answer(ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED, 0)
    if offset < lo:
        return answer(ResponseCode.PULL_OFFSET_MOVED, lo)
    if offset > hi:
        return answer(ResponseCode.PULL_OFFSET_MOVED, hi)
    if offset == hi:
        return answer(ResponseCode.PULL_NOT_FOUND, offset)
    # SQL92 cannot decide on the tags code: its filter runs on each entry's properties (the client
    # does not re-filter SQL92). Tag filters skip by hash in the ConsumeQueue, then check the exact
    # tag here, so a message whose tag only shares the hash never crosses the network.
    sql = isinstance(tags, Selector)
    tag_filter = None if sql or tags.match_all else tags.matches_code
    matches = tags.matches if sql else (None if tag_filter is None else tags.matches_properties)
    result = s.read(topic, qid, offset, max_count=max_n, max_bytes=max_bytes, tag_filter=tag_filter)
    parts = []
    for qoff, m in result.entries:
        if m.sys_flag & inner_batch.INNER_BATCH_FLAG:
            parts.extend(inner_batch.expand(m, qoff, offset, tags))
        elif matches is None or matches(m.properties):
            parts.append(m.raw)
    if parts:
        return answer(ResponseCode.SUCCESS, result.next_offset, b"".join(parts))
    if result.next_offset > offset:
        return answer(ResponseCode.PULL_RETRY_IMMEDIATELY, result.next_offset)
    return answer(ResponseCode.PULL_NOT_FOUND, offset)


# ---------------------------------------------------------------- offsets

@handles(RC.QUERY_CONSUMER_OFFSET)
def query_consumer_offset(channel, req):
    app = channel.app
    group, topic, qid = req.get_str("consumerGroup"), req.get_str("topic"), req.get_int("queueId")
    offset = app.offsets.fetch(group, topic, qid)
    if offset is None:
        # Like a real broker on a young store: with nothing committed and message 0 still present,
        # a new group starts at 0 (unless a 5.x client asks for a plain "not found").
        if req.get_str("setZeroIfNotFound") != "false" and app.store.min_offset(topic, qid) <= 0:
            offset = 0
        else:
            return req.response(ResponseCode.QUERY_NOT_FOUND, remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
    return req.response(ext_fields={"offset": offset})


@handles(RC.UPDATE_CONSUMER_OFFSET)
def update_consumer_offset(channel, req):
    channel.app.offsets.commit(req.get_str("consumerGroup"), req.get_str("topic"), req.get_int("queueId"),
                               req.get_int("commitOffset"))
    return req.response()


@handles(RC.GET_MAX_OFFSET)
def get_max_offset(channel, req):
    return req.response(ext_fields={"offset": channel.app.store.max_offset(req.get_str("topic"),
                                                                         req.get_int("queueId"))})


@handles(RC.GET_MIN_OFFSET)
def get_min_offset(channel, req):
    return req.response(ext_fields={"offset": channel.app.store.min_offset(req.get_str("topic"),
                                                                         req.get_int("queueId"))})


@handles(RC.SEARCH_OFFSET_BY_TIMESTAMP)
def search_offset(channel, req):
    s = channel.app.store
    return req.response(ext_fields={"offset": s.offset_for_timestamp(req.get_str("topic"), req.get_int("queueId"),
                                                                     req.get_int("timestamp"))})


@handles(RC.GET_EARLIEST_MSG_STORETIME)
def earliest_store_time(channel, req):
    s = channel.app.store
    topic, qid = req.get_str("topic"), req.get_int("queueId")
    units = s.units(topic, qid, s.min_offset(topic, qid), 1)
    m = s.get(units[0][0]) if units else None
    if m is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark="no message in this queue")
    return req.response(ext_fields={"timestamp": m.store_timestamp})


# ---------------------------------------------------------------- clients

def notify_groups(app, groups: list[str]) -> None:
    """NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every member of groups whose membership changed."""
    reg = registry(app)
    for group in groups:
        g = reg.consumers.get(group)
        if g is None:
            continue
        for entry in g.clients.values():
            entry.channel.send_oneway(RemotingCommand(code=RC.NOTIFY_CONSUMER_IDS_CHANGED,
                                                      ext_fields={"consumerGroup": group}, flag=2))


def _subscription_error(subscription: dict) -> str | None:
    """Why a SubscriptionData cannot be used (a malformed SQL92 expression, an unknown type), or None."""
    if not isinstance(subscription, dict):
        return "subscription data is not an object"
    try:
        subscription_filter(subscription.get("expressionType"), subscription.get("subString"))
    except FilterSyntaxError as exc:
        return (f"the subscription of topic {subscription.get('topic')!r} is not valid "
                f"({subscription.get('expressionType')} {subscription.get('subString')!r}): {exc}")
    return None


@handles(RC.HEART_BEAT)
def heart_beat(channel, req):
    """Register the client's producers and consumers; a malformed subscription refuses the whole
    heartbeat (SUBSCRIPTION_PARSE_FAILED, the reason as remark) and registers nothing."""
    try:
        data = json.loads(req.body or b"{}")
        if not isinstance(data, dict):
            raise ValueError("not an object")
        consumers = data.get("consumerDataSet") or []
        for cd in consumers:
            for sub in cd.get("subscriptionDataSet") or []:
                error = _subscription_error(sub)
                if error:
                    return req.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=error)
    except (ValueError, AttributeError, TypeError) as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad heartbeat body: {exc}")
    reg = registry(channel.app)
    reg.expire()
    changed = reg.heartbeat(data, channel, req.language, req.version)
    for cd in consumers:
        # A clustering group consumes its own %RETRY% topic: it exists once the group registers.
        if cd.get("groupName") and cd.get("messageModel", "CLUSTERING") == "CLUSTERING":
            ensure_topic(channel.app, retry.retry_topic(cd["groupName"]))
    notify_groups(channel.app, changed)
    return req.response()


@handles(RC.UNREGISTER_CLIENT)
def unregister_client(channel, req):
    changed = registry(channel.app).unregister(req.get_str("clientID") or "", req.get_str("producerGroup"),
                                               req.get_str("consumerGroup"))
    notify_groups(channel.app, changed)
    return req.response()


@handles(RC.GET_CONSUMER_LIST_BY_GROUP)
def consumer_list(channel, req):
    group = req.get_str("consumerGroup")
    ids = registry(channel.app).consumer_ids(group)
    if not ids:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {group}")
    return req.response(body=dumps({"consumerIdList": ids}))


@handles(RC.CHECK_CLIENT_CONFIG)
def check_client_config(channel, req):
    """The Java client asks before using a non-TAG subscription (MessageSelector.bySql): compile it."""
    try:
        body = json.loads(req.body or b"{}")
        subscription = body.get("subscriptionData") if isinstance(body, dict) else None
    except ValueError as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad client config body: {exc}")
    error = _subscription_error(subscription) if subscription is not None else None
    if error:
        return req.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=error)
    return req.response()


def _mq_list(body: dict) -> list[tuple[str, int]]:
    return [(mq["topic"], int(mq["queueId"])) for mq in body.get("mqSet") or []
            if mq.get("brokerName", BROKER_NAME) == BROKER_NAME]


@handles(RC.LOCK_BATCH_MQ)
def lock_batch(channel, req):
    try:
        body = json.loads(req.body)
        granted = registry(channel.app).lock(body["consumerGroup"], body["clientId"], _mq_list(body))
    except (ValueError, KeyError, TypeError) as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad lock body: {exc}")
    mqs = [{"brokerName": BROKER_NAME, "queueId": q, "topic": t} for t, q in granted]
    return req.response(body=dumps({"lockOKMQSet": mqs}))


@handles(RC.UNLOCK_BATCH_MQ)
def unlock_batch(channel, req):
    try:
        body = json.loads(req.body)
        registry(channel.app).unlock(body["consumerGroup"], body["clientId"], _mq_list(body))
    except (ValueError, KeyError, TypeError) as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad unlock body: {exc}")
    return req.response()


# ---------------------------------------------------------------- lookups

@handles(RC.QUERY_MESSAGE)
def query_message(channel, req):
    s = channel.app.store
    topic, key = req.get_str("topic"), req.get_str("key")
    max_num = min(req.get_int("maxNum", 32), 64)
    end = min(req.get_int("endTimestamp", 2**63 - 1), 2**62)
    found = s.query_by_key(topic, key, max_num, req.get_int("beginTimestamp", 0), end)
    if not found:
        return req.response(ResponseCode.QUERY_NOT_FOUND, remark="can not find message, maybe time range not correct")
    parts, size = [], 0
    for m in found:
        if size > MAX_BODY_BYTES - m.size:
            break
        size += m.size
        if m.sys_flag & inner_batch.INNER_BATCH_FLAG:
            parts.extend(inner_batch.expand_matching_key(m, key))
        else:
            parts.append(m.raw)
    return req.response(ext_fields={"indexLastUpdateTimestamp": max(m.store_timestamp for m in found),
                                    "indexLastUpdatePhyoffset": max(m.physical_offset for m in found)},
                        body=b"".join(parts))


@handles(RC.VIEW_MESSAGE_BY_ID)
def view_message(channel, req):
    offset = req.get_int("offset")
    m = channel.app.store.get(offset) if offset >= 0 else None
    if m is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"can not find message by the offset, {offset}")
    if m.sys_flag & inner_batch.INNER_BATCH_FLAG:  # a Kafka batch: its records, the first one first
        return req.response(body=b"".join(inner_batch.expand(m, m.queue_offset, 0, parse_tags(None))))
    return req.response(body=m.raw)


@handles(RC.CONSUMER_SEND_MSG_BACK)
def consumer_send_back(channel, req):
    """Re-deliver a message the consumer could not process (%RETRY%<group> through the delay
    levels, or %DLQ%<group>): semantics.retry does the work. For a record of a Kafka batch the
    message id picks the record out of the entry."""
    app = channel.app
    offset, group = req.get_int("offset"), req.get_str("group") or ""
    args = (req.get_int("delayLevel", 0), req.get_int("maxReconsumeTimes", retry.DEFAULT_MAX_RECONSUME_TIMES),
            req.get_str("originMsgId"), _now_ms(), _levels(app))
    entry = app.store.get(offset) if offset >= 0 else None
    if entry is not None and entry.sys_flag & inner_batch.INNER_BATCH_FLAG:
        record = inner_batch.find_record(entry, req.get_str("originMsgId"))
        if record is None:
            return req.response(ResponseCode.SYSTEM_ERROR, remark="no such record in the Kafka batch")
        msg = retry.build_send_back(record, group, *args)
        routing.ensure_topic(app.store, msg.topic if msg.topic.startswith("%DLQ%") else retry.retry_topic(group), 1)
        result = app.store.append(msg)
    else:
        result = retry.consumer_send_back(app.store, offset, group, *args)
    if result is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark="look message by offset failed")
    return _after_durable(channel, req, result.end_offset, req.response())


@handles(RC.RESEND_DLQ_MESSAGE)
def resend_dlq_message(channel, req):
    """Admin: a dead letter back on its original topic (semantics.retry.resend_from_dlq)."""
    queue_id = req.get_int("queueId", -1)
    result = retry.resend_from_dlq(channel.app.store, req.get_int("commitLogOffset"),
                                   queue_id if queue_id >= 0 else None)
    if result is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark="not a dead letter with a known original topic")
    fields = {"msgId": smsg.make_msg_id(channel.app.config.advertised, channel.local_port, result.physical_offset),
              "queueOffset": result.queue_offset}
    entry = channel.app.store.get(result.physical_offset)
    if entry is not None:
        fields["queueId"] = entry.queue_id
        fields["topic"] = entry.topic
    return _after_durable(channel, req, result.end_offset, req.response(ext_fields=fields))


@handles(RC.END_TRANSACTION)
def end_transaction(channel, req):
    """Commit (8) or roll back (12) a half message; 0 (unknown) leaves it to the check-back."""
    app = channel.app
    kind = req.get_int("commitOrRollback", 0)
    if kind not in (8, 12) or getattr(app, "transactions", None) is None:
        return req.response()
    outcome, result = app.transactions.end(req.get_int("tranStateTableOffset"), kind == 8,
                                           req.get_str("producerGroup"), req.get_int("commitLogOffset"))
    if outcome.name in ("NOT_FOUND", "MISMATCH"):
        return req.response(ResponseCode.SYSTEM_ERROR, remark=outcome.value)
    if result is None:
        return req.response()
    return _after_durable(channel, req, result.end_offset, req.response())


async def send_transaction_check(app, producer_group: str, half, body: bytes) -> bool:
    """Checker for semantics.transactions: CHECK_TRANSACTION_STATE (oneway) to a live producer."""
    channels = [c for c in registry(app).producer_channels(producer_group) if not c.closed]
    if not channels:
        return False
    uniq = half.properties.get("UNIQ_KEY")
    channels[0].send_oneway(RemotingCommand(code=RC.CHECK_TRANSACTION_STATE, flag=2, body=body, ext_fields={
        "tranStateTableOffset": str(half.queue_offset), "commitLogOffset": str(half.physical_offset),
        "msgId": uniq or "", "transactionId": uniq or "", "offsetMsgId": half.msg_id,
        "topic": half.properties.get("REAL_TOPIC", half.topic)}))
    return True
