"""Lite topic consumption over remoting, as the RocketMQ 5.5 broker serves it to its proxy (which
sends these for each gRPC lite push consumer; no remoting SDK has a lite consumer):
LITE_SUBSCRIPTION_CTL sets a client's lite topics, POP_LITE_MESSAGE pops them (gateway.lite_pop),
ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME with a `liteTopic` header settle what it popped.

5.5 keeps each lite topic in an LMQ queue of its own and hands out each message with the properties
INNER_MULTI_DISPATCH (`%LMQ%$P$L`) and INNER_MULTI_QUEUE_OFFSET (its offset in that queue), which the
client echoes as the ack's offset with queueId 0 and reviveQid 999. Here a lite topic has no queue
of its own (semantics.lite): the offset handed out is the message's offset in its queue of the
parent, so it grows but not by one. Answers and refusals are 5.5's (measured,
tests/remoting/test_remoting_lite.py)."""
from __future__ import annotations

import json

import trio

from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting.extra_info import parse_extra_info
from codec.remoting.message import with_properties
from gateway.cluster.remoting_queues import own_broker_name
from gateway.lite_pop import pop_subscriptions, ttl
from gateway.remoting.common import DEFERRED, FAQ, handles, now_ms
from gateway.remoting.headers import (RequestError, optional_long, optional_str, required_int, required_long,
                                      required_str)
from gateway.remoting.pop import _after_logged, _encode, _invisible, _to_dlq, ack_message as _pop_ack
from gateway.remoting.pop import change_invisible_time as _pop_change
from semantics import lite
from semantics.pop import Receipt

MAX_POP_NUMS = 32
MAX_POLL_S = 20.0
LITE_REVIVE_QID = 999  # 5.5 marks a lite pop's receipt so
ILLEGAL_OPERATION = 604
LITE_SUBSCRIPTION_QUOTA_EXCEEDED = 2018


def clients(app) -> dict:
    """client id -> semantics.lite.LiteClient of the remoting lite consumers."""
    return app.pop_remoting.lite_clients


def bound_topic(app, group: str) -> str:
    return app.subscription_groups.get(group, "lite.bind.topic")


@handles(RC.LITE_SUBSCRIPTION_CTL)
def lite_subscription_ctl(channel, req):
    app = channel.app
    if not req.body:
        return req.response(ILLEGAL_OPERATION, remark="Request body is null.")
    try:
        body = json.loads(req.body)
    except (ValueError, RecursionError) as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad LiteSubscriptionCtlRequestBody: {exc}")
    entries = body.get("subscriptionSet") if isinstance(body, dict) else None
    if not isinstance(entries, list) or not entries:
        return req.response(ILLEGAL_OPERATION, remark="LiteSubscriptionCtlRequestBody is empty.")
    registered = clients(app)
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        client, group, topic = (entry.get(k) for k in ("clientId", "group", "topic"))
        if not all(isinstance(v, str) and v.strip() for v in (client, group, topic)):
            continue  # as 5.5: an entry without client, group or topic is skipped
        names = entry.get("liteTopicSet") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return req.response(ResponseCode.SYSTEM_ERROR, remark="liteTopicSet is not a list of names")
        action = entry.get("action")
        current = registered.get(client)
        if action in ("PARTIAL_ADD", "COMPLETE_ADD"):
            # 5.5 checks its count before a PARTIAL_ADD; here COMPLETE_ADD and new clients too (bounded memory)
            if _subscription_count(app) >= lite.MAX_SUBSCRIPTIONS or \
                    (current is None and len(registered) >= lite.MAX_SUBSCRIPTIONS):
                return req.response(LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
                                    remark=f"LiteQuotaException: lite subscription quota exceeded "
                                           f"{lite.MAX_SUBSCRIPTIONS}")
            if current is None or (current.group, current.topic) != (group, topic):
                current = registered[client] = lite.LiteClient(group, topic)
            added = set(names) - current.names
            current.names = current.names | set(names) if action == "PARTIAL_ADD" else set(names)
            _start(app, group, topic, added, lite.offset_option(entry.get("offsetOption")))
        elif action == "PARTIAL_REMOVE" and current is not None:
            current.names = current.names - set(names)
        elif action == "COMPLETE_REMOVE":
            registered.pop(client, None)
    return req.response(ResponseCode.SUCCESS)


def _subscription_count(app) -> int:
    return sum(len(c.names) for c in clients(app).values())


def _start(app, group: str, topic: str, added: set, option) -> None:
    """New subscriptions start by their offset option, and wake the pops waiting on their queues."""
    cfg = app.store.topics.get(topic)
    if cfg is None:
        return
    for name in added:
        qid = lite.queue_of(name, cfg.write_queues)
        start = lite.start_of(app.store, topic, qid, name, *option, **ttl(app, topic)) if option else None
        if start is not None:
            app.pop.reset(lite.subscription_group(group, name), topic, qid, start)
        app.arrivals.notify(topic, qid)


def _refusal(app, req, group: str, topic: str, max_n: int):
    """5.5's preCheck of a POP_LITE_MESSAGE, in its order; None when the pop may go on."""
    born, poll_ms = optional_long(req, "bornTime", 0), optional_long(req, "pollTime", 0)
    if poll_ms > 0 and born > 0 and now_ms() - born - poll_ms > 500:
        return ResponseCode.POLLING_TIMEOUT, f"the broker[{own_broker_name(app)}] pop message is timeout too much"
    if max_n > MAX_POP_NUMS:
        return ResponseCode.INVALID_PARAMETER, \
            f"the broker[{own_broker_name(app)}] pop message's num is greater than 32"
    cfg = app.store.topics.get(topic)
    if cfg is None:
        return ResponseCode.TOPIC_NOT_EXIST, f"topic [{topic}] not exist, apply first please!{FAQ}"
    if not cfg.perm & 4:
        return ResponseCode.NO_PERMISSION, f"the topic [{topic}] peeking message is forbidden"
    if (cfg.attributes or {}).get("message.type") != "LITE":
        return ResponseCode.INVALID_PARAMETER, f"the topic [{topic}] message type not match"
    if bound_topic(app, group) != topic:
        return ResponseCode.INVALID_PARAMETER, f"subscription bind topic not match, {group}"
    return None


@handles(RC.POP_LITE_MESSAGE)
def pop_lite_message(channel, req):
    app = channel.app
    client, group, topic = required_str(req, "clientId"), required_str(req, "consumerGroup"), required_str(req, "topic")
    max_n, invisible = required_int(req, "maxMsgNum"), _invisible(req, "invisibleTime")
    refused = _refusal(app, req, group, topic, max_n)
    if refused is not None:
        return req.response(refused[0], {"popTime": 0, "invisibleTime": 0, "reviveQid": 0}, remark=refused[1])
    queues = app.store.topics.get(topic).write_queues
    subscriber = clients(app).get(client)

    def once():
        pop_time = app.pop.new_pop_time()
        found = []
        if subscriber is not None and subscriber.topic == topic:
            subscriber.last_access_ms = now_ms()
            with app.pop.writes.deferred(app.flow):
                found = pop_subscriptions(app, group, topic, set(subscriber.names), queues, invisible, max_n,
                                          max_n, pop_time, lambda m, o: _to_dlq(app, group, m, o))
        return _answer(req, pop_time, invisible, topic, found)

    resp = once()
    poll_ms = optional_long(req, "pollTime", 0)
    if resp.code == ResponseCode.SUCCESS or poll_ms <= 0:
        return _after_logged(channel, req, resp, durable=False)

    async def long_poll():
        deadline = trio.current_time() + min(poll_ms / 1000.0, MAX_POLL_S)
        result = resp
        while result.code != ResponseCode.SUCCESS and (remaining := deadline - trio.current_time()) > 0:
            await app.arrivals.wait_any([(topic, q) for q in range(queues)], remaining)
            result = once()
        if app.pop.writes.pending:
            await app.pop.writes.written()
        return result
    channel.spawn(req, long_poll)
    return DEFERRED


def _answer(req, pop_time: int, invisible: int, topic: str, found: list):
    """5.5's answer: the messages (each with its lite topic's LMQ name and its offset) and, per
    message, its earlier deliveries in orderCountInfo; or POLLING_TIMEOUT NO_MESSAGE_IN_QUEUE."""
    parts, counts = [], []
    for name, qid, deliveries in found:
        for delivery, raw in zip(deliveries, _encode(deliveries, qid)):
            parts.append(with_properties(raw, {"INNER_MULTI_DISPATCH": lite.lmq_name(topic, name),
                                               "INNER_MULTI_QUEUE_OFFSET": str(delivery.offset)}))
            counts.append(str(delivery.count - 1))
    header = {"popTime": pop_time, "invisibleTime": invisible, "reviveQid": LITE_REVIVE_QID,
              "orderCountInfo": ";".join(counts)}
    if not parts:
        return req.response(ResponseCode.POLLING_TIMEOUT, header, remark="NO_MESSAGE_IN_QUEUE")
    return req.response(ResponseCode.SUCCESS, header, body=b"".join(parts), remark="FOUND")


def _lite_receipt(app, req):
    """The lite subscription receipt an ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME names, checked as
    5.5 checks it: (receipt, refusal or None)."""
    group, topic, name = required_str(req, "consumerGroup"), required_str(req, "topic"), required_str(req, "liteTopic")
    qid, offset = required_int(req, "queueId"), required_long(req, "offset")
    cfg = app.store.topics.get(topic)
    if cfg is None:
        raise RequestError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{FAQ}")
    if not 0 <= qid < cfg.read_queues:
        raise RequestError(ResponseCode.MESSAGE_ILLEGAL, f"queueId[{qid}] is illegal, topic:[{topic}] "
                                                         f"topicConfig.readQueueNums:[{cfg.read_queues}]")
    if bound_topic(app, group) != topic:
        raise RequestError(ResponseCode.INVALID_PARAMETER, "group type or bind topic not match.")
    own_queue = lite.queue_of(name, cfg.write_queues)
    if offset > app.store.max_offset(topic, own_queue):
        raise RequestError(ResponseCode.NO_MESSAGE, "ack offset illegal.")
    try:
        info = parse_extra_info(required_str(req, "extraInfo"))
    except ValueError as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"parse extraInfo failed: {exc}") from None
    if qid != 0 or info.revive_qid != LITE_REVIVE_QID:
        raise RequestError(ResponseCode.INVALID_PARAMETER, "ack queue illegal.")
    return Receipt(lite.subscription_group(group, name), topic, own_queue, offset, info.pop_time), info


def _settled(app, receipt: Receipt) -> bool:
    """Whether the receipt's message was acknowledged already (5.5 answers such an ack SUCCESS)."""
    state = app.pop.state(receipt.group, receipt.topic, receipt.queue_id)
    return state is None or receipt.offset < state.start or receipt.offset in state.done


@handles(RC.ACK_MESSAGE)
def ack_message(channel, req):
    """A receipt with a lite topic is a lite subscription's; any other is POP's (gateway.remoting.pop)."""
    if not optional_str(req, "liteTopic"):
        return _pop_ack(channel, req)
    app = channel.app
    receipt, _ = _lite_receipt(app, req)
    with app.pop.writes.deferred(app.flow):
        done, end = app.pop.ack([receipt])
    if not done and not _settled(app, receipt):
        return req.response(ResponseCode.MESSAGE_ILLEGAL, remark="ack offset illegal.")
    app.arrivals.notify(receipt.topic, receipt.queue_id)  # the lite topic's next message may go
    return _after_logged(channel, req, req.response(ResponseCode.SUCCESS), end)


@handles(RC.CHANGE_MESSAGE_INVISIBLETIME)
def change_invisible_time(channel, req):
    if not optional_str(req, "liteTopic"):
        return _pop_change(channel, req)
    app = channel.app
    invisible = _invisible(req, "invisibleTime")
    receipt, info = _lite_receipt(app, req)
    with app.pop.writes.deferred(app.flow):
        renewed = app.pop.renew(receipt, invisible)
    if renewed is None:
        return req.response(ResponseCode.MESSAGE_ILLEGAL, remark="change invisible time offset illegal.")
    deadline, end = renewed
    resp = req.response(ResponseCode.SUCCESS, {"popTime": receipt.pop_time,
                                               "invisibleTime": deadline - receipt.pop_time,
                                               "reviveQid": LITE_REVIVE_QID})
    return _after_logged(channel, req, resp, end)
