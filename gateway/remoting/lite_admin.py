"""The lite topic admin queries of RocketMQ 5.5 (mqadmin getLiteTopicInfo, getParentTopicInfo,
getLiteClientInfo, getLiteGroupInfo, getBrokerLiteInfo, triggerLiteDispatch), answered from the lite
index (semantics.lite) and the lite consumers of both faces: remoting (gateway.remoting.pop_lite)
and gRPC lite push consumers. 5.5 counts a lite topic's offsets in its own LMQ queue; here they are
counted the same way from the index (its n-th message is offset n), so maxOffset is the number of
its messages and a group's consumer offset the number it has finished. Refusals are 5.5's."""
from __future__ import annotations

import json

from codec.remoting import RequestCode as RC, ResponseCode
from gateway.lite_pop import ttl
from gateway.remoting.common import handles
from gateway.remoting.headers import optional_int, optional_str, required_str
from gateway.remoting.pop_lite import bound_topic, clients
from semantics import lite

MAX_CLIENT_TOPICS = 10_000  # 5.5 lists at most this many of a client's lite topics


def _body(req, obj: dict):
    return req.response(ResponseCode.SUCCESS, body=json.dumps(obj, sort_keys=True).encode())


def _lite_parent(app, topic: str):
    """The parent's config, or 5.5's refusal (code, remark)."""
    cfg = app.store.topics.get(topic)
    if cfg is None:
        return None, (ResponseCode.TOPIC_NOT_EXIST, f"Topic [{topic}] not exist.")
    if (cfg.attributes or {}).get("message.type") != "LITE":
        return None, (ResponseCode.INVALID_PARAMETER, f"Topic [{topic}] type not match.")
    return cfg, None


def _ttl(cfg) -> int:
    value = (cfg.attributes or {}).get("lite.topic.expiration", "-1")
    return int(value) if value.lstrip("-").isdigit() else -1


def subscribers(app, parent: str):
    """(client id, group, lite topics) of every lite consumer of `parent`, remoting and gRPC."""
    for client_id, c in clients(app).items():
        if c.topic == parent:
            yield client_id, c.group, c.names
    for client_id, session in app.grpc.clients.items():
        if session.lite_topics and session.group and bound_topic(app, session.group) == parent:
            yield client_id, session.group, session.lite_topics


def _bound_groups(app, parent: str) -> list[str]:
    groups = app.subscription_groups
    return sorted(g for g in groups.attributes if groups.get(g, "lite.bind.topic") == parent)


def _lite_offsets(app, cfg, parent: str, name: str):
    """(offsets of the lite topic's messages in its queue of the parent, that queue id)."""
    qid = lite.queue_of(name, cfg.write_queues)
    found = lite.offsets_of(app.store, parent, qid, name, **ttl(app, parent))
    return (found[0] if found else []), qid


def _store_time(app, topic: str, qid: int, offset: int) -> int:
    entries = app.store.read(topic, qid, offset, max_count=1).entries
    return entries[0][1].store_timestamp if entries else 0


@handles(RC.GET_LITE_TOPIC_INFO)
def get_lite_topic_info(channel, req):
    app = channel.app
    parent, name = required_str(req, "parentTopic"), optional_str(req, "liteTopic")
    cfg, refused = _lite_parent(app, parent)
    if refused:
        return req.response(refused[0], remark=refused[1])
    offsets, qid = _lite_offsets(app, cfg, parent, name)
    last = _store_time(app, parent, qid, offsets[-1]) if offsets else 0
    subscribed = [{"clientId": c, "group": g} for c, g, names in subscribers(app, parent) if name in names]
    return _body(req, {"parentTopic": parent, "liteTopic": name, "shardingToBroker": True, "subscriber": subscribed,
                       "topicOffset": {"minOffset": 0, "maxOffset": len(offsets), "lastUpdateTimestamp": last}})


@handles(RC.GET_PARENT_TOPIC_INFO)
def get_parent_topic_info(channel, req):
    app = channel.app
    parent = required_str(req, "topic")
    cfg, refused = _lite_parent(app, parent)
    if refused:
        return req.response(refused[0], remark=refused[1])
    count = lite.count_topics(app.store, parent, cfg.read_queues)
    return _body(req, {"topic": parent, "ttl": _ttl(cfg), "liteTopicCount": count, "lmqNum": count,
                       "groups": _bound_groups(app, parent)})


@handles(RC.GET_LITE_CLIENT_INFO)
def get_lite_client_info(channel, req):
    app = channel.app
    parent, group = required_str(req, "parentTopic"), required_str(req, "group")
    client_id = optional_str(req, "clientId")
    _, refused = _lite_parent(app, parent)
    if refused:
        return req.response(refused[0], remark=refused[1])
    if bound_topic(app, group) != parent:
        return req.response(ResponseCode.INVALID_PARAMETER, remark=f"Subscription [{group}]-[{parent}] not match.")
    body = {"parentTopic": parent, "group": group, "clientId": client_id, "lastConsumeTime": 0,
            "lastAccessTime": -1, "liteTopicCount": -1}
    remoting, session = clients(app).get(client_id), app.grpc.clients.get(client_id)
    names = remoting.names if remoting is not None else (session.lite_topics if session is not None else None)
    if names is not None:
        limit = min(optional_int(req, "maxCount", MAX_CLIENT_TOPICS), MAX_CLIENT_TOPICS)
        body["liteTopicCount"] = len(names)
        body["liteTopicSet"] = [lite.lmq_name(parent, n) for n in sorted(names)[:max(limit, 0)]]
    if remoting is not None:
        body["lastAccessTime"] = remoting.last_access_ms
    return _body(req, body)


def _lite_group(app, req):
    group = required_str(req, "group")
    parent = bound_topic(app, group)
    if not parent:
        return group, None, (ResponseCode.INVALID_PARAMETER, f"Group [{group}] is not a LITE group.")
    return group, parent, None


def _lag(app, cfg, group: str, parent: str, name: str):
    """(messages of lite topic `name`, how many the group finished, their offsets) for `group`."""
    offsets, qid = _lite_offsets(app, cfg, parent, name)
    start = app.pop.start_offset(lite.subscription_group(group, name), parent, qid)
    return len(offsets), sum(1 for o in offsets if o < start), offsets, qid


@handles(RC.GET_LITE_GROUP_INFO)
def get_lite_group_info(channel, req):
    app = channel.app
    group, parent, refused = _lite_group(app, req)
    if refused:
        return req.response(refused[0], remark=refused[1])
    name = optional_str(req, "liteTopic")
    body = {"group": group, "parentTopic": parent, "liteTopic": name}
    cfg = app.store.topics.get(parent)
    if name:
        total, done, offsets, qid = _lag(app, cfg, group, parent, name) if cfg is not None else (0, 0, [], 0)
        body.update(totalLagCount=-1, earliestUnconsumedTimestamp=-1)
        if total:
            last_done = _store_time(app, parent, qid, offsets[done - 1]) if done else 0
            body.update(totalLagCount=total - done,
                        earliestUnconsumedTimestamp=_store_time(app, parent, qid, offsets[done]) if done < total else 0,
                        liteTopicOffsetWrapper={"brokerOffset": total, "consumerOffset": done, "pullOffset": 0,
                                                "lastTimestamp": last_done})
        return _body(req, body)
    prefix, lags = lite.subscription_group(group, ""), []
    for sub in sorted(g for g in app.pop.groups() if g.startswith(prefix)) if cfg is not None else ():
        name = sub[len(prefix):]
        total, done, offsets, qid = _lag(app, cfg, group, parent, name)
        if total > done:
            lags.append({"liteTopic": name, "lagCount": total - done,
                         "earliestUnconsumedTimestamp": _store_time(app, parent, qid, offsets[done])})
    lags.sort(key=lambda x: -x["lagCount"])
    body.update(totalLagCount=sum(x["lagCount"] for x in lags), earliestUnconsumedTimestamp=-1,
                lagCountTopK=lags[:max(optional_int(req, "topK", 10), 0)], lagTimestampTopK=[])
    return _body(req, body)


@handles(RC.GET_BROKER_LITE_INFO)
def get_broker_lite_info(channel, req):
    app = channel.app
    lite_topics = {t: _ttl(cfg) for t, cfg in _lite_topics(app)}
    return _body(req, {"storeType": "default", "maxLmqNum": 0, "currentLmqNum": 0, "eventMapSize": 0,
                       "liteSubscriptionCount": sum(len(c.names) for c in clients(app).values()) +
                       sum(len(s.lite_topics) for s in app.grpc.clients.values()),
                       "orderInfoCount": sum(1 for key in app.grpc.fifo_in_flight if lite.GROUP_SEPARATOR in key[0]),
                       "cqTableSize": sum(cfg.read_queues for _, cfg in _lite_topics(app)), "offsetTableSize": 0,
                       "topicMeta": lite_topics,
                       "groupMeta": {t: _bound_groups(app, t) for t in lite_topics if _bound_groups(app, t)}})


def _lite_topics(app):
    topics = app.store.topics
    return [(t, cfg) for t in topics.names() if (cfg := topics.get(t)) is not None
            and (cfg.attributes or {}).get("message.type") == "LITE"]


@handles(RC.TRIGGER_LITE_DISPATCH)
def trigger_lite_dispatch(channel, req):
    """5.5 re-announces the group's lite topics that have messages; here each pop looks at every
    subscription anyway, so only the waiting pops of the parent are woken."""
    app = channel.app
    _, parent, refused = _lite_group(app, req)
    if refused:
        return req.response(refused[0], remark=refused[1])
    cfg = app.store.topics.get(parent)
    for qid in range(cfg.write_queues if cfg is not None else 0):
        app.arrivals.notify(parent, qid)
    return req.response(ResponseCode.SUCCESS)
