"""SimpleConsumer in the style of the RocketMQ 5 SDKs, over the remoting POP requests:

    from client import SimpleConsumer
    c = SimpleConsumer("my-group", "127.0.0.1:9876", subscriptions={"Orders": "paid"}, await_duration=5)
    c.start()
    for msg in c.receive(max_messages=16, invisible_duration=30):
        ...
        c.ack(msg)                                   # or c.change_invisible_duration(msg, 60)

A group new to a queue starts at its end (`consume_from=ConsumeFrom.FIRST_OFFSET`: at its start).
A received message is invisible to the group for `invisible_duration` seconds; if it is not
acknowledged by then it is delivered again (reconsume_times counts earlier deliveries). The
receipt is the message's `POP_CK` property (the ExtraInfo string a Java POP consumer keeps there);
`change_invisible_duration` replaces it with the new receipt. An ack or change with a receipt
that names nothing in flight any more (already acknowledged, expired) raises MQBrokerError
(NO_MESSAGE).
"""
from __future__ import annotations

import json
import time

from client.errors import MQClientError
from client.instance import ClientInstance
from client.model import ConsumeFrom, MessageExt, decode_messages
from client.subscription import Subscription
from codec.remoting import JSON, RequestCode as RC, ResponseCode
from client.sync import _Facade
from codec.remoting.extra_info import ExtraInfo, parse_extra_info, parse_offset_info, real_topic, retry_mark

POP_CK = "POP_CK"
_NOT_FOUND = (ResponseCode.PULL_NOT_FOUND, ResponseCode.POLLING_TIMEOUT, ResponseCode.POLLING_FULL)


class AsyncSimpleConsumer:
    consume_type = "CONSUME_POP"

    def __init__(self, group: str, namesrv: str, *, subscriptions: dict[str, str] | None = None,
                 await_duration: float = 20.0, consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
                 serialize_type: int = JSON) -> None:
        self.group = group
        self.consume_from = consume_from
        self.await_duration = await_duration
        self.instance = ClientInstance(namesrv, serialize_type)
        self.subscriptions: dict[str, Subscription] = {}
        for topic, expression in (subscriptions or {}).items():
            self.subscribe(topic, expression)
        self._next_topic = 0

    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        self.subscriptions[topic] = Subscription(topic, expression, int(time.time() * 1000), expression_type)

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)

    def heartbeat_data(self) -> dict:
        return {"consumeFromWhere": self.consume_from.value, "consumeType": self.consume_type,
                "groupName": self.group, "messageModel": "CLUSTERING",
                "subscriptionDataSet": [s.to_json() for s in self.subscriptions.values()], "unitMode": False}

    def rebalance_soon(self) -> None:
        """POP needs no queue rebalance: the broker hands out records, not queues."""

    def running_info(self) -> bytes:
        return json.dumps({"properties": {"PROP_CONSUME_TYPE": self.consume_type, "language": "PYTHON"},
                           "subscriptionSet": [s.to_json() for s in self.subscriptions.values()],
                           "mqTable": {}, "statusTable": {}}).encode()

    async def start(self, nursery) -> None:
        await self.instance.start(nursery)
        self.instance.consumers[self.group] = self
        for topic in self.subscriptions:
            await self.instance.route(topic)
        await self.instance.send_heartbeat()

    async def shutdown(self) -> None:
        await self.instance.shutdown()

    async def receive(self, max_messages: int = 16, invisible_duration: float = 30.0) -> list[MessageExt]:
        """Up to `max_messages` (1..32) from one subscribed topic (they take turns), waiting up to
        `await_duration` seconds for the first."""
        if not self.subscriptions:
            raise MQClientError("no subscription")
        topics = sorted(self.subscriptions)
        sub = self.subscriptions[topics[self._next_topic % len(topics)]]
        self._next_topic += 1
        route = await self.instance.route(sub.topic)
        invisible_ms = int(invisible_duration * 1000)
        for broker, addr in sorted(route.brokers.items()):
            fields = {"consumerGroup": self.group, "topic": sub.topic, "queueId": -1, "maxMsgNums": max_messages,
                      "invisibleTime": invisible_ms, "pollTime": int(self.await_duration * 1000),
                      "bornTime": int(time.time() * 1000), "initMode": 0 if self.consume_from is ConsumeFrom.FIRST_OFFSET else 1, "expType": sub.expression_type,
                      "exp": sub.expression, "order": False}
            resp = await self.instance.invoke(addr, RC.POP_MESSAGE, fields, timeout=self.await_duration + 10,
                                              ok=(ResponseCode.SUCCESS, *_NOT_FOUND))
            if resp.code == ResponseCode.SUCCESS:
                return _with_receipts(resp, sub.topic, broker)
        return []

    async def ack(self, message: MessageExt) -> None:
        info = _receipt(message)
        await self.instance.invoke(await self.instance.broker_addr(info.broker_name, message.topic), RC.ACK_MESSAGE, {
            "consumerGroup": self.group, "topic": real_topic(message.topic, self.group, info.retry),
            "queueId": info.queue_id, "offset": info.queue_offset, "extraInfo": str(info)})

    async def change_invisible_duration(self, message: MessageExt, invisible_duration: float) -> None:
        """Keep the message invisible for `invisible_duration` seconds from now; its receipt changes."""
        info = _receipt(message)
        resp = await self.instance.invoke(await self.instance.broker_addr(info.broker_name, message.topic),
                                          RC.CHANGE_MESSAGE_INVISIBLETIME, {
            "consumerGroup": self.group, "topic": real_topic(message.topic, self.group, info.retry),
            "queueId": info.queue_id, "offset": info.queue_offset, "extraInfo": str(info),
            "invisibleTime": int(invisible_duration * 1000)})
        message.properties[POP_CK] = str(ExtraInfo(
            info.queue_offset, resp.get_int("popTime"), resp.get_int("invisibleTime"), resp.get_int("reviveQid"),
            info.retry, info.broker_name, info.queue_id, info.queue_offset))


def _receipt(message: MessageExt) -> ExtraInfo:
    try:
        info = parse_extra_info(message.properties.get(POP_CK))
    except ValueError as exc:
        raise MQClientError(f"message has no POP receipt: {exc}") from None
    if info.queue_offset is None:
        raise MQClientError("message receipt has no queue offset")
    return info


def _with_receipts(resp, topic: str, broker: str) -> list[MessageExt]:
    """Decode a POP answer and give each message its receipt (as the Java client does)."""
    pop_time, invisible, revive = resp.get_int("popTime"), resp.get_int("invisibleTime"), resp.get_int("reviveQid")
    starts = parse_offset_info(resp.get_str("startOffsetInfo"))
    messages = decode_messages(resp.body, broker)
    for m in messages:
        mark = retry_mark(m.topic)
        start = starts.get(f"{mark}@{m.queue_id}", [m.queue_offset])[0]
        m.properties[POP_CK] = str(ExtraInfo(start, pop_time, invisible, revive, mark, broker, m.queue_id,
                                             m.queue_offset))
        m.topic = topic
    return messages


class SimpleConsumer(_Facade):
    """Blocking SimpleConsumer (see the module doc)."""

    _impl_class = AsyncSimpleConsumer
    async_methods = ("receive", "ack", "change_invisible_duration")
    plain_methods = ("subscribe", "unsubscribe")
