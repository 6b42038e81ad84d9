"""A consumer's positions (the Java client's RemoteBrokerOffsetStore): the next offset to consume
per held queue, where a newly held queue starts (ConsumeFrom), and the committed copy at the broker.
Broadcasting consumers keep their positions in memory only."""
from __future__ import annotations

import logging

from client.errors import MQClientError
from client.instance import ClientInstance
from client.model import ConsumeFrom, MessageModel, MessageQueue
from client.subscription import RETRY_PREFIX
from codec.remoting import RequestCode as RC, ResponseCode

log = logging.getLogger("rocketgate.client")
BROKER_TIMEOUT_S = 5.0


class OffsetStore:
    def __init__(self, instance: ClientInstance, group: str, model: MessageModel) -> None:
        self.instance = instance
        self.group = group
        self.model = model
        self.table: dict[MessageQueue, int] = {}  # next offset to consume, per held queue

    async def committed(self, mq: MessageQueue, set_zero_if_not_found: bool | None = None) -> int | None:
        """QUERY_CONSUMER_OFFSET: the group's committed offset of `mq` at the broker, None if it has
        none (left unset, the broker answers 0 for a queue that never held a message)."""
        resp = await self.instance.invoke(await self.instance.queue_broker(mq), RC.QUERY_CONSUMER_OFFSET,
                                          {"consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id,
                                           "setZeroIfNotFound": set_zero_if_not_found},
                                          ok=(0, ResponseCode.QUERY_NOT_FOUND), timeout=BROKER_TIMEOUT_S)
        return resp.get_int("offset") if resp.code == 0 else None

    async def start_offset(self, mq: MessageQueue, consume_from: ConsumeFrom, timestamp_ms: int) -> int:
        """Where a newly held queue is consumed from: the committed offset (clustering), else as
        `consume_from` says; retry topics start at their beginning."""
        addr = await self.instance.queue_broker(mq)
        if self.model == MessageModel.CLUSTERING:
            offset = await self.committed(mq)
            if offset is not None:
                return offset
        if consume_from == ConsumeFrom.FIRST_OFFSET:
            return 0
        if consume_from == ConsumeFrom.TIMESTAMP:
            resp = await self.instance.invoke(addr, RC.SEARCH_OFFSET_BY_TIMESTAMP, {
                "topic": mq.topic, "queueId": mq.queue_id, "timestamp": timestamp_ms})
            return resp.get_int("offset")
        if mq.topic.startswith(RETRY_PREFIX):
            return 0
        resp = await self.instance.invoke(addr, RC.GET_MAX_OFFSET, {"topic": mq.topic, "queueId": mq.queue_id})
        return resp.get_int("offset")

    async def persist(self, oneway: bool = True, only: list[MessageQueue] | None = None) -> None:
        """Send the positions (of `only`, or of every held queue) to the broker (clustering only);
        a failed commit is logged and left to the next one."""
        if self.model != MessageModel.CLUSTERING:
            return
        for mq in list(only if only is not None else self.table):
            offset = self.table.get(mq)
            if offset is None:
                continue
            fields = {"consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset}
            try:
                addr = await self.instance.queue_broker(mq)
                if oneway:
                    await self.instance.oneway(addr, RC.UPDATE_CONSUMER_OFFSET, fields)
                else:
                    await self.instance.invoke(addr, RC.UPDATE_CONSUMER_OFFSET, fields, timeout=BROKER_TIMEOUT_S)
            except MQClientError as exc:
                log.warning("offset commit for %s failed: %s", mq, exc)
