"""Producer: sync/async/oneway/batch/ordered sends with retries and fault avoidance."""
from __future__ import annotations

import dataclasses
import datetime
import inspect
import os
import random
import socket
import time

import trio

from codec.remoting import JSON, RequestCode as RC, ResponseCode
from codec.remoting.bodies import BatchItem, encode_batch, make_uniq_id
from client.errors import MQBrokerError, MQClientError
from client.instance import ClientInstance
from client.model import Message, MessageQueue, SendResult, SendStatus, TransactionState, compress_body
from codec.remoting.message import parse_msg_id, properties_to_string

RETRY_CODES = {ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
               ResponseCode.NO_PERMISSION, 204, 205}
SENT_CODES = {0, 10, 11, 12}
# Fault avoidance (MQFaultStrategy): a send taking >= LATENCY_MAX[i] ms makes the broker
# unavailable for NOT_AVAILABLE_MS[i]; a failed send counts as 30 s of latency.
LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY_MS = 30000
TRANSACTION_PREPARED = 0x4


class UniqIds:
    """MessageClientIDSetter: ip, pid, a per-process salt, ms since the month began, a counter."""

    def __init__(self, ip: str) -> None:
        self.ip = socket.inet_aton(ip)
        self.salt = random.getrandbits(31)
        self.counter = 0
        self._month = (0.0, 0.0)  # [start, end) of the current local month, epoch seconds

    def next(self) -> str:
        now = time.time()
        start, end = self._month
        if not start <= now < end:  # once a month (the month start is computed, not per message)
            local = datetime.datetime.fromtimestamp(now)
            first = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            following = (first + datetime.timedelta(days=32)).replace(day=1)
            start, end = self._month = (first.timestamp(), following.timestamp())
        self.counter += 1
        return make_uniq_id(self.ip, os.getpid(), self.salt, int((now - start) * 1000), self.counter)


class LatencyFaultTolerance:
    def __init__(self) -> None:
        self.unavailable_until: dict[str, float] = {}

    def update(self, broker: str, latency_ms: float, isolation: bool) -> None:
        latency = ISOLATION_LATENCY_MS if isolation else latency_ms
        duration = 0
        for limit, dur in zip(reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_MS)):
            if latency >= limit:
                duration = dur
                break
        self.unavailable_until[broker] = time.monotonic() + duration / 1000.0

    def available(self, broker: str) -> bool:
        return time.monotonic() >= self.unavailable_until.get(broker, 0.0)


class AsyncProducer:
    def __init__(self, group: str, namesrv: str, *, serialize_type: int = JSON, send_timeout: float = 3.0,
                 retry_times: int = 2, latency_fault_enable: bool = False, smart_header: bool = True,
                 instance: ClientInstance | None = None, **credentials) -> None:
        self.group = group
        self.instance = instance or ClientInstance.with_options(namesrv, serialize_type, **credentials)
        self._own_instance = instance is None
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.latency_fault_enable = latency_fault_enable
        self.smart_header = smart_header
        self.faults = LatencyFaultTolerance()
        self.ids = UniqIds(self.instance.client_ip)
        self._index = random.randrange(1 << 16)

    async def start(self, nursery: trio.Nursery) -> None:
        if self._own_instance:
            await self.instance.start(nursery)
        self.instance.producer_groups.add(self.group)

    async def shutdown(self) -> None:
        self.instance.producer_groups.discard(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    # ------------------------------------------------------------ queue choice
    async def queues(self, topic: str) -> list[MessageQueue]:
        route = await self.instance.route(topic)
        queues = route.publish_queues()
        if not queues:
            raise MQClientError(f"No route info of this topic: {topic}")
        return queues

    def _select(self, queues: list[MessageQueue], last_broker: str | None) -> MessageQueue:
        """Round robin; with fault avoidance prefer available brokers; on a retry avoid the last broker."""
        for _ in range(len(queues)):
            self._index += 1
            mq = queues[self._index % len(queues)]
            if self.latency_fault_enable and not self.faults.available(mq.broker_name):
                continue
            if last_broker is not None and mq.broker_name == last_broker and \
                    any(q.broker_name != last_broker for q in queues):
                continue
            return mq
        self._index += 1
        return queues[self._index % len(queues)]

    # ------------------------------------------------------------ sending
    async def send(self, msg: Message, queue: MessageQueue | None = None, selector=None, arg=None,
                   timeout: float | None = None) -> SendResult:
        """Send and wait for the broker. With `queue` or `selector(queues, msg, arg)` the message goes
        to that queue (ordered send); otherwise failed attempts retry on another queue."""
        queues = [] if queue is not None else await self.queues(msg.topic)
        if selector is not None:
            queue = selector(queues, msg, arg)
        return await self._send_with_retries(msg, queues, queue, timeout)

    async def _send_with_retries(self, msg, queues, queue, timeout, batch: list[Message] | None = None):
        props, body, sys_flag, uniq = self._encode(msg, batch)
        last_broker, error = None, None
        attempts = 1 if queue is not None else 1 + self.retry_times
        for _ in range(attempts):
            mq = queue or self._select(queues, last_broker)
            start = time.monotonic()
            try:
                result = await self._send_to(mq, msg, props, body, sys_flag, uniq, batch is not None,
                                             timeout or self.send_timeout)
                self.faults.update(mq.broker_name, (time.monotonic() - start) * 1000, False)
                return result
            except MQBrokerError as exc:
                self.faults.update(mq.broker_name, (time.monotonic() - start) * 1000, True)
                if exc.code not in RETRY_CODES:
                    raise
                error = exc
            except MQClientError as exc:
                self.faults.update(mq.broker_name, (time.monotonic() - start) * 1000, True)
                error = exc
            last_broker = mq.broker_name
        raise error

    async def send_oneway(self, msg: Message, queue: MessageQueue | None = None) -> None:
        mq = queue or self._select(await self.queues(msg.topic), None)
        props, body, sys_flag, _ = self._encode(msg, None)
        addr = await self.instance.broker_addr(mq.broker_name, msg.topic)
        code, fields = self._header(mq, msg, props, sys_flag, False)
        await self.instance.oneway(addr, code, fields, body)

    async def send_batch(self, msgs: list[Message], queue: MessageQueue | None = None,
                         timeout: float | None = None) -> SendResult:
        """SEND_BATCH_MESSAGE: one topic, no delay; each message gets its own id."""
        if not msgs:
            raise MQClientError("empty batch")
        topics = {m.topic for m in msgs}
        if len(topics) != 1 or any(m.delay_level for m in msgs):
            raise MQClientError("a batch needs one topic and no delay level")
        queues = [] if queue is not None else await self.queues(msgs[0].topic)
        return await self._send_with_retries(msgs[0], queues, queue, timeout, batch=msgs)

    def _encode(self, msg: Message, batch: list[Message] | None):
        if batch is None:
            props = msg.wire_properties()
            uniq = props.setdefault("UNIQ_KEY", self.ids.next())
            body, sys_flag = compress_body(msg.body)
            if props.get("TRAN_MSG") == "true":
                sys_flag |= TRANSACTION_PREPARED
            return props, body, sys_flag, uniq
        items, uniqs = [], []
        for m in batch:
            p = m.wire_properties()
            p.pop("WAIT", None)
            uniqs.append(p.setdefault("UNIQ_KEY", self.ids.next()))
            items.append(BatchItem(m.flag, m.body, properties_to_string(p)))
        return {"WAIT": "true"}, encode_batch(items), 0, ",".join(uniqs)

    def _header(self, mq: MessageQueue, msg: Message, props: dict, sys_flag: int, batch: bool):
        fields = {"producerGroup": self.group, "topic": mq.topic, "defaultTopic": "TBW102",
                  "defaultTopicQueueNums": 4, "queueId": mq.queue_id, "sysFlag": sys_flag,
                  "bornTimestamp": int(time.time() * 1000), "flag": msg.flag,
                  "properties": properties_to_string(props), "reconsumeTimes": 0, "unitMode": False,
                  "batch": batch, "brokerName": mq.broker_name}
        if batch:
            return RC.SEND_BATCH_MESSAGE, _short_names(fields)
        if self.smart_header:
            return RC.SEND_MESSAGE_V2, _short_names(fields)
        return RC.SEND_MESSAGE, fields

    async def _send_to(self, mq, msg, props, body, sys_flag, uniq, batch, timeout) -> SendResult:
        addr = await self.instance.broker_addr(mq.broker_name, mq.topic)
        code, fields = self._header(mq, msg, props, sys_flag, batch)
        resp = await self.instance.invoke(addr, code, fields, body, timeout=timeout, ok=tuple(SENT_CODES))
        return SendResult(status=SendStatus(resp.code), msg_id=uniq, offset_msg_id=resp.get_str("msgId") or "",
                          queue=MessageQueue(mq.topic, mq.broker_name, resp.get_int("queueId", mq.queue_id)),
                          queue_offset=resp.get_int("queueOffset", -1),
                          transaction_id=resp.get_str("transactionId"))


_V2 = {"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
       "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
       "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "brokerName": "n"}


def _short_names(fields: dict) -> dict:
    return {_V2[k]: v for k, v in fields.items()}


class AsyncTransactionProducer(AsyncProducer):
    """Half message, then `local_transaction(msg, arg) -> TransactionState` decides commit or
    rollback; UNKNOWN leaves it to the broker's check-back, answered by `check_listener(msg)`."""

    def __init__(self, group: str, namesrv: str, *, local_transaction, check_listener, **kw) -> None:
        super().__init__(group, namesrv, **kw)
        self.local_transaction = local_transaction
        self.check_listener = check_listener

    async def start(self, nursery: trio.Nursery) -> None:
        await super().start(nursery)
        self.instance.transaction_producers[self.group] = self
        await self.instance.send_heartbeat()

    async def shutdown(self) -> None:
        self.instance.transaction_producers.pop(self.group, None)
        await super().shutdown()

    async def send_in_transaction(self, msg: Message, arg=None) -> tuple[SendResult, TransactionState]:
        if msg.delay_level:
            msg = dataclasses.replace(msg, delay_level=0)
        msg = dataclasses.replace(msg, properties={**msg.properties, "TRAN_MSG": "true", "PGROUP": self.group})
        result = await self.send(msg)
        await self.instance.route(msg.topic)
        await self.instance.send_heartbeat()  # the broker needs a live producer channel for checks
        try:
            state = await _call(self.local_transaction, msg, arg)
        except Exception:
            state = TransactionState.UNKNOWN
        state = state or TransactionState.UNKNOWN
        addr = await self.instance.broker_addr(result.queue.broker_name, msg.topic)
        await self._end(addr, parse_msg_id(result.offset_msg_id)[2], result.queue_offset, result.msg_id,
                        result.transaction_id, state, False)
        return result, state

    async def _end(self, addr, commit_log_offset, queue_offset, msg_id, transaction_id, state, from_check) -> None:
        await self.instance.oneway(addr, RC.END_TRANSACTION, {
            "producerGroup": self.group, "tranStateTableOffset": queue_offset, "commitLogOffset": commit_log_offset,
            "commitOrRollback": state.value, "fromTransactionCheck": from_check, "msgId": msg_id,
            "transactionId": transaction_id})

    async def check_state(self, addr: str, cmd, msg) -> None:
        """CHECK_TRANSACTION_STATE from the broker: ask the check listener, answer with END_TRANSACTION."""
        try:
            state = await _call(self.check_listener, msg) or TransactionState.UNKNOWN
        except Exception:
            state = TransactionState.UNKNOWN
        await self._end(addr, cmd.get_int("commitLogOffset"), cmd.get_int("tranStateTableOffset"),
                        cmd.get_str("msgId"), cmd.get_str("transactionId"), state, True)


async def _call(fn, *args):
    """Run user code: awaited if async, else in a worker thread."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    return await trio.to_thread.run_sync(fn, *args)
