"""Admin calls (mqadmin, client Admin): topic config, stats, consumer progress and connections."""
from __future__ import annotations

import json
import time

from codec.remoting import FLAG_RESPONSE, RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting.bodies import dumps, dumps_mq_map
import gateway.diskless as diskless
import gateway.diskless_topics as diskless_topics
from gateway.cluster import remoting_queues
from gateway.cluster.remoting_queues import own_broker_name, stats_queues
from gateway.remoting.common import CLUSTER_NAME, DEFERRED, group_error, handles, legal_topic, registry
from gateway.remoting.headers import optional_int
from interop.damaged import DAMAGED
from gateway.kafka.configs import tiered
from semantics.diskless import is_diskless
from semantics import lite, schema_validation, table_configs, tier_configs, topic_configs

# Kafka's tiering topic configs, also RocketMQ topic attributes (UPDATE_AND_CREATE_TOPIC "+name=value")
TIER_ATTRIBUTES = ("remote.storage.enable", "remote.log.delete.on.disable", "local.retention.ms",
                   "local.retention.bytes", "retention.ms", "retention.bytes")

VERSION_DESC = "V4_9_8"


def topic_config_json(cfg) -> dict:
    return {"attributes": dict(cfg.attributes or {}), "order": False, "perm": cfg.perm,
            "readQueueNums": cfg.read_queues, "topicFilterType": "SINGLE_TAG", "topicName": cfg.name,
            "topicSysFlag": 0, "writeQueueNums": cfg.write_queues}


def _data_version() -> dict:
    return {"counter": 1, "stateVersion": 0, "timestamp": int(time.time() * 1000)}


@handles(RC.UPDATE_AND_CREATE_TOPIC)
def create_topic(channel, req):
    topics = channel.app.store.topics
    name = req.get_str("topic")
    if not legal_topic(name):
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"The specified topic[{name}] contains illegal characters")
    read_q, write_q = optional_int(req, "readQueueNums", 8), optional_int(req, "writeQueueNums", 8)
    perm = optional_int(req, "perm", 6)
    if not (0 < read_q <= 1024 and 0 < write_q <= 1024):
        return req.response(ResponseCode.SYSTEM_ERROR, remark="queue numbers must be in 1..1024")
    cfg = topics.get(name)
    attributes = dict(cfg.attributes) if cfg is not None else {}
    for item in filter(None, (req.get_str("attributes") or "").split(",")):  # "+key=value" sets, "-key" removes
        if item.startswith("-"):
            attributes.pop(item[1:], None)
        else:
            key, _, value = item.lstrip("+").partition("=")
            attributes[key] = value
    why = lite.expiration_problem(attributes)
    if why:  # RocketMQ 5.5 answers a topic attribute out of its range so
        return req.response(ResponseCode.SYSTEM_ERROR, remark=why)
    why = _schema_attributes_problem(channel.app, attributes) or \
        tier_configs.problem(cfg.attributes if cfg is not None else {}, attributes) or \
        table_configs.switch_problem(cfg.attributes if cfg is not None else {}, attributes) or \
        _diskless_problem(channel.app, cfg, attributes)
    if why:
        return req.response(ResponseCode.INVALID_PARAMETER, remark=why)
    if cfg is None and is_diskless_config(attributes):  # recorded in the bucket first, off the loop
        async def create_diskless():
            failed = await diskless.publish(channel.app, name, attributes, max(read_q, write_q))
            if failed:
                return req.response(ResponseCode.SYSTEM_BUSY, remark=failed)
            topics.create(name, read_queues=read_q, write_queues=write_q, perm=perm, attributes=attributes)
            return req.response()
        channel.spawn(req, create_diskless)
        return DEFERRED
    if cfg is None:
        topics.create(name, read_queues=read_q, write_queues=write_q, perm=perm, attributes=attributes)
        if channel.app.ownership.creating(name):  # answered once etcd has it (ownership.creating)
            async def once_published():
                if await channel.app.ownership.published([name]):
                    return req.response(ResponseCode.SYSTEM_ERROR, remark=f"topic {name} is not in the cluster's "
                                        "etcd yet (still tried: it may be created later)")
                return req.response()
            channel.spawn(req, once_published)
            return DEFERRED
    else:
        cfg.read_queues, cfg.write_queues, cfg.perm, cfg.attributes = read_q, write_q, perm, attributes
        topics.update(cfg)
        channel.app.ownership.topic_grown(cfg)  # a cluster places the new queues
    return req.response()


def _diskless_problem(app, cfg, attributes: dict) -> str | None:
    """`diskless.enable` is set when a topic is created, never changed after (as KIP-1150)."""
    if cfg is not None:
        before = (cfg.attributes or {}).get(diskless.ATTRIBUTE)
        if attributes.get(diskless.ATTRIBUTE) != before:
            return f"{diskless.ATTRIBUTE} can only be set when the topic is created"
        return None
    return diskless.creation_problem(app, attributes)


def is_diskless_config(attributes: dict) -> bool:
    return str(attributes.get(diskless.ATTRIBUTE, "false")).strip().lower() == "true"


def _schema_attributes_problem(app, attributes: dict) -> str | None:
    """Schema validation, table and tiering attributes (the Kafka topic configs confluent.*, iceberg.*
    and TIER_ATTRIBUTES) are checked as Kafka's CreateTopics checks them; other attributes are RocketMQ's
    own and kept as given."""
    for key, value in attributes.items():
        if key.startswith(("confluent.", "iceberg.")) or key in TIER_ATTRIBUTES:
            why = topic_configs.problem(key, value, app.config.store_max_message_bytes, tiered(app))
            if why:
                return why
    return schema_validation.registry_problem(app.schema_registry, attributes)


@handles(RC.GET_ALL_TOPIC_CONFIG, RC.GET_TOPIC_CONFIG_LIST)
def all_topic_config(channel, req):
    topics = channel.app.store.topics
    table = {n: topic_config_json(topics.get(n)) for n in sorted(topics.names())}
    return req.response(body=dumps({"dataVersion": _data_version(), "topicConfigTable": table}))


@handles(RC.GET_TOPIC_CONFIG)
def topic_config(channel, req):
    cfg = channel.app.store.topics.get(req.get_str("topic") or "")
    if cfg is None:
        return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"No topic in this broker. topic: {req.get_str('topic')}")
    detail = remoting_queues.mapping_detail(channel.app, cfg.name)  # a cluster topic: its queue mapping
    return req.response(body=dumps({"topicConfig": topic_config_json(cfg), **({"mappingDetail": detail} if detail else {})}))


@handles(RC.DELETE_TOPIC_IN_BROKER)
def delete_topic(channel, req):
    topics = channel.app.store.topics
    name = req.get_str("topic")
    cfg = topics.get(name) if name else None
    if cfg is not None and channel.app.diskless is not None and is_diskless(cfg):
        async def delete_diskless():  # from the bucket first (else a restart brings it back), off the loop
            failed = await diskless_topics.delete(channel.app, name)
            if failed:
                return req.response(ResponseCode.SYSTEM_BUSY, remark=failed)
            topics.delete(name)
            return req.response()
        channel.spawn(req, delete_diskless)
        return DEFERRED
    if cfg is not None:
        topics.delete(name)
    return req.response()


@handles(RC.GET_TOPIC_STATS_INFO)
def topic_stats(channel, req):
    s = channel.app.store
    name = req.get_str("topic") or ""
    cfg = s.topics.get(name)
    if cfg is None:
        return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{name}] not exist")
    table = {}
    for qid, key in stats_queues(channel.app, name, max(cfg.read_queues, cfg.write_queues)):
        hi = s.max_offset(name, qid)
        table[key] = {"lastUpdateTimestamp": _store_time(s, name, qid, hi - 1),
                                   "maxOffset": hi, "minOffset": s.min_offset(name, qid)}
    return req.response(body=('{"offsetTable":' + dumps_mq_map(table) + "}").encode())


def _store_time(s, topic: str, qid: int, offset: int) -> int:
    if offset < 0 or offset < s.min_offset(topic, qid):
        return 0
    units = s.units(topic, qid, offset, 1)
    m = s.get(units[0][0]) if units else None
    return m.store_timestamp if m else 0


def group_topics(app, group: str) -> list[str]:
    """Topics a group consumes: from its committed offsets and its live subscriptions."""
    names = {t for (t, _q) in app.offsets.group_offsets(group)}
    g = registry(app).consumers.get(group)
    if g:
        names.update(g.subscriptions)
    return sorted(n for n in names if app.store.topics.get(n) is not None)


@handles(RC.GET_CONSUME_STATS)
def consume_stats(channel, req):
    app = channel.app
    group = req.get_str("consumerGroup") or ""
    only = req.get_str("topic")
    committed = app.offsets.group_offsets(group)
    table = {}
    for name in group_topics(app, group):
        if only and name != only:
            continue
        cfg = app.store.topics.get(name)
        for qid, key in stats_queues(app, name, cfg.read_queues):
            offset = committed.get((name, qid), 0)
            # pullOffset (5.x tools: Inflight = pullOffset - consumerOffset): pulls are not tracked, so
            # the committed offset stands for it and Inflight shows 0 rather than a negative number.
            table[key] = {"brokerOffset": app.store.max_offset(name, qid), "consumerOffset": offset,
                                       "pullOffset": offset,
                                       "lastTimestamp": _store_time(app.store, name, qid, offset - 1)}
    body = '{"consumeTps":0.0,"offsetTable":' + dumps_mq_map(table) + "}"
    return req.response(body=body.encode())


@handles(RC.GET_ALL_CONSUMER_OFFSET)
def all_consumer_offsets(channel, req):
    app = channel.app
    table = {}
    for group in app.offsets.groups():
        for (topic, qid), off in app.offsets.group_offsets(group).items():
            table.setdefault(f"{topic}@{group}", {})[str(qid)] = off
    return req.response(body=dumps({"offsetTable": table}))


def _connection(entry) -> dict:
    host, port = entry.channel.address
    return {"clientAddr": f"{host}:{port}", "clientId": entry.client_id, "language": entry.language,
            "version": entry.version}


@handles(RC.GET_CONSUMER_CONNECTION_LIST)
def consumer_connections(channel, req):
    group = req.get_str("consumerGroup") or ""
    g = registry(channel.app).consumers.get(group)
    if g is None or not g.clients:
        return req.response(ResponseCode.CONSUMER_NOT_ONLINE, remark=f"the consumer group[{group}] not online")
    body = {"connectionSet": [_connection(e) for e in g.clients.values()], "consumeFromWhere": g.consume_from_where,
            "consumeType": g.consume_type, "messageModel": g.message_model, "subscriptionTable": g.subscriptions}
    return req.response(body=dumps(body))


@handles(RC.GET_PRODUCER_CONNECTION_LIST)
def producer_connections(channel, req):
    group = req.get_str("producerGroup") or ""
    members = registry(channel.app).producers.get(group) or {}
    if not members:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"the producer group[{group}] not exist")
    return req.response(body=dumps({"connectionSet": [_connection(e) for e in members.values()]}))


@handles(RC.QUERY_TOPIC_CONSUME_BY_WHO)
def topic_consumed_by(channel, req):
    app = channel.app
    topic = req.get_str("topic") or ""
    groups = set(registry(app).groups_of_topic(topic))
    groups.update(g for g in app.offsets.groups() if any(t == topic for t, _ in app.offsets.group_offsets(g)))
    return req.response(body=dumps({"groupList": sorted(groups)}))


@handles(RC.QUERY_TOPICS_BY_CONSUMER)
def topics_of_consumer(channel, req):
    topics = group_topics(channel.app, req.get_str("group") or "")
    return req.response(body=dumps({"brokerAddr": channel.broker_addr, "topicList": topics}))


@handles(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
def all_subscription_groups(channel, req):
    app = channel.app
    attributes = app.subscription_groups.attributes
    names = set(app.offsets.groups()) | set(registry(app).consumers) | set(attributes)
    table = {n: {"brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True,
                 "consumeFromMinEnable": True, "groupName": n, "notifyConsumerIdsChangedEnable": True,
                 "retryMaxTimes": 16, "retryQueueNums": 1, "whichBrokerWhenConsumeSlowly": 1,
                 "attributes": dict(attributes.get(n, {}))}
             for n in sorted(names)}
    return req.response(body=dumps({"dataVersion": _data_version(), "subscriptionGroupTable": table}))


@handles(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
def create_subscription_group(channel, req):
    """Groups exist implicitly; their attributes are kept (semantics.subscription_groups). A name
    RocketMQ refuses is refused (INVALID_PARAMETER), attributes it refuses as the 5.5 broker does
    (SYSTEM_ERROR with the exception's words)."""
    try:
        body = json.loads(req.body or b"{}")
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    name = body.get("groupName")
    error = group_error(name if isinstance(name, str) else None)
    if error:
        return req.response(ResponseCode.INVALID_PARAMETER, remark=error)
    attributes = body.get("attributes") or {}
    if not isinstance(attributes, dict):
        return req.response(ResponseCode.INVALID_PARAMETER, remark="attributes is not a map")
    why = channel.app.subscription_groups.alter(name, attributes) if attributes else None
    return req.response(ResponseCode.SYSTEM_ERROR, remark=why) if why else req.response()


@handles(RC.DELETE_SUBSCRIPTIONGROUP)
def delete_subscription_group(channel, req):
    channel.app.subscription_groups.drop(req.get_str("groupName") or "")  # the group itself is implicit
    return req.response()


@handles(RC.GET_BROKER_RUNTIME_INFO)
def broker_runtime_info(channel, req):
    s = channel.app.store
    table = {"brokerVersionDesc": VERSION_DESC, "brokerVersion": "409", "msgPutTotalTodayNow": "0",
             "msgGetTotalTodayNow": "0", "msgPutTotalYesterdayMorning": "0", "msgGetTotalYesterdayMorning": "0",
             "msgPutTotalTodayMorning": "0", "msgGetTotalTodayMorning": "0",
             "putTps": "0.0 0.0 0.0", "getTransferedTps": "0.0 0.0 0.0",
             "commitLogMaxOffset": str(s.max_physical_offset), "commitLogMinOffset": "0",
             "commitLogDiskRatio": f"{s.disk_status()[0]:.4f}", "pageCacheLockTimeMills": "0",
             "earliestMessageTimeStamp": "0", "dispatchBehindBytes": "0",
             "bootTimestamp": str(int(time.time() * 1000)), "brokerName": own_broker_name(channel.app), "clusterName": CLUSTER_NAME,
             # ours (docs/robustness.md): corrupt entries served to no client, undecodable ones skipped
             "quarantinedEntries": str(len(s.quarantined())), "skippedEntries": str(DAMAGED.skipped),
             "diskFull": str(s.disk_status()[1]).lower()}
    return req.response(body=dumps({"table": table}))


@handles(RC.GET_BROKER_CONFIG)
def broker_config(channel, req):
    text = (f"brokerName={own_broker_name(channel.app)}\nbrokerClusterName={CLUSTER_NAME}\nbrokerId=0\n"
            f"autoCreateTopicEnable={str(channel.app.config.auto_create_topics).lower()}\n")
    return req.response(body=text.encode())


RUNNING_INFO_TIMEOUT_S = 5.0


@handles(RC.GET_CONSUMER_RUNNING_INFO)
def consumer_running_info(channel, req):
    """Forwarded to the consumer's own connection (it alone knows its queues and stats), as a real
    broker does for `mqadmin consumerStatus`; its answer is relayed as is."""
    group, client_id = req.get_str("consumerGroup") or "", req.get_str("clientId") or ""
    target = registry(channel.app).consumer_channel(group, client_id)
    if target is None or target.closed:
        return req.response(ResponseCode.CONSUMER_NOT_ONLINE, remark=f"The Consumer <{group}> <{client_id}> not online")

    async def forward():
        fwd = RemotingCommand(code=RC.GET_CONSUMER_RUNNING_INFO, ext_fields=dict(req.ext_fields),
                              serialize_type=req.serialize_type)
        resp = await target.request(fwd, RUNNING_INFO_TIMEOUT_S)
        if resp is None:
            return req.response(ResponseCode.SYSTEM_ERROR,
                                remark=f"consumer <{client_id}> did not answer GET_CONSUMER_RUNNING_INFO")
        return RemotingCommand(code=resp.code, ext_fields=resp.ext_fields, body=resp.body, remark=resp.remark,
                               opaque=req.opaque, flag=FLAG_RESPONSE, serialize_type=req.serialize_type)
    channel.spawn(req, forward)
    return DEFERRED
