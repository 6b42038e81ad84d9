"""Client management processor: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
CHECK_CLIENT_CONFIG and the orderly consumer's queue locks (LOCK/UNLOCK_BATCH_MQ).

The JSON bodies are checked for the shape the registry relies on before anything is registered, so
a malformed body is a SYSTEM_ERROR answer (a broker's body decoding fails the same way), never an
exception inside the registry.
"""
from __future__ import annotations

import json

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting.bodies import dumps
from gateway.cluster import remoting_queues
from gateway.remoting.common import ensure_topic, handles, legal_group, registry
from gateway.remoting.headers import INT_MAX, RequestError, optional_str, required_str
from semantics import retry
from semantics.sql92 import FilterSyntaxError, subscription_filter


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


def channel_closed(channel) -> None:
    """Forget what was registered over a closed connection and tell the groups that changed."""
    notify_groups(channel.app, registry(channel.app).channel_closed(channel))


def _json_body(req, what: str) -> dict:
    try:
        body = json.loads(req.body or b"{}")
    except (ValueError, RecursionError) as exc:  # ValueError: bad UTF-8 or JSON; RecursionError: nesting
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what} body: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what} body: not an object")
    return body


def _objects(value, what: str) -> list[dict]:
    """A JSON array of objects (absent or null: empty)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what}: not a list of objects")
    return value


def _text(obj: dict, key: str, what: str, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what}: {key} is not a string")
    return value


def _heartbeat_body(req) -> dict:
    """The HeartbeatData body, checked: strings where the registry keys by them, lists of objects."""
    data = _json_body(req, "heartbeat")
    _text(data, "clientID", "heartbeat body")
    for producer in _objects(data.get("producerDataSet"), "heartbeat producerDataSet"):
        _text(producer, "groupName", "heartbeat producerDataSet")
    for consumer in _objects(data.get("consumerDataSet"), "heartbeat consumerDataSet"):
        _text(consumer, "groupName", "heartbeat consumerDataSet")
        for sub in _objects(consumer.get("subscriptionDataSet"), "heartbeat subscriptionDataSet"):
            _text(sub, "topic", "heartbeat subscription")
    return data


def _subscription_error(subscription) -> str | None:
    """Why a SubscriptionData cannot be used (a malformed SQL92 expression, an unknown type), or None."""
    if not isinstance(subscription, dict):
        return "subscription data is not an object"
    for key in ("expressionType", "subString"):
        if not isinstance(subscription.get(key), (str, type(None))):
            return f"the subscription's {key} is not a string"
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
    data = _heartbeat_body(req)
    # a consumer of a group RocketMQ refuses is answered SUCCESS and not registered, as RocketMQ 5 does
    consumers = [cd for cd in data.get("consumerDataSet") or [] if legal_group(cd.get("groupName"))]
    data = {**data, "consumerDataSet": consumers}
    for cd in consumers:
        for sub in cd.get("subscriptionDataSet") or []:
            error = _subscription_error(sub)
            if error:
                return req.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=error)
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
    changed = registry(channel.app).unregister(optional_str(req, "clientID"), req.get_str("producerGroup"),
                                               req.get_str("consumerGroup"))
    notify_groups(channel.app, changed)
    return req.response()


@handles(RC.GET_CONSUMER_LIST_BY_GROUP)
def consumer_list(channel, req):
    group = required_str(req, "consumerGroup")
    ids = registry(channel.app).consumer_ids(group)
    if not ids:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {group}")
    return req.response(body=dumps({"consumerIdList": ids}))


@handles(RC.CHECK_CLIENT_CONFIG)
def check_client_config(channel, req):
    """The Java client asks before using a non-TAG subscription (MessageSelector.bySql): compile it."""
    subscription = _json_body(req, "client config").get("subscriptionData")
    error = _subscription_error(subscription) if subscription is not None else None
    if error:
        return req.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=error)
    return req.response()


def _lock_body(req, what: str, app) -> tuple[str, str, dict[tuple[str, int], dict]]:
    """A LockBatchRequestBody / UnlockBatchRequestBody: group, client id, and this broker's queues:
    (topic, cluster queue id) -> the MessageQueue as the client named it (its brokerName: this broker
    with a broker-local id, or a static topic's mock broker with the cluster's id; remoting_queues)."""
    body = _json_body(req, what)
    group, client_id = _text(body, "consumerGroup", what, True), _text(body, "clientId", what, True)
    mqs = {}
    for mq in _objects(body.get("mqSet"), f"{what} mqSet"):
        topic, qid = _text(mq, "topic", what, True), mq.get("queueId")
        if type(qid) is not int or not 0 <= qid <= INT_MAX:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what}: queueId {qid!r} is illegal")
        broker = mq.get("brokerName", remoting_queues.own_broker_name(app))
        cluster_qid = remoting_queues.lock_queue_id(app, topic, broker, qid)
        if cluster_qid is not None:
            mqs[(topic, cluster_qid)] = {"brokerName": broker, "queueId": qid, "topic": topic}
    return group, client_id, mqs


@handles(RC.LOCK_BATCH_MQ)
def lock_batch(channel, req):
    group, client_id, mqs = _lock_body(req, "lock", channel.app)
    granted = registry(channel.app).lock(group, client_id, list(mqs))
    return req.response(body=dumps({"lockOKMQSet": [mqs[key] for key in granted]}))


@handles(RC.UNLOCK_BATCH_MQ)
def unlock_batch(channel, req):
    group, client_id, mqs = _lock_body(req, "unlock", channel.app)
    registry(channel.app).unlock(group, client_id, list(mqs))
    return req.response()
