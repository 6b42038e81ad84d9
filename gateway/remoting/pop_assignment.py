"""Broker-side rebalance for RocketMQ 5 consumers: QUERY_ASSIGNMENT and SET_MESSAGE_REQUEST_MODE.

A push consumer with clientRebalance=false asks the broker which queues to read and how (PULL or
POP). The mode of (topic, group) is set with SET_MESSAGE_REQUEST_MODE (`mqadmin setConsumeMode`)
and kept in `config/messageRequestMode.json` as a 5.x broker keeps it; unset means PULL, and a
retry topic is always PULL. POP with popShareQueueNum 0 (or at least the consumer count - 1) gives
every consumer queue -1, which pops from all queues; PULL splits the queues averagely among the
group's consumers (AllocateMessageQueueAveragely, whatever strategy is named).
"""
from __future__ import annotations

import copy
import json

from codec.remoting import RequestCode as RC, ResponseCode
from gateway.cluster.remoting_queues import message_queues
from gateway.remoting.common import DEFERRED, handles, registry
from gateway.remoting.headers import RequestError

MODE_FILE = "messageRequestMode.json"


def request_modes(app) -> dict:
    """{topic: {group: {"topic", "consumerGroup", "mode", "popShareQueueNum"}}}, loaded once."""
    state = app.pop_remoting
    if state.modes is None:
        doc = app.store.read_config(MODE_FILE, {}) or {}
        state.modes = doc.get("messageRequestModeMap") or {}
    return state.modes


def _body(req, what: str) -> dict:
    try:
        body = json.loads(req.body or b"{}")
    except (ValueError, RecursionError) as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what} body: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what} body: not an object")
    for key in ("topic", "consumerGroup"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad {what} body: {key} is missing")
    return body


@handles(RC.SET_MESSAGE_REQUEST_MODE)
def set_message_request_mode(channel, req):
    app = channel.app
    body = _body(req, "request mode")
    topic, group = body["topic"], body["consumerGroup"]
    mode, share = body.get("mode", "PULL"), body.get("popShareQueueNum", 0)
    if mode not in ("PULL", "POP") or not isinstance(share, int) or isinstance(share, bool):
        raise RequestError(ResponseCode.SYSTEM_ERROR, "bad request mode body: mode or popShareQueueNum")
    if topic.startswith("%RETRY%"):
        return req.response(ResponseCode.NO_PERMISSION, remark="retry topic is not allowed to set mode")
    if app.store.topics.get(topic) is None:
        return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
    modes = request_modes(app)
    modes.setdefault(topic, {})[group] = {"topic": topic, "consumerGroup": group, "mode": mode,
                                          "popShareQueueNum": share}
    number = app.config_writer.submit(MODE_FILE, {"messageRequestModeMap": copy.deepcopy(modes)})

    async def answer_when_written():
        await app.config_writer.written(MODE_FILE, number)
        return req.response(ResponseCode.SUCCESS)
    channel.spawn(req, answer_when_written)
    return DEFERRED


@handles(RC.QUERY_ASSIGNMENT)
def query_assignment(channel, req):
    app = channel.app
    body = _body(req, "query assignment")
    topic, group = body["topic"], body["consumerGroup"]
    client_id, model = str(body.get("clientId") or ""), body.get("messageModel", "CLUSTERING")
    cfg = app.store.topics.get(topic)
    setting = {} if topic.startswith("%RETRY%") else request_modes(app).get(topic, {}).get(group, {})
    mode = setting.get("mode", "PULL")
    queues = message_queues(app, topic, cfg) if cfg is not None else []  # (brokerName, queueId)
    if cfg is None:
        assigned = None
    elif model == "BROADCASTING":
        assigned = queues
    else:
        clients = registry(app).consumer_ids(group) or [client_id]
        share = setting.get("popShareQueueNum", 0)
        if mode == "POP" and (share <= 0 or share >= len(clients) - 1):
            assigned = sorted({(broker, -1) for broker, _ in queues})  # each broker: pop all its queues
        else:
            assigned = _averagely(queues, clients, client_id)
            if mode == "POP":  # also the queues of the next `share` consumers
                at = clients.index(client_id) if client_id in clients else -1
                for i in range(1, share + 1 if at >= 0 else 1):
                    assigned += _averagely(queues, clients, clients[(at + i) % len(clients)])
                assigned = sorted(set(assigned))
    body = {"messageQueueAssignments": None if assigned is None else [
        {"messageQueue": {"brokerName": broker, "queueId": q, "topic": topic}, "mode": mode, "attachments": {}}
        for broker, q in assigned]}
    return req.response(ResponseCode.SUCCESS, body=json.dumps(body).encode())


def _averagely(queues: list, clients: list[str], client_id: str) -> list:
    if client_id not in clients or not queues:
        return []
    index, n, m = clients.index(client_id), len(clients), len(queues)
    mod = m % n
    size = (m // n + 1 if index < mod else m // n) if m > n else 1
    start = index * size if mod and index < mod else index * size + mod
    return [queues[(start + i) % m] for i in range(min(size, m - start))] if start < m else []
