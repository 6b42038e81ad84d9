"""Send processor: SEND_MESSAGE (V1 header), SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (short names).

A send is validated and routed by `prepare_send`, appended to the CommitLog, and answered by
`finish_send` (in sync-flush mode only once durable). The connection appends the sends that arrive
together in one write (connection.py); `send_message` is the path for one send alone.
"""
from __future__ import annotations

import functools
import random
import zlib

import store
from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.remoting import FLAG_RESPONSE, RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting import message as smsg
from codec.remoting.bodies import decode_batch
from codec.remoting.message import INNER_BATCH_FLAG
from gateway.cluster import dead_letters
import gateway.remoting.diskless as diskless
from gateway.remoting.common import (CLUSTER_NAME, DEFERRED, REGION, after_durable, delay_levels, ensure_topic, handles,
                                     now_ms)
from gateway.remoting.headers import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, RequestError, optional_int, optional_str
from semantics import lite, priority, retry, routing

# SendMessageRequestHeaderV2 short names -> SendMessageRequestHeader names.
V2_NAMES = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
            "e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
            "j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "brokerName"}
_V2_SHORT = {long_name: short for short, long_name in V2_NAMES.items()}
MAX_PROPERTIES_CHARS = 32767 - 64  # a Java short, with room for the properties the broker adds
# What the RocketMQ broker adds to each message it stores (5.5 stores all three): the 5.x client's
# consume trace hook writes no SubBefore/SubAfter record for a message without them.
BROKER_PROPERTIES = {"CLUSTER": CLUSTER_NAME, "MSG_REGION": REGION, "TRACE_ON": "true"}


class PreparedSend:
    """The messages of one send request, checked and routed, waiting for their CommitLog append.
    Consecutive sends on one connection are appended together (connection.py), one write for many."""
    __slots__ = ("req", "msgs", "qid", "topic")

    def __init__(self, req, msgs, qid, topic: str) -> None:
        self.req, self.msgs, self.qid, self.topic = req, msgs, qid, topic


class _SendHeader:
    """The send header fields by their long names, whichever header form (V1 or V2) the request uses."""

    def __init__(self, req) -> None:
        self.req = req
        self.v1 = req.code == RC.SEND_MESSAGE

    def name(self, long_name: str) -> str:
        return long_name if self.v1 else _V2_SHORT[long_name]

    def str(self, long_name: str) -> str:
        return optional_str(self.req, self.name(long_name))

    def int(self, long_name: str, default: int, lo: int = INT_MIN, hi: int = INT_MAX) -> int:
        return optional_int(self.req, self.name(long_name), default, lo, hi)


def prepare_send(channel, req) -> "RemotingCommand | PreparedSend":
    """Validate a SEND_MESSAGE(_V2)/SEND_BATCH_MESSAGE and build its messages; an error answer if bad."""
    app = channel.app
    busy = app.flow.refusal(channel.read_at)
    if busy:
        return req.response(ResponseCode.SYSTEM_BUSY, remark=busy)
    h = _SendHeader(req)
    topic = h.str("topic")
    sys_flag = h.int("sysFlag", 0)
    if sys_flag & INNER_BATCH_FLAG:  # our own mark for a stored Kafka record batch, never a client's
        return req.response(ResponseCode.MESSAGE_ILLEGAL,
                            remark="sysFlag 0x80 (inner batch) is reserved for Kafka record batches")
    try:
        cfg = ensure_topic(app, topic, h.int("defaultTopicQueueNums", app.config.default_partitions, lo=0))
        if cfg is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST,
                                remark=f"topic[{topic}] not exist, apply first please!")
        if not cfg.perm & 2:
            return req.response(ResponseCode.NO_PERMISSION, remark=f"the topic[{topic}] sending is forbidden")
        qid = _queue_for(req, cfg, h.int("queueId", -1))
        if app.replication.write_refusal(topic, qid):  # a replica: only the queue's leader takes writes
            return req.response(ResponseCode.SERVICE_NOT_AVAILABLE,
                                remark=f"queue {qid} of topic[{topic}] is a replica here, send to its leader")
        raw_props = h.str("properties")
        if len(raw_props) > MAX_PROPERTIES_CHARS and len(raw_props.encode()) > MAX_PROPERTIES_CHARS:
            return req.response(ResponseCode.MESSAGE_ILLEGAL, remark="the message properties are too long")
        header_props = smsg.string_to_properties(raw_props)
        base = dict(flag=h.int("flag", 0), sys_flag=sys_flag,
                    born_timestamp=h.int("bornTimestamp", 0, LONG_MIN, LONG_MAX) or now_ms(),
                    born_host=channel.address, reconsume_times=h.int("reconsumeTimes", 0))
        if req.code == RC.SEND_BATCH_MESSAGE or h.str("batch") == "true":
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
                props.update(BROKER_PROPERTIES)
                msgs.append(store.Message(topic=topic, queue_id=qid, body=it.body, properties=props,
                                          **{**base, "flag": it.flag}))
        else:
            header_props.update(BROKER_PROPERTIES)
            one = store.Message(topic=topic, queue_id=qid, body=req.body, properties=header_props, **base)
            msgs = [priority.place(lite.place(one, cfg.write_queues), cfg.write_queues)]  # RIP-83, RIP-80 queues
            if not app.ownership.owns(topic, msgs[0].queue_id):  # a topic made another type after it was placed
                msgs[0].queue_id = qid  # (in a cluster a LITE or PRIORITY topic is led whole: ownership.led_whole)
            if msgs[0].queue_id != qid:
                qid = msgs[0].queue_id
                if app.replication.write_refusal(topic, qid):
                    return req.response(ResponseCode.SERVICE_NOT_AVAILABLE,
                                        remark=f"queue {qid} of topic[{topic}] is a replica here, send to its leader")
        # One limit for the request body: a message's body, or a whole batch (as RocketMQ's store does).
        if len(req.body or b"") > app.config.max_message_bytes:
            return req.response(ResponseCode.MESSAGE_ILLEGAL,
                                remark=f"the message body size over max value, MAX: {app.config.max_message_bytes}")
        refused = app.schema_validation.rule(cfg) and app.schema_validation.body_refusal(
            "remoting", cfg, [_plain_body(app, m) for m in msgs])  # bodies listed only for a validating topic
        if refused:
            return req.response(ResponseCode.MESSAGE_ILLEGAL, remark=refused)
        if topic.startswith(retry.RETRY_PREFIX):
            limit = h.int("maxReconsumeTimes", retry.DEFAULT_MAX_RECONSUME_TIMES)
            msgs = [_retry_or_dlq(app, m, limit) for m in msgs]
        now, levels = now_ms(), delay_levels(app)
        msgs = [routing.route(routing.adopt_rocketmq_timer(m, now), now, levels) for m in msgs]
        msgs = [dead_letters.placed(app, m) for m in msgs]  # a retry send turned dead letter (above)
    except routing.DelayRefused as exc:  # RocketMQ 5.5: MESSAGE_ILLEGAL for a timer, SYSTEM_ERROR for DELAY
        return req.response(ResponseCode.MESSAGE_ILLEGAL if exc.timer else ResponseCode.SYSTEM_ERROR, remark=str(exc))
    except store.StoreError as exc:
        return append_error(req, exc)
    return PreparedSend(req, msgs, qid, topic)


def _plain_body(app, m) -> bytes:
    """The body as the producer framed it, for schema validation: a body the client compressed
    (sysFlag bit 0; type bits 0x700: 1 LZ4 frame, 2 ZSTD, else zlib) is inflated (zlib up to the
    message size limit); one that does not inflate is validated as it is (and so refused)."""
    if not m.sys_flag & smsg.COMPRESSED_FLAG:
        return m.body
    kind = (m.sys_flag & 0x700) >> 8
    try:
        if kind in (1, 2):
            return records.decompress(records.LZ4 if kind == 1 else records.ZSTD, m.body)
        return zlib.decompressobj().decompress(m.body, app.config.max_message_bytes)
    except (zlib.error, DecodeError):
        return m.body


def _queue_for(req, cfg, qid: int) -> int:
    """The queue a send goes to: a negative id picks one at random, as a broker does; an id beyond
    the topic's queues is refused (SYSTEM_ERROR, as AbstractSendMessageProcessor.msgCheck answers)."""
    if qid >= max(cfg.read_queues, cfg.write_queues):
        raise RequestError(ResponseCode.SYSTEM_ERROR,
                           f"request queueId[{qid}] is illegal, topic[{cfg.name}] has {cfg.write_queues} queues")
    if qid < 0:
        return random.randrange(cfg.write_queues)
    return qid % cfg.write_queues


def append_error(req, exc: Exception) -> RemotingCommand:
    """The answer to a send whose append failed."""
    if isinstance(exc, store.MessageTooLarge):
        return req.response(ResponseCode.MESSAGE_ILLEGAL, remark=str(exc))
    if isinstance(exc, store.StoreFull):  # the remark is RocketMQ's "the broker's disk is full [...]"
        return req.response(ResponseCode.SERVICE_NOT_AVAILABLE, remark=str(exc))
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
    last = results[-1]
    return after_durable(channel, p.req, last.end_offset,
                         RemotingCommand(code=0, ext_fields=fields, opaque=p.req.opaque, flag=FLAG_RESPONSE),
                         (msgs[-1].topic, msgs[-1].queue_id, last.queue_offset + last.count))


@handles(RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE)
def send_message(channel, req):
    p = prepare_send(channel, req)
    if not isinstance(p, PreparedSend):
        return p
    if diskless.is_diskless_send(channel.app, p):  # through the WAL object, answered once it is committed
        channel.spawn(req, functools.partial(diskless.send, channel, p))
        return DEFERRED
    msgs = p.msgs
    try:
        results = channel.app.store.append_many(msgs) if len(msgs) > 1 else [channel.app.store.append(msgs[0])]
    except store.StoreError as exc:
        return append_error(req, exc)
    return finish_send(channel, p, results)


def _retry_or_dlq(app, m, max_reconsume_times: int):
    """A client-side retry send (%RETRY% topic) past maxReconsumeTimes goes to the DLQ."""
    group = m.topic[len(retry.RETRY_PREFIX):]
    if m.reconsume_times >= max_reconsume_times:
        ensure_topic(app, retry.dlq_topic(group))
        m.topic, m.queue_id = retry.dlq_topic(group), 0
        m.properties.pop("DELAY", None)
    return m
