"""RocketMQ queue ids in a cluster. A RocketMQ client numbers each broker's queues of a topic from
0 (`MessageQueue(topic, brokerName, queueId)`), while the cluster numbers a topic's queues once
(the Kafka partition). A gateway's broker-local queue i is the i-th of the topic's queues it leads,
in order (the route advertises that many, `gateway.cluster.routes`); client requests are translated
local -> cluster queue id before their handler, and a send's answer back (the gateways' own
replication requests carry cluster ids). Local topics (retry, DLQ, system)
keep their ids. A send to a local id beyond what this gateway leads (a stale route, or the default
topic's route a producer uses before its topic exists: the topic is created first) goes to one of
the queues it leads, as a send to any queue of the broker would; a gateway that leads none of the
topic's queues refuses it with NO_PERMISSION, which the producer retries on another broker; so
does a fenced gateway (its lease may have expired: `ClusterNode.fenced`) for every assigned topic.

A RocketMQ 5 Java client reads the route's `topicQueueMappingByBroker` (static topics, RIP-21) and
numbers a cluster topic's queues once, as the cluster does: (mock broker `__syslo__global__`, the
cluster queue id), each sent to the gateway the mapping names (the leader). Those ids keep their
meaning when leaders move, so they are not translated (`names_cluster_ids`)."""
from __future__ import annotations

import struct

from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting.message import MessageFormatError, decode
from gateway.cluster import routes
from gateway.cluster.routes import MOCK_BROKER, led_queues
from gateway.cluster.ownership import clustered
from gateway.remoting.common import BROKER_NAME, ensure_topic

# (topic field, queue id field) by request code: the V2 sends use one-letter names
_COMPACT = {RC.SEND_MESSAGE_V2: ("b", "e"), RC.SEND_BATCH_MESSAGE: ("b", "e")}
_SENDS = (RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE)
# gateway-to-gateway requests speak the cluster's queue ids (gateway.remoting.replica_fetch, gateway.cluster.delivery)
_JAVA_INT_MAX = 2**31 - 1
_PULLS = (RC.PULL_MESSAGE, RC.LITE_PULL_MESSAGE)
_VIEWS = (RC.VIEW_MESSAGE_BY_ID, RC.QUERY_MESSAGE)
_INT32 = struct.Struct(">i")  # a stored message's TOTALSIZE and QUEUEID (bytes 0 and 12)
_CLUSTER_IDS = (RC.REPLICA_FETCH, RC.REPLICA_EPOCH_END, RC.REPLICA_ROLE, RC.REPLICA_STATE, RC.CLUSTER_DELIVER)
_JAVA_V5 = 413  # MQVersion.Version.V5_0_0.ordinal(): Java clients from 5.0 read topicQueueMappingByBroker


def names_cluster_ids(req) -> bool:
    """Whether the request's queue id is the cluster's (a RocketMQ 5 Java client that read the route's
    queue mapping): its `bname` is the mock broker (pull, offsets, max/min offset), or it is a Java 5
    send, which names the real broker the mapping sent it to (DefaultMQProducerImpl.sendKernelImpl)."""
    if req.ext_fields.get("bname") == MOCK_BROKER:
        return True
    return req.code in _SENDS and reads_queue_mapping(req.language, req.version)


def reads_queue_mapping(language: str, version: int) -> bool:
    """Whether a client of this language and version numbers a cluster topic's queues by the route's
    mapping (a Java client from 5.0)."""
    return language == "JAVA" and version >= _JAVA_V5


def translate(app, req):
    """Rewrite the request's broker-local queue id to the cluster's; a refusal answer when this
    gateway does not lead that many queues of the topic, else None."""
    if req.code in _CLUSTER_IDS:
        return None
    topic_field, qid_field = _COMPACT.get(req.code, ("topic", "queueId"))
    fields = req.ext_fields
    topic, local = fields.get(topic_field), fields.get(qid_field)
    if not topic or local is None:
        return None
    try:
        index = int(local)
    except ValueError:
        return None  # the handler reports it
    if str(index) != str(local) or index > _JAVA_INT_MAX:
        return None  # " 5", "5_0", past 2^31 - 1: Python reads them, a Java header does not; the handler refuses them
    if req.code in _SENDS and topic not in app.store.topics:
        ensure_topic(app, topic)  # placed across the cluster now, so the send lands on a led queue
    led = led_queues(app.ownership, topic)
    if led is None or index < 0:
        return None
    if app.ownership.fenced():
        return req.response(ResponseCode.NO_PERMISSION,
                            remark=f"broker-{app.ownership.node_id} is fenced (its cluster lease may have "
                                   f"expired); send to another broker")
    if names_cluster_ids(req):
        if index in led:
            return None  # the cluster's id, led here
        if req.code in _SENDS and led:  # a stale mapping, or a Java producer's first route (from TBW102)
            fields[qid_field] = str(led[index % len(led)])
            return None
        return req.response(ResponseCode.NO_PERMISSION,
                            remark=f"broker-{app.ownership.node_id} does not lead queue {index} of {topic}; "
                                   f"refresh the route")
    if req.code in _SENDS and led and index >= len(led):
        index %= len(led)
    if index >= len(led):
        return req.response(ResponseCode.NO_PERMISSION,
                            remark=f"broker-{app.ownership.node_id} does not lead queue {index} of {topic} "
                                   f"(it leads {len(led)}); refresh the route")
    fields[qid_field] = str(led[index])
    return None


def restore(app, req, resp) -> None:
    """A send's answer names the broker-local queue id the client asked for; so do the messages of
    a pull's answer."""
    if req.code in _PULLS and resp is not None and resp.body and not names_cluster_ids(req):
        _pulled_as_local(app, req, resp)
        return
    if req.code in _VIEWS and resp is not None and resp.body and clustered(app):
        _viewed_as_local(app, resp)
        return
    if req.code not in _SENDS or resp is None or "queueId" not in resp.ext_fields or names_cluster_ids(req):
        return
    topic = req.ext_fields.get(_COMPACT.get(req.code, ("topic",))[0])
    led = led_queues(app.ownership, topic) if topic else None
    if led is not None and int(resp.ext_fields["queueId"]) in led:
        resp.ext_fields["queueId"] = str(led.index(int(resp.ext_fields["queueId"])))


def _pulled_as_local(app, req, resp) -> None:
    """Each pulled message's QUEUEID (stored as the cluster's id) rewritten to the broker-local id
    the client pulled, as a RocketMQ broker's messages carry its own queue's id (a Java 4.x consumer
    hands `MessageExt.getQueueId()` to the application as stored: it read 3 for its queue 1)."""
    topic, qid = req.ext_fields.get("topic"), req.ext_fields.get("queueId")
    led = led_queues(app.ownership, topic) if topic and clustered(app) else None
    if led is None or qid is None or not qid.isdigit() or int(qid) not in led:
        return
    local, body, pos = led.index(int(qid)), bytearray(resp.body), 0
    while pos + 16 <= len(body):
        size = _INT32.unpack_from(body, pos)[0]
        if size < 16:
            return  # not a message layout: left as it is
        _INT32.pack_into(body, pos + 12, local)
        pos += size
    resp.body = bytes(body)


def _viewed_as_local(app, resp) -> None:
    """The messages of a view by id or a query by key with the broker-local id of each queue this
    gateway leads, as a pull answers them (a tool reads the same bytes a consumer pulled)."""
    body, pos = bytearray(resp.body), 0
    try:
        while pos + 16 <= len(body):
            m = decode(body, pos)
            led = led_queues(app.ownership, m.topic)
            if led is not None and m.queue_id in led:
                _INT32.pack_into(body, pos + 12, led.index(m.queue_id))
            pos += m.size
    except (MessageFormatError, ValueError, IndexError, struct.error):
        return  # not a message layout: left as it is
    resp.body = bytes(body)


def pop_queues(app, topic: str, queues: list[int]) -> list[int]:
    """The queues a POP of every queue (queueId -1) reads here: in a cluster, only those this
    gateway leads (a POP consumer pops at every broker of the route, each answering for its own)."""
    led = led_queues(app.ownership, topic) if clustered(app) else None
    return queues if led is None else [q for q in queues if q in led]


def local_queue_id(app, topic: str, queue_id: int) -> int:
    """The broker-local id a client knows this gateway's cluster queue by (POP answers: message
    queueId, startOffsetInfo, msgOffsetInfo, which the client's receipts then carry back)."""
    led = led_queues(app.ownership, topic) if clustered(app) else None
    return led.index(queue_id) if led and queue_id in led else queue_id


def stats_queues(app, topic: str, count: int) -> list[tuple[int, tuple[str, str, int]]]:
    """(cluster queue id, the (topic, brokerName, queueId) a client knows it by) of the queues this
    broker reports in topic and consume stats: as a RocketMQ broker, only its own, under its broker
    name (a tool merges the brokers' tables by that key). One process: every queue, as numbered; in a
    cluster, the queues this gateway leads, by broker-local id (a local topic's keep their ids)."""
    name = own_broker_name(app)
    led = led_queues(app.ownership, topic) if clustered(app) else None
    if led is None:
        return [(q, (topic, name, q)) for q in range(count)]
    return [(q, (topic, name, local)) for local, q in enumerate(led)]


def client_queues(app, topic: str, queues: dict[int, tuple], language: str, version: int) -> dict[int, tuple]:
    """`queues` ({cluster queue id: (topic, broker, broker-local id)}) as a client of this language
    and version knows them: a Java 5 client of a cluster topic by (`__syslo__global__`, cluster id),
    the MessageQueues it holds, which a RESET_CONSUMER_CLIENT_OFFSET must name to be applied
    (MQClientInstance.resetOffset keeps only the entries its own queues match)."""
    if not (clustered(app) and app.ownership.assigned(topic) and reads_queue_mapping(language, version)):
        return queues
    return {qid: (topic, MOCK_BROKER, qid) for qid in queues}


def lock_queue_id(app, topic: str, broker: str, queue_id: int) -> int | None:
    """The cluster queue id a lock body's MessageQueue names here (the mock broker: the cluster's id
    already; this broker: its broker-local id), None when it names another broker or a queue this
    gateway does not lead. Locks are held by cluster id, so both numberings lock the same queue."""
    led = led_queues(app.ownership, topic) if clustered(app) else None
    if broker == MOCK_BROKER:
        return queue_id if led and queue_id in led else None
    if broker != own_broker_name(app):
        return None
    if led is None:
        return queue_id
    return led[queue_id] if queue_id < len(led) else None


def mapping_detail(app, topic: str) -> dict | None:
    """This gateway's TopicQueueMappingDetail of a cluster topic (GET_TOPIC_CONFIG's `mappingDetail`,
    as a RocketMQ 5 broker answers for a static topic): each cluster queue id it leads, hosted as
    its broker-local id, so a RocketMQ 5 tool maps this broker's consume stats (broker-local ids,
    `stats_queues`) to the queues a client knows (mqadmin consumerProgress:
    MQAdminUtils.convertPhysicalConsumeStats). None for a local topic or one it leads no queue of."""
    led = led_queues(app.ownership, topic) if clustered(app) else None
    if not led:
        return None
    name, node = own_broker_name(app), app.ownership
    return {"topic": topic, "scope": "__global__", "totalQueues": len(node.view.queues_of(topic)), "bname": name,
            "epoch": max(node.assignment(topic, q).epoch for q in led), "dirty": False,
            "currIdMap": {str(q): local for local, q in enumerate(led)},
            "hostedQueues": {str(q): [{"gen": 0, "queueId": local, "bname": name, "logicOffset": 0, "startOffset": 0,
                                       "endOffset": -1, "timeOfStart": -1, "timeOfEnd": -1}]
                             for local, q in enumerate(led)}}


def own_broker_name(app) -> str:
    """This gateway's RocketMQ broker name: broker-<node id> in a cluster (its BrokerData in routes)."""
    return getattr(getattr(app, "ownership", None), "broker_name", None) or BROKER_NAME


def message_queues(app, topic: str, cfg) -> list[tuple[str, int]]:
    """(brokerName, broker-local queueId) of every readable queue of `topic`, as a client builds
    them from the route, sorted as RocketMQ sorts MessageQueues."""
    if not clustered(app):
        return [(BROKER_NAME, q) for q in range(cfg.read_queues)]
    route = routes.rocketmq_route(app, topic, cfg)
    return sorted((d["brokerName"], q) for d in route["queueDatas"] for q in range(d["readQueueNums"]))
