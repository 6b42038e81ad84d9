"""Consumer send-back processor: CONSUMER_SEND_MSG_BACK (a message the consumer could not process
goes to %RETRY%<group> through the delay levels, or to %DLQ%<group>) and our admin
RESEND_DLQ_MESSAGE (a dead letter back on its original topic). semantics.retry does the work."""
from __future__ import annotations

import interop.to_rocketmq as inner_batch
from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting import message as smsg
from gateway.cluster import dead_letters
from gateway.remoting.common import DEFERRED, FAQ, after_durable, delay_levels, handles, legal_group, now_ms
from gateway.remoting.headers import optional_int, optional_str, required_long
from semantics import retry, routing
from semantics.flow_control import append_in_turn


@handles(RC.CONSUMER_SEND_MSG_BACK)
def consumer_send_back(channel, req):
    """For a record of a Kafka batch the message id picks the record out of the entry."""
    app = channel.app
    offset, group = required_long(req, "offset"), optional_str(req, "group")
    if group and not legal_group(group):
        return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark=f"subscription group not exist, {group}{FAQ}")
    origin_msg_id = req.get_str("originMsgId")
    args = (optional_int(req, "delayLevel", 0),
            optional_int(req, "maxReconsumeTimes", retry.DEFAULT_MAX_RECONSUME_TIMES),
            origin_msg_id, now_ms(), delay_levels(app))
    entry = app.store.get(offset) if offset >= 0 else None
    if entry is not None and entry.sys_flag & inner_batch.INNER_BATCH_FLAG:
        record = inner_batch.find_record(entry, origin_msg_id)
        if record is None:
            return req.response(ResponseCode.SYSTEM_ERROR, remark="no such record in the Kafka batch")
        msg = retry.build_send_back(record, group, *args)
        routing.ensure_topic(app.store, msg.topic if msg.topic.startswith("%DLQ%") else retry.retry_topic(group), 1)
    else:
        msg = retry.send_back_message(app.store, offset, group, *args)
    if msg is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark="look message by offset failed")
    msg = dead_letters.placed(app, msg)
    return _store_then_answer(channel, req, msg, lambda result: after_durable(channel, req, result.end_offset,
                                                                              req.response()))


@handles(RC.RESEND_DLQ_MESSAGE)
def resend_dlq_message(channel, req):
    """Admin: a dead letter back on its original topic (semantics.retry.resend_from_dlq)."""
    queue_id = optional_int(req, "queueId", -1)
    msg = retry.dlq_resend_message(channel.app.store, required_long(req, "commitLogOffset"),
                                   queue_id if queue_id >= 0 else None)
    if msg is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark="not a dead letter with a known original topic")
    return _store_then_answer(channel, req, msg, lambda result: _resent(channel, req, result))


def _resent(channel, req, result):
    fields = {"msgId": smsg.make_msg_id(channel.app.config.advertised, channel.local_port, result.physical_offset),
              "queueOffset": result.queue_offset}
    entry = channel.app.store.get(result.physical_offset)
    if entry is not None:
        fields["queueId"] = entry.queue_id
        fields["topic"] = entry.topic
    return after_durable(channel, req, result.end_offset, req.response(ext_fields=fields))


def _store_then_answer(channel, req, msg, answer):
    """Append `msg` and answer `answer(result)`: at once while the disk keeps up, else from its own
    task once the append, off the event loop in the flow's turn (`app.flow`), is done."""
    app = channel.app
    if app.flow.appends_inline(app.store):
        return answer(app.store.append(msg))

    async def in_turn():
        resp = answer((await append_in_turn(app.flow, app.store, [msg]))[0])
        return None if resp is DEFERRED else resp  # the durable wait answers it
    channel.spawn(req, in_turn)
    return DEFERRED
