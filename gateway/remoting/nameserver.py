"""NameServer role: this gateway is the only broker (`broker-a`, id 0) of cluster DefaultCluster; in
a cluster (--cluster) every gateway answers with the whole cluster's routes (gateway.cluster.routes)."""
from __future__ import annotations

import gateway.cluster.routes as routes
from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting.bodies import dumps
from gateway.remoting.common import BROKER_NAME, CLUSTER_NAME, DEFERRED, TBW102, ensure_topic, handles


def broker_data(channel) -> dict:
    return {"brokerAddrs": {"0": channel.broker_addr}, "brokerName": BROKER_NAME, "cluster": CLUSTER_NAME,
            "enableActingMaster": False}


@handles(RC.GET_ROUTEINFO_BY_TOPIC)
def route_info(channel, req):
    topic = req.get_str("topic")
    app = channel.app
    cfg = ensure_topic(app, topic) if topic else None
    if cfg is not None and app.ownership.creating(topic):  # shown once etcd has it (ownership.creating)
        async def once_published():
            unpublished = await app.ownership.published([topic])
            return _route(channel, req, topic, None if unpublished else cfg)
        channel.spawn(req, once_published)
        return DEFERRED
    return _route(channel, req, topic, cfg)


def _route(channel, req, topic: str, cfg):
    app = channel.app
    if cfg is None:
        return req.response(ResponseCode.TOPIC_NOT_EXIST,
                            remark=f"No topic route info in name server for the topic: {topic}")
    if app.ownership.clustered:  # every live gateway, each with the queues it leads
        return req.response(body=dumps(routes.rocketmq_route(app, topic, cfg)))
    body = {"brokerDatas": [broker_data(channel)], "filterServerTable": {},
            "queueDatas": [{"brokerName": BROKER_NAME, "perm": cfg.perm, "readQueueNums": cfg.read_queues,
                            "topicSysFlag": 0, "writeQueueNums": cfg.write_queues}]}
    return req.response(body=dumps(body))


@handles(RC.GET_BROKER_CLUSTER_INFO)
def cluster_info(channel, req):
    if channel.app.ownership.clustered:
        return req.response(body=dumps(routes.cluster_info(channel.app)))
    body = {"brokerAddrTable": {BROKER_NAME: broker_data(channel)},
            "clusterAddrTable": {CLUSTER_NAME: [BROKER_NAME]}}
    return req.response(body=dumps(body))


@handles(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, RC.GET_TOPICS_BY_CLUSTER, RC.GET_TOPIC_NAME_LIST)
def topic_list(channel, req):
    app = channel.app
    names = [n for n in app.store.topics.names() if not app.ownership.creating(n)]
    return req.response(body=dumps({"topicList": sorted(names)}))


@handles(RC.GET_SYSTEM_TOPIC_LIST_FROM_NS)
def system_topic_list(channel, req):
    names = [n for n in channel.app.store.topics.names() if n == TBW102 or n.startswith("RMQ_SYS_")
             or n.startswith("SCHEDULE_TOPIC")]
    return req.response(body=dumps({"brokerAddr": channel.broker_addr, "topicList": sorted(names)}))


@handles(RC.GET_KV_CONFIG)
def kv_config(channel, req):
    return req.response(ResponseCode.QUERY_NOT_FOUND,
                        remark=f"No config item, Namespace: {req.get_str('namespace')} Key: {req.get_str('key')}")


@handles(RC.GET_KVLIST_BY_NAMESPACE)
def kv_list(channel, req):
    return req.response(ResponseCode.QUERY_NOT_FOUND,
                        remark=f"No config item, Namespace: {req.get_str('namespace')}")


@handles(RC.DELETE_TOPIC_IN_NAMESRV)
def delete_topic_namesrv(channel, req):
    return req.response()  # the broker-side delete (215) removes the topic; routes follow it
