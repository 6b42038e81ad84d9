"""AsyncPushConsumer: pulled messages go to a listener, concurrently (failures are sent back to the
broker, which re-delivers them through `%RETRY%<group>` or moves them to the DLQ) or orderly (one
queue held, by the broker's lock, by one member at a time; failures are retried in place)."""
from __future__ import annotations

import logging
import math

import trio

from client.consumer import ConsumerBase
from client.errors import MQClientError
from client.flow import FlowLimits, ProcessQueue, over_limit
from client.model import ConsumeStatus, MessageExt, MessageModel, MessageQueue
from client.producer import _call
from codec.remoting import RequestCode as RC
from codec.remoting.bodies import dumps, loads

log = logging.getLogger("rocketgate.client")
SHUTDOWN_CONSUME_WAIT_S = 5.0
RELOCK_INTERVAL_S = 20.0
LOCK_TIMEOUT_S = 1.0


class AsyncPushConsumer(ConsumerBase):
    """Listener-driven consumer. `listener(msgs) -> ConsumeStatus`; orderly listeners get each
    queue's messages in order, one queue held (locked) by one member at a time.

    Each held queue has a pull task that keeps pulling ahead into a local cache (client.flow
    ProcessQueue) and a consume task that hands the cache to the listener in order; past the flow
    limits (`pull_threshold_for_queue` messages, `pull_threshold_size_for_queue` MiB,
    `consume_concurrently_max_span` offsets) pulling pauses 50 ms at a time, logged once per stretch.
    The committed offset is the lowest one still cached."""

    def __init__(self, group: str, namesrv: str, *, orderly: bool = False, consume_batch_size: int = 1,
                 max_reconsume_times: int = 16, pull_threshold_for_queue: int = 1000,
                 pull_threshold_size_for_queue: int = 100, consume_concurrently_max_span: int = 2000,
                 **kw) -> None:
        super().__init__(group, namesrv, **kw)
        self.flow = FlowLimits(pull_threshold_for_queue, pull_threshold_size_for_queue, consume_concurrently_max_span)
        self.cache: dict[MessageQueue, ProcessQueue] = {}
        self._feeds: dict[MessageQueue, trio.MemorySendChannel] = {}
        self._consuming = 0  # batches in the listener now
        self._stopping = False
        self.orderly = orderly
        self.consume_batch_size = consume_batch_size
        self.max_reconsume_times = max_reconsume_times
        self.listener = None
        self.locked: set[MessageQueue] = set()

    def register_listener(self, listener, orderly: bool | None = None) -> None:
        self.listener = listener
        if orderly is not None:
            self.orderly = orderly

    async def start(self, parent: trio.Nursery) -> None:
        if self.listener is None:
            raise MQClientError("register a listener before start()")
        self._stopping = False
        await super().start(parent)
        if self._locks_queues():
            self.nursery.start_soon(self._relock_loop)

    async def shutdown(self) -> None:
        """Let the batches in the listener finish (a while at most) so their offsets are committed."""
        self._stopping = True
        with trio.move_on_after(SHUTDOWN_CONSUME_WAIT_S):
            while self._consuming:
                await trio.sleep(0.01)
        await super().shutdown()

    def _cached(self, mq: MessageQueue) -> ProcessQueue | None:
        return self.cache.get(mq)

    def _is_locked(self, mq: MessageQueue) -> bool:
        return mq in self.locked

    # ------------------------------------------------------------ queue locks (orderly, clustering)
    def _locks_queues(self) -> bool:
        """Orderly clustering consumers only consume queues whose broker lock they hold."""
        return self.orderly and self.model == MessageModel.CLUSTERING

    async def _may_take(self, mq: MessageQueue) -> bool:
        if not self._locks_queues():
            return True
        return mq in await self._lock([mq])

    async def _lock_request(self, code: int, mqs: list[MessageQueue]):
        """LOCK_BATCH_MQ / UNLOCK_BATCH_MQ for `mqs` (all of one broker)."""
        body = dumps({"clientId": self.instance.client_id, "consumerGroup": self.group,
                      "mqSet": [mq.to_json() for mq in mqs]})
        return await self.instance.invoke(await self.instance.queue_broker(mqs[0]), code, body=body,
                                          timeout=LOCK_TIMEOUT_S)

    async def _lock(self, mqs: list[MessageQueue]) -> set[MessageQueue]:
        try:
            resp = await self._lock_request(RC.LOCK_BATCH_MQ, mqs)
        except MQClientError:
            return set()
        got = {MessageQueue(d["topic"], d["brokerName"], d["queueId"]) for d in loads(resp.body).get("lockOKMQSet", [])}
        self.locked = (self.locked - set(mqs)) | got
        return got

    async def _relock_loop(self) -> None:
        while True:
            await trio.sleep(RELOCK_INTERVAL_S)
            held = list(self.tasks)
            if held:
                await self._lock(held)

    async def _on_queues_removed(self, mqs: list[MessageQueue]) -> None:
        for mq in mqs:
            self.cache.pop(mq, None)
            self._feeds.pop(mq, None)
        if not self._locks_queues() or not mqs:
            return
        try:
            await self._lock_request(RC.UNLOCK_BATCH_MQ, mqs)
        except MQClientError:
            pass
        self.locked -= set(mqs)

    # ------------------------------------------------------------ pulling ahead into the cache
    async def _serve_queue(self, mq: MessageQueue, scope: trio.CancelScope) -> None:
        pq = self.cache[mq] = ProcessQueue(self.offsets[mq])
        send, recv = trio.open_memory_channel(math.inf)  # bounded by the flow limits
        self._feeds[mq] = send
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._consume_loop, mq, pq, recv, scope)
            await super()._serve_queue(mq, scope)

    async def _before_pull(self, mq: MessageQueue) -> None:
        pq = self.cache.get(mq)
        while pq is not None and (reason := over_limit(pq, self.flow, self.orderly)):
            if not pq.flow_controlled:
                log.warning("%s %s: %s", self.group, mq, reason)
                pq.flow_controlled = True
            await trio.sleep(self.flow.delay_s)
        if pq is not None:
            pq.flow_controlled = False

    async def _deliver(self, mq, msgs, next_offset, scope) -> None:
        if self._holds(mq, scope):
            self.cache[mq].put(msgs, next_offset)
            self._feeds[mq].send_nowait(msgs)

    def _advance(self, mq, offset) -> None:
        """Nothing new was pulled up to `offset`: commit it unless messages are still cached."""
        pq = self.cache[mq]
        pq.next_offset = offset
        self.offsets[mq] = pq.commit_offset()

    # ------------------------------------------------------------ consuming from the cache in order
    async def _consume_loop(self, mq: MessageQueue, pq: ProcessQueue, recv, scope: trio.CancelScope) -> None:
        n = self.consume_batch_size
        async for msgs in recv:
            for i in range(0, len(msgs), n):
                if self._stopping:
                    await trio.sleep_forever()  # shutdown cancels us
                batch = msgs[i:i + n]
                self._consuming += 1
                try:
                    if self.orderly:
                        await self._consume_orderly(mq, batch)
                    else:
                        await self._consume_concurrently(batch)
                finally:
                    self._consuming -= 1
                committed = pq.remove(batch)
                if self._holds(mq, scope):
                    self.offsets[mq] = committed

    async def _listener_ok(self, batch: list[MessageExt]) -> bool:
        """Run the listener; an exception counts as a failure (RECONSUME_LATER / SUSPEND)."""
        try:
            status = await _call(self.listener, batch)
        except Exception:
            log.exception("message listener failed")
            return False
        return status in (ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.SUCCESS, None)

    async def _consume_orderly(self, mq: MessageQueue, batch: list[MessageExt]) -> None:
        while True:
            while self.model == MessageModel.CLUSTERING and mq not in self.locked:
                await trio.sleep(0.1)  # lock lost: wait for the relock (or removal by rebalance)
            if await self._listener_ok(batch):
                return
            for m in batch:  # SUSPEND_CURRENT_QUEUE_A_MOMENT: the same messages again, in order
                m.reconsume_times += 1
            await trio.sleep(1.0)

    async def _consume_concurrently(self, batch: list[MessageExt]) -> None:
        if await self._listener_ok(batch) or self.model == MessageModel.BROADCASTING:
            return  # broadcasting drops failed messages, like the Java client
        for m in batch:
            # RECONSUME_LATER: the broker re-delivers through %RETRY%<group>; if it cannot be
            # reached, retry locally until either works.
            while not await self._send_back(m):
                await trio.sleep(1.0)
                if await self._listener_ok([m]):
                    break

    async def _send_back(self, m: MessageExt) -> bool:
        """CONSUMER_SEND_MSG_BACK: the broker re-delivers through %RETRY%<group> (or the DLQ)."""
        fields = {"offset": m.commit_log_offset, "group": self.group, "delayLevel": 0, "originMsgId": m.msg_id,
                  "originTopic": m.topic, "unitMode": False, "maxReconsumeTimes": self.max_reconsume_times,
                  "bname": m.broker_name}
        try:
            await self.instance.invoke(await self.instance.broker_addr(m.broker_name, m.topic),
                                       RC.CONSUMER_SEND_MSG_BACK, fields, timeout=5.0)
            return True
        except MQClientError as exc:
            log.warning("send back of %s failed: %s", m.msg_id, exc)
            return False
