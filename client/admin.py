"""Admin: topics, offsets, consumer progress, and message lookup by key or msgId."""
from __future__ import annotations

import trio

from codec.remoting import JSON, RequestCode as RC, ResponseCode
from codec.remoting.bodies import loads
from client.errors import MQBrokerError, MQClientError
from client.instance import ClientInstance
from client.model import MessageExt, MessageQueue, decode_messages
from codec.remoting.message import parse_msg_id


class AsyncAdmin:
    def __init__(self, namesrv: str, *, serialize_type: int = JSON, instance: ClientInstance | None = None,
                 **credentials) -> None:
        self.instance = instance or ClientInstance.with_options(namesrv, serialize_type, **credentials)
        self._own_instance = instance is None

    async def start(self, nursery: trio.Nursery) -> None:
        if self._own_instance:
            await self.instance.start(nursery)

    async def shutdown(self) -> None:
        if self._own_instance:
            await self.instance.shutdown()

    async def _brokers(self) -> dict[str, str]:
        resp = await self.instance.invoke_namesrv(RC.GET_BROKER_CLUSTER_INFO)
        table = loads(resp.body).get("brokerAddrTable") or {}
        brokers = {name: bd["brokerAddrs"].get("0") for name, bd in table.items()}
        self.instance.brokers.update(brokers)
        return brokers

    async def create_topic(self, topic: str, queues: int = 4, perm: int = 6, attributes: dict | None = None) -> None:
        """Create or update `topic`; `attributes` are set as RocketMQ 5's "+key=value" list."""
        fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                  "perm": perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}
        if attributes:
            fields["attributes"] = ",".join(f"+{k}={v}" for k, v in attributes.items())
        for addr in (await self._brokers()).values():
            await self.instance.invoke(addr, RC.UPDATE_AND_CREATE_TOPIC, fields)
        self.instance.routes.pop(topic, None)

    async def list_topics(self) -> list[str]:
        resp = await self.instance.invoke_namesrv(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(loads(resp.body).get("topicList") or [])

    async def topic_config(self) -> dict[str, dict]:
        out = {}
        for addr in (await self._brokers()).values():
            resp = await self.instance.invoke(addr, RC.GET_ALL_TOPIC_CONFIG)
            out.update(loads(resp.body).get("topicConfigTable") or {})
        return out

    async def delete_topic(self, topic: str) -> None:
        for addr in (await self._brokers()).values():
            await self.instance.invoke(addr, RC.DELETE_TOPIC_IN_BROKER, {"topic": topic})
        await self.instance.invoke_namesrv(RC.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})
        self.instance.routes.pop(topic, None)

    async def topic_stats(self, topic: str) -> dict[MessageQueue, dict]:
        """Per queue: minOffset, maxOffset, lastUpdateTimestamp."""
        out = {}
        for addr in (await self._brokers()).values():
            resp = await self.instance.invoke(addr, RC.GET_TOPIC_STATS_INFO, {"topic": topic})
            for (t, b, q), v in (loads(resp.body).get("offsetTable") or {}).items():
                out[MessageQueue(t, b, q)] = v
        return out

    async def consumer_progress(self, group: str, topic: str | None = None) -> dict[MessageQueue, dict]:
        """Per queue: brokerOffset, consumerOffset, lastTimestamp (what `mqadmin consumerProgress` shows)."""
        out = {}
        for addr in (await self._brokers()).values():
            resp = await self.instance.invoke(addr, RC.GET_CONSUME_STATS, {"consumerGroup": group, "topic": topic})
            for (t, b, q), v in (loads(resp.body).get("offsetTable") or {}).items():
                out[MessageQueue(t, b, q)] = v
        return out

    async def consumer_connections(self, group: str) -> dict:
        addr = next(iter((await self._brokers()).values()))
        resp = await self.instance.invoke(addr, RC.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group})
        return loads(resp.body)

    async def _queue_call(self, code: int, mq: MessageQueue, **fields) -> int:
        addr = await self.instance.broker_addr(mq.broker_name, mq.topic)
        resp = await self.instance.invoke(addr, code, {"topic": mq.topic, "queueId": mq.queue_id, **fields})
        return resp.get_int("offset")

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self._queue_call(RC.GET_MIN_OFFSET, mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self._queue_call(RC.GET_MAX_OFFSET, mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self._queue_call(RC.SEARCH_OFFSET_BY_TIMESTAMP, mq, timestamp=timestamp_ms)

    async def query_by_key(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0,
                           end_ms: int = 2**63 - 1) -> list[MessageExt]:
        """QUERY_MESSAGE on every broker of the topic; keeps messages whose KEYS contain `key`."""
        route = await self.instance.route(topic, refresh=True)
        found = []
        for name, addr in route.brokers.items():
            try:
                resp = await self.instance.invoke(addr, RC.QUERY_MESSAGE, {
                    "topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin_ms,
                    "endTimestamp": end_ms, "_UNIQUE_KEY_QUERY": False})
            except MQBrokerError as exc:
                if exc.code == ResponseCode.QUERY_NOT_FOUND:
                    continue
                raise
            found += [m for m in decode_messages(resp.body, name) if m.topic == topic and key in m.keys]
        if not found:
            raise MQBrokerError(ResponseCode.NO_MESSAGE, f"query message by key finished, but no message: {key}")
        return found

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID at the broker address encoded in the offsetMsgId."""
        try:
            host, port, offset = parse_msg_id(offset_msg_id)
        except ValueError as exc:
            raise MQClientError(str(exc)) from exc
        resp = await self.instance.invoke(f"{host}:{port}", RC.VIEW_MESSAGE_BY_ID, {"offset": offset})
        msgs = decode_messages(resp.body)
        if not msgs:
            raise MQClientError(f"empty answer for {offset_msg_id}")
        return msgs[0]

    async def consumer_running_info(self, group: str, client_id: str) -> dict:
        """GET_CONSUMER_RUNNING_INFO (what `mqadmin consumerStatus` shows): the broker forwards it to
        that consumer; the answer's mqTable is keyed by MessageQueue."""
        addr = next(iter((await self._brokers()).values()))
        resp = await self.instance.invoke(addr, RC.GET_CONSUMER_RUNNING_INFO,
                                          {"consumerGroup": group, "clientId": client_id, "jstackEnable": False})
        info = loads(resp.body)
        info["mqTable"] = {MessageQueue(t, b, q): v for (t, b, q), v in (info.get("mqTable") or {}).items()}
        return info

    async def resend_dead_letter(self, offset_msg_id: str, queue_id: int | None = None) -> dict:
        """Put the dead letter with this offsetMsgId (of its %DLQ% copy) back on its original topic
        (rocketgate's RESEND_DLQ_MESSAGE): returns the new copy's msgId, topic, queueId, queueOffset."""
        try:
            host, port, offset = parse_msg_id(offset_msg_id)
        except ValueError as exc:
            raise MQClientError(str(exc)) from exc
        resp = await self.instance.invoke(f"{host}:{port}", RC.RESEND_DLQ_MESSAGE,
                                          {"commitLogOffset": offset, "queueId": queue_id})
        return {"msgId": resp.get_str("msgId"), "topic": resp.get_str("topic"),
                "queueId": resp.get_int("queueId", -1), "queueOffset": resp.get_int("queueOffset", -1)}
