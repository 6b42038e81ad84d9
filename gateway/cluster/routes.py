"""What a cluster member tells clients about the whole cluster: Kafka's brokers and partition
leaders (Metadata, FindCoordinator) and RocketMQ's NameServer routes (one BrokerData per live
gateway, QueueData for the queues it leads). Only used with --cluster (`app.ownership.clustered`)."""
from __future__ import annotations

from cluster.model import Member

NONE, LEADER_NOT_AVAILABLE = 0, 5
BROKER_NAME = "broker-{}"  # one RocketMQ broker name per gateway: broker-<node id>
CLUSTER_NAME = "DefaultCluster"
# TopicQueueMappingUtils.getMockBrokerName(MixAll.METADATA_SCOPE_GLOBAL): the broker name of a static topic's queues
MOCK_BROKER = "__syslo__global__"


def led_queues(node, topic: str) -> list[int] | None:
    """The cluster queue ids of `topic` this gateway leads, in order; None for a local topic."""
    if not node.assigned(topic):
        return None
    return [q for q, a in enumerate(node.view.queues_of(topic)) if a is not None and a.leader == node.node_id]


def kafka_broker(member: Member) -> dict:
    return {"node_id": member.node_id, "broker_id": member.node_id, "host": member.host,
            "port": member.kafka_port, "rack": None}


def kafka_brokers(app) -> list[dict]:
    """The live members, and always this gateway: with its lease lapsed (etcd away) the live set is
    empty, and an empty broker list made librdkafka (2.10+) drop every broker it knew, the group
    coordinator this gateway names in FindCoordinator included, so a consumer stayed out of its
    group for good (docs/faults.md, sixth stop). A Kafka broker always lists itself too."""
    members = dict(app.ownership.live())
    members.setdefault(app.ownership.node_id, app.ownership.member)
    return [kafka_broker(m) for _, m in sorted(members.items())]


def controller_id(app) -> int:
    return min(app.ownership.live(), default=app.ownership.node_id)


def kafka_partitions(app, name: str, count: int) -> list[dict]:
    """Each partition's leader, replicas, in-sync set and leader epoch; a partition whose leader is
    not alive is LEADER_NOT_AVAILABLE (leader -1) until it has one again."""
    node = app.ownership
    live = node.live()
    out = []
    for p in range(count):
        a = node.assignment(name, p)
        if a is None:  # a local topic: this gateway serves its own copy
            out.append({"error_code": NONE, "partition_index": p, "leader_id": node.node_id, "leader_epoch": -1,
                        "replica_nodes": [node.node_id], "isr_nodes": [node.node_id], "offline_replicas": []})
            continue
        up = a.leader in live
        out.append({"error_code": NONE if up else LEADER_NOT_AVAILABLE, "partition_index": p,
                    "leader_id": a.leader if up else -1, "leader_epoch": a.epoch,
                    "replica_nodes": list(a.replicas), "isr_nodes": [n for n in a.isr if n in live],
                    "offline_replicas": [n for n in a.replicas if n not in live]})
    return out


def broker_name(node_id: int) -> str:
    return BROKER_NAME.format(node_id)


def broker_data(member: Member) -> dict:
    return {"brokerAddrs": {"0": member.remoting_addr}, "brokerName": broker_name(member.node_id),
            "cluster": CLUSTER_NAME, "enableActingMaster": False}


def rocketmq_route(app, topic: str, cfg) -> dict:
    """The topic's route: QueueData per broker leading queues of it, with as many queues as it
    leads (RocketMQ numbers a broker's queues from 0: a member's queue ids are its rank among the
    topic's queues it leads, see `local_queue_id`), and the BrokerData of those brokers only, as
    RocketMQ's name server answers (RouteInfoManager.pickupTopicRouteData): tools take every
    BrokerData to have the topic's QueueData (mqadmin's resetOffsetByTimeOld failed with a
    NullPointerException on a topic of one shard's queues). A cluster topic's route also maps each
    cluster queue id to its leader (`queue_mapping`)."""
    node = app.ownership
    live = node.live()
    led = {}  # node id -> {cluster queue id: leader epoch}
    if not node.assigned(topic):  # a local topic: every gateway has all its queues
        leaders = {n: max(cfg.read_queues, cfg.write_queues) for n in live}
    else:
        for q, a in enumerate(node.view.queues_of(topic)):
            if a is not None and a.leader in live:
                led.setdefault(a.leader, {})[q] = a.epoch
        leaders = {n: len(queues) for n, queues in led.items()}
    queue_datas = [{"brokerName": broker_name(n), "perm": cfg.perm, "readQueueNums": count, "writeQueueNums": count,
                    "topicSysFlag": 0} for n, count in sorted(leaders.items())]
    route = {"brokerDatas": [broker_data(m) for n, m in sorted(live.items()) if n in leaders], "filterServerTable": {},
             "queueDatas": queue_datas}
    if led:
        route["topicQueueMappingByBroker"] = queue_mapping(topic, len(node.view.queues_of(topic)), led)
    return route


def queue_mapping(topic: str, total: int, led: dict[int, dict[int, int]]) -> dict:
    """RocketMQ's static-topic mapping (RIP-21 TopicQueueMappingInfo per broker, global scope): the
    cluster queue ids each gateway leads. A RocketMQ 5 Java client then numbers the topic's queues
    as the cluster does, under one mock broker name (`__syslo__global__`; `currIdMap` maps each to
    its broker-local id, which only tools read), and sends each request to
    the queue's leader (MQClientInstance.topicRouteData2EndpointsForStaticTopic), so a queue id keeps
    its meaning when leaders move. Clients that ignore it use the broker-local queueDatas."""
    return {broker_name(n): {"topic": topic, "scope": "__global__", "totalQueues": total, "bname": broker_name(n),
                             "epoch": max(queues.values()), "dirty": False,
                             "currIdMap": {str(q): local for local, q in enumerate(sorted(queues))}}
            for n, queues in sorted(led.items())}


def cluster_info(app) -> dict:
    live = app.ownership.live()
    return {"brokerAddrTable": {broker_name(n): broker_data(m) for n, m in sorted(live.items())},
            "clusterAddrTable": {CLUSTER_NAME: [broker_name(n) for n in sorted(live)]}}
