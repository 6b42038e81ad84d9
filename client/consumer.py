"""Consumers: PushConsumer (listeners, concurrent or orderly) and LitePullConsumer (poll/seek/commit).

Both share `_ConsumerBase`: subscriptions, average queue allocation across the group's members,
the starting position of a newly assigned queue, one long-polling pull task per held queue, and
the offset table persisted to the broker.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import time

import trio

from codec.remoting import JSON, PullSysFlag, RequestCode as RC, ResponseCode
from codec.remoting.bodies import dumps, dumps_mq_map, loads
from client.errors import MQBrokerError, MQClientError
from client.flow import FlowLimits, ProcessQueue, over_limit
from client.instance import ClientInstance
from client.producer import _call
from client.model import ConsumeFrom, ConsumeStatus, MessageExt, MessageModel, MessageQueue, decode_messages
from codec.remoting.tags import parse_tags
from codec.remoting.message import tag_hash

log = logging.getLogger("rocketgate.client")
SUSPEND_MS = 15000
PULL_TIMEOUT_S = 30.0
PULL_ERROR_DELAY_S = 3.0
RETRY_PREFIX = "%RETRY%"
SHUTDOWN_CONSUME_WAIT_S = 5.0


def allocate_averagely(mqs: list[MessageQueue], cids: list[str], me: str) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely over the sorted queues and client ids."""
    mqs, cids = sorted(mqs), sorted(cids)
    if me not in cids or not mqs:
        return []
    index, n, k = cids.index(me), len(mqs), len(cids)
    mod = n % k
    if n <= k:
        size = 1
    elif mod > 0 and index < mod:
        size = n // k + 1
    else:
        size = n // k
    start = index * size if mod > 0 and index < mod else index * size + mod
    return [mqs[(start + i) % n] for i in range(min(size, n - start))]


def _cache_figures(pq: ProcessQueue | None) -> dict:
    """ProcessQueueInfo's cache fields for GET_CONSUMER_RUNNING_INFO (zeros without a cache)."""
    if pq is None or not pq.msgs:
        return {"cachedMsgMinOffset": 0, "cachedMsgMaxOffset": 0, "cachedMsgCount": 0, "cachedMsgSizeInMiB": 0}
    return {"cachedMsgMinOffset": min(pq.msgs), "cachedMsgMaxOffset": max(pq.msgs), "cachedMsgCount": pq.count,
            "cachedMsgSizeInMiB": pq.bytes // (1024 * 1024)}


@dataclasses.dataclass
class Subscription:
    topic: str
    expression: str
    version: int
    expression_type: str = "TAG"  # or "SQL92" (MessageSelector.bySql): the broker filters, not us

    def to_json(self) -> dict:
        if self.expression_type != "TAG":
            return {"classFilterMode": False, "codeSet": [], "expressionType": self.expression_type,
                    "subString": self.expression, "subVersion": self.version, "tagsSet": [], "topic": self.topic}
        f = parse_tags(self.expression)
        tags = sorted(f.tags)
        return {"classFilterMode": False, "codeSet": [tag_hash(t) for t in tags],
                "expressionType": "TAG", "subString": f.expression, "subVersion": self.version,
                "tagsSet": tags, "topic": self.topic}


class _ConsumerBase:
    consume_type = "CONSUME_PASSIVELY"

    def __init__(self, group: str, namesrv: str, *, model: MessageModel = MessageModel.CLUSTERING,
                 consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET, consume_timestamp_ms: int | None = None,
                 serialize_type: int = JSON, pull_batch_size: int = 32, rebalance_interval: float = 20.0,
                 persist_interval: float = 5.0, instance: ClientInstance | None = None, **credentials) -> None:
        self.group = group
        self.instance = instance or ClientInstance.with_options(namesrv, serialize_type, **credentials)
        self._own_instance = instance is None
        self.model = model
        self.consume_from = consume_from
        self.consume_timestamp_ms = consume_timestamp_ms or int(time.time() * 1000) - 30 * 60 * 1000
        self.pull_batch_size = pull_batch_size
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.subscriptions: dict[str, Subscription] = {}
        self.assigned: list[MessageQueue] | None = None  # manual assignment (lite pull)
        self.offsets: dict[MessageQueue, int] = {}        # next offset to consume, per held queue
        self.tasks: dict[MessageQueue, trio.CancelScope] = {}
        self.nursery: trio.Nursery | None = None
        self._rebalance_event = trio.Event()
        self.running = False
        self.started_ms = 0

    # ------------------------------------------------------------ configuration
    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Tags (`"A || B"`, `"*"`) or, with expression_type="SQL92", a property filter evaluated by
        the broker. A malformed SQL92 expression fails start() (or the next heartbeat) with the
        broker's SUBSCRIPTION_PARSE_FAILED."""
        expression_type = expression_type.upper()
        if expression_type == "TAG":
            expression = expression or "*"
        self.subscriptions[topic] = Subscription(topic, expression, int(time.time() * 1000), expression_type)
        self.rebalance_soon()

    async def check_subscriptions(self) -> None:
        """CHECK_CLIENT_CONFIG for every non-TAG subscription at every broker of its topic, as the
        Java client does: a broker that cannot compile the expression fails start()."""
        for sub in self.subscriptions.values():
            if sub.expression_type == "TAG":
                continue
            route = await self.instance.route(sub.topic)
            for addr in route.brokers.values():
                await self.instance.invoke(addr, RC.CHECK_CLIENT_CONFIG, None, dumps(
                    {"clientId": self.instance.client_id, "group": self.group, "subscriptionData": sub.to_json()}))

    def heartbeat_data(self) -> dict:
        subs = list(self.subscriptions.values())
        return {"consumeFromWhere": self.consume_from.value, "consumeType": self.consume_type,
                "groupName": self.group, "messageModel": self.model.value,
                "subscriptionDataSet": [s.to_json() for s in subs], "unitMode": False}

    def running_info(self) -> bytes:
        """ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO, forwarded by the broker for
        `mqadmin consumerStatus` / Admin.consumer_running_info): properties, subscriptions, held queues."""
        props = {"PROP_CONSUME_TYPE": self.consume_type, "PROP_CONSUMEORDERLY": str(getattr(self, "orderly", False)).lower(),
                 "PROP_CLIENT_VERSION": "V4_9_8", "PROP_THREADPOOL_CORE_SIZE": "1",
                 "PROP_NAMESERVER_ADDR": ";".join(self.instance.namesrv_addrs),
                 "PROP_CONSUMER_START_TIMESTAMP": str(self.started_ms), "messageModel": self.model.value,
                 "consumeFromWhere": self.consume_from.value, "language": "PYTHON"}
        cache = getattr(self, "cache", {})
        queues = {(mq.topic, mq.broker_name, mq.queue_id): {
            "commitOffset": self.offsets.get(mq, 0), **_cache_figures(cache.get(mq)), "transactionMsgMinOffset": 0,
            "transactionMsgMaxOffset": 0, "transactionMsgCount": 0, "locked": mq in getattr(self, "locked", ()),
            "tryUnlockTimes": 0, "lastLockTimestamp": 0, "droped": False, "lastPullTimestamp": 0,
            "lastConsumeTimestamp": 0} for mq in self.tasks}
        head = dumps({"properties": props, "subscriptionSet": [s.to_json() for s in self.subscriptions.values()],
                      "statusTable": {}, "jstack": ""})
        return head[:-1] + b',"mqTable":' + dumps_mq_map(queues).encode() + b"}"

    # ------------------------------------------------------------ lifecycle
    async def start(self, parent: trio.Nursery) -> None:
        self.started_ms = int(time.time() * 1000)
        if self._own_instance:
            await self.instance.start(parent)
        if self.model == MessageModel.CLUSTERING and self.consume_type == "CONSUME_PASSIVELY":
            self.subscriptions.setdefault(RETRY_PREFIX + self.group,
                                          Subscription(RETRY_PREFIX + self.group, "*", int(time.time() * 1000)))
        for topic in self.subscriptions:
            await self.instance.route(topic)
        await self.check_subscriptions()
        self.instance.consumers[self.group] = self
        await self.instance.send_heartbeat()
        self.running = True
        await parent.start(self._run)

    async def _run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            await self.rebalance()
            task_status.started()
            nursery.start_soon(self._rebalance_loop)
            nursery.start_soon(self._persist_loop)
            await trio.sleep_forever()

    async def shutdown(self) -> None:
        self.running = False
        for scope in self.tasks.values():
            scope.cancel()
        await self.persist(oneway=False)
        await self._on_queues_removed(list(self.tasks))
        self.tasks.clear()
        self.instance.consumers.pop(self.group, None)
        if self._own_instance:
            await self.instance.shutdown()
        else:
            await self.instance._unregister(consumer_group=self.group)
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    # ------------------------------------------------------------ rebalance
    def rebalance_soon(self) -> None:
        self._rebalance_event.set()

    async def _rebalance_loop(self) -> None:
        while True:
            with trio.move_on_after(self.rebalance_interval):
                await self._rebalance_event.wait()
            self._rebalance_event = trio.Event()
            try:
                await self.rebalance()
            except MQClientError as exc:
                log.warning("rebalance of %s failed: %s", self.group, exc)

    async def _wanted_queues(self) -> list[MessageQueue]:
        if self.assigned is not None:
            return list(self.assigned)
        wanted = []
        for topic in list(self.subscriptions):
            route = await self.instance.route(topic, refresh=True)
            mqs = route.subscribe_queues()
            if self.model == MessageModel.BROADCASTING:
                wanted += mqs
                continue
            addr = await self.instance.broker_addr(mqs[0].broker_name, topic) if mqs else None
            if addr is None:
                continue
            cids = await self._consumer_ids(addr)
            if self.instance.client_id not in cids:
                # A broker that restarted does not know us until our next heartbeat: send it now
                # rather than give up every queue until then.
                await self.instance.send_heartbeat()
                cids = await self._consumer_ids(addr)
            wanted += allocate_averagely(mqs, cids, self.instance.client_id)
        return wanted

    async def _consumer_ids(self, addr: str) -> list[str]:
        try:
            resp = await self.instance.invoke(addr, RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": self.group})
            return loads(resp.body).get("consumerIdList") or []
        except MQBrokerError:
            return []

    async def rebalance(self) -> None:
        if not self.running:
            return
        wanted = set(await self._wanted_queues())
        removed = [mq for mq in self.tasks if mq not in wanted]
        for mq in removed:
            self.tasks.pop(mq).cancel()
        if removed:
            await self.persist(oneway=False, only=removed)
            await self._on_queues_removed(removed)
            for mq in removed:
                self.offsets.pop(mq, None)
        for mq in sorted(wanted - set(self.tasks)):
            if not await self._may_take(mq):
                continue
            try:
                offset = await self.start_offset(mq)
            except MQClientError as exc:
                log.warning("no start offset for %s: %s", mq, exc)
                continue
            self.offsets[mq] = offset
            scope = trio.CancelScope()
            self.tasks[mq] = scope
            self.nursery.start_soon(self._pull_loop, mq, scope)

    async def _may_take(self, mq: MessageQueue) -> bool:
        return True

    async def _on_queues_removed(self, mqs: list[MessageQueue]) -> None:
        pass

    # ------------------------------------------------------------ offsets
    async def _broker(self, mq: MessageQueue) -> str:
        return await self.instance.broker_addr(mq.broker_name, mq.topic)

    async def start_offset(self, mq: MessageQueue) -> int:
        addr = await self._broker(mq)
        if self.model == MessageModel.CLUSTERING:
            resp = await self.instance.invoke(addr, RC.QUERY_CONSUMER_OFFSET,
                                              {"consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id},
                                              ok=(0, ResponseCode.QUERY_NOT_FOUND), timeout=5.0)
            if resp.code == 0:
                return resp.get_int("offset")
        if self.consume_from == ConsumeFrom.FIRST_OFFSET:
            return 0
        if self.consume_from == ConsumeFrom.TIMESTAMP:
            resp = await self.instance.invoke(addr, RC.SEARCH_OFFSET_BY_TIMESTAMP, {
                "topic": mq.topic, "queueId": mq.queue_id, "timestamp": self.consume_timestamp_ms})
            return resp.get_int("offset")
        if mq.topic.startswith(RETRY_PREFIX):
            return 0
        resp = await self.instance.invoke(addr, RC.GET_MAX_OFFSET, {"topic": mq.topic, "queueId": mq.queue_id})
        return resp.get_int("offset")

    async def persist(self, oneway: bool = True, only: list[MessageQueue] | None = None) -> None:
        """Send the consumed positions to the broker (clustering only)."""
        if self.model != MessageModel.CLUSTERING:
            return
        for mq in list(only if only is not None else self.offsets):
            offset = self.offsets.get(mq)
            if offset is None:
                continue
            fields = {"consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset}
            try:
                addr = await self._broker(mq)
                if oneway:
                    await self.instance.oneway(addr, RC.UPDATE_CONSUMER_OFFSET, fields)
                else:
                    await self.instance.invoke(addr, RC.UPDATE_CONSUMER_OFFSET, fields, timeout=5.0)
            except MQClientError as exc:
                log.warning("offset commit for %s failed: %s", mq, exc)

    async def _persist_loop(self) -> None:
        while True:
            await trio.sleep(self.persist_interval)
            await self.persist()

    # ------------------------------------------------------------ backtracking (broker-initiated)
    async def on_offset_request(self, conn, cmd) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (apply a ResetOffsetBody: `mqadmin resetOffsetByTime`) or
        GET_CONSUMER_STATUS_FROM_CLIENT (answer this consumer's offsets of a topic)."""
        topic = cmd.get_str("topic") or ""
        if cmd.code == RC.RESET_CONSUMER_CLIENT_OFFSET:
            table = (loads(cmd.body).get("offsetTable") or {}) if cmd.body else {}
            await self.reset_offsets({MessageQueue(t, b, int(q)): int(off) for (t, b, q), off in table.items()
                                      if t == topic})
        elif not cmd.is_oneway:
            mine = {(mq.topic, mq.broker_name, mq.queue_id): off for mq, off in self.offsets.items()
                    if mq.topic == topic}
            body = '{"consumerTable":{},"messageQueueTable":' + dumps_mq_map(mine) + "}"
            await conn.reply(cmd.response(body=body.encode()))

    async def reset_offsets(self, targets: dict[MessageQueue, int]) -> None:
        """Move the held queues among `targets` there: their pulls restart from the new offset
        (messages pulled before are dropped) and the new offsets are committed at once. Queues this
        member does not hold are left to their holders."""
        held = [mq for mq in targets if mq in self.tasks]
        for mq in held:
            self._restart_pull(mq, targets[mq])
        log.info("consumer group %s reset to %s", self.group, {str(mq): targets[mq] for mq in held})
        await self.persist(oneway=False, only=held)

    def _restart_pull(self, mq: MessageQueue, offset: int) -> None:
        self.tasks.pop(mq).cancel()
        self.offsets[mq] = offset
        scope = trio.CancelScope()
        self.tasks[mq] = scope
        self.nursery.start_soon(self._pull_loop, mq, scope)

    # ------------------------------------------------------------ pulling
    async def _pull_loop(self, mq: MessageQueue, scope: trio.CancelScope) -> None:
        with scope:
            await self._serve_queue(mq, scope)

    async def _serve_queue(self, mq: MessageQueue, scope: trio.CancelScope) -> None:
        """Pull `mq` from its current offset for as long as this consumer holds it."""
        offset = self.offsets[mq]
        while True:
            await self._before_pull(mq)
            sub = self.subscriptions.get(mq.topic)
            expression = sub.expression if sub else "*"
            try:
                code, next_offset, msgs = await self.pull(mq, offset, expression, SUSPEND_MS,
                                                          expression_type=sub.expression_type if sub else "TAG")
            except MQClientError as exc:
                log.debug("pull %s failed: %s", mq, exc)
                await trio.sleep(PULL_ERROR_DELAY_S)
                continue
            if msgs:
                await self._deliver(mq, msgs, next_offset, scope)
            else:  # OFFSET_MOVED, nothing new, or only units the subscription filters out
                self._advance(mq, next_offset, scope)
            offset = next_offset

    async def pull(self, mq: MessageQueue, offset: int, expression: str, suspend_ms: int,
                   max_nums: int | None = None, expression_type: str = "TAG") -> tuple[int, int, list[MessageExt]]:
        """One PULL_MESSAGE: (code, nextBeginOffset, messages matching the subscription). Tags are
        re-checked here (the broker filters by hash); SQL92 is the broker's alone."""
        sys_flag = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend_ms > 0 else 0)
        commit = self.offsets.get(mq, 0)
        if self.model == MessageModel.CLUSTERING and commit > 0 and self.consume_type == "CONSUME_PASSIVELY":
            sys_flag |= PullSysFlag.COMMIT_OFFSET
        sub = self.subscriptions.get(mq.topic)
        fields = {"consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id, "queueOffset": offset,
                  "maxMsgNums": max_nums or self.pull_batch_size, "sysFlag": sys_flag, "commitOffset": commit,
                  "suspendTimeoutMillis": suspend_ms, "subscription": expression,
                  "subVersion": sub.version if sub else 0, "expressionType": expression_type}
        addr = await self._broker(mq)
        resp = await self.instance.invoke(addr, RC.PULL_MESSAGE, fields, timeout=suspend_ms / 1000 + PULL_TIMEOUT_S / 2,
                                          ok=(0, 19, 20, 21))
        next_offset = resp.get_int("nextBeginOffset", offset)
        if resp.code != 0:
            return resp.code, next_offset, []
        msgs = decode_messages(resp.body, mq.broker_name)
        if expression_type == "TAG":
            tags = parse_tags(expression)
            msgs = [m for m in msgs if tags.matches(m.tags)]
        for m in msgs:
            m.properties["MIN_OFFSET"] = resp.get_str("minOffset") or "0"
            m.properties["MAX_OFFSET"] = resp.get_str("maxOffset") or "0"
            if m.topic.startswith(RETRY_PREFIX) and m.properties.get("RETRY_TOPIC"):
                m.topic = m.properties["RETRY_TOPIC"]
        return 0, next_offset, msgs

    async def _before_pull(self, mq: MessageQueue) -> None:
        """Flow control: returns when the next pull of `mq` may go (at once unless overridden)."""

    async def _deliver(self, mq: MessageQueue, msgs: list[MessageExt], next_offset: int,
                       scope: trio.CancelScope) -> None:
        """Hand pulled messages over (to the listener, or to poll())."""
        raise NotImplementedError

    def _advance(self, mq: MessageQueue, offset: int, scope: trio.CancelScope) -> None:
        """The queue is consumed up to `offset`, unless it was given away (or sought) meanwhile."""
        if self.tasks.get(mq) is scope:
            self.offsets[mq] = offset


class AsyncPushConsumer(_ConsumerBase):
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
        if self.orderly and self.model == MessageModel.CLUSTERING:
            self.nursery.start_soon(self._relock_loop)

    # Orderly consumers only pull queues whose broker lock they hold.
    async def _may_take(self, mq: MessageQueue) -> bool:
        if not self.orderly or self.model != MessageModel.CLUSTERING:
            return True
        return mq in await self._lock([mq])

    async def _lock(self, mqs: list[MessageQueue]) -> set[MessageQueue]:
        body = dumps({"clientId": self.instance.client_id, "consumerGroup": self.group,
                      "mqSet": [mq.to_json() for mq in mqs]})
        try:
            resp = await self.instance.invoke(await self._broker(mqs[0]), RC.LOCK_BATCH_MQ, body=body, timeout=1.0)
        except MQClientError:
            return set()
        got = {MessageQueue(d["topic"], d["brokerName"], d["queueId"]) for d in loads(resp.body).get("lockOKMQSet", [])}
        self.locked = (self.locked - set(mqs)) | got
        return got

    async def _relock_loop(self) -> None:
        while True:
            await trio.sleep(20)
            held = list(self.tasks)
            if held:
                await self._lock(held)

    async def _on_queues_removed(self, mqs: list[MessageQueue]) -> None:
        for mq in mqs:
            self.cache.pop(mq, None)
            self._feeds.pop(mq, None)
        if not (self.orderly and self.model == MessageModel.CLUSTERING) or not mqs:
            return
        body = dumps({"clientId": self.instance.client_id, "consumerGroup": self.group,
                      "mqSet": [mq.to_json() for mq in mqs]})
        try:
            await self.instance.invoke(await self._broker(mqs[0]), RC.UNLOCK_BATCH_MQ, body=body, timeout=1.0)
        except MQClientError:
            pass
        self.locked -= set(mqs)

    # Pulling ahead into the cache; consuming from it in order.
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
        if self.tasks.get(mq) is scope:
            self.cache[mq].put(msgs, next_offset)
            self._feeds[mq].send_nowait(msgs)

    def _advance(self, mq, offset, scope) -> None:
        """Nothing new was pulled up to `offset`: commit it unless messages are still cached."""
        if self.tasks.get(mq) is scope:
            pq = self.cache[mq]
            pq.next_offset = offset
            self.offsets[mq] = pq.commit_offset()

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
                if self.tasks.get(mq) is scope:
                    self.offsets[mq] = committed

    async def shutdown(self) -> None:
        """Let the batches in the listener finish (a while at most) so their offsets are committed."""
        self._stopping = True
        with trio.move_on_after(SHUTDOWN_CONSUME_WAIT_S):
            while self._consuming:
                await trio.sleep(0.01)
        await super().shutdown()

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


class AsyncLitePullConsumer(_ConsumerBase):
    """Pull-style consumer: `subscribe` (group-balanced) or `assign`, then `poll`, `seek`, `commit`."""

    consume_type = "CONSUME_ACTIVELY"

    def __init__(self, group: str, namesrv: str, *, auto_commit: bool = True, **kw) -> None:
        super().__init__(group, namesrv, **kw)
        self.auto_commit = auto_commit
        self._send, self._recv = trio.open_memory_channel(64)
        self.generation: dict[MessageQueue, int] = {}
        self.consumed: dict[MessageQueue, int] = {}  # position after the last polled message

    def assign(self, queues: list[MessageQueue]) -> None:
        self.assigned = list(queues)
        self.rebalance_soon()

    async def _persist_loop(self) -> None:
        while True:
            await trio.sleep(self.persist_interval)
            if self.auto_commit:
                await self.commit()

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Commit the polled positions (or the given ones) to the broker."""
        for mq, off in (offsets or dict(self.consumed)).items():
            self.offsets[mq] = off
        await self.persist(oneway=False, only=list(offsets or self.consumed))

    async def committed(self, mq: MessageQueue) -> int | None:
        resp = await self.instance.invoke(await self._broker(mq), RC.QUERY_CONSUMER_OFFSET,
                                          {"consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id,
                                           "setZeroIfNotFound": False}, ok=(0, 22), timeout=5.0)
        return resp.get_int("offset") if resp.code == 0 else None

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        return (await self.instance.route(topic, refresh=True)).subscribe_queues()

    async def rebalance(self) -> None:
        await super().rebalance()
        for mq in self.tasks:
            self.consumed.setdefault(mq, self.offsets[mq])
        for mq in list(self.consumed):
            if mq not in self.tasks:
                del self.consumed[mq]

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Next poll returns this queue's messages from `offset` on (buffered ones are dropped)."""
        if mq not in self.tasks:
            raise MQClientError(f"{mq} is not assigned to this consumer")
        self._restart_pull(mq, offset)

    def _restart_pull(self, mq: MessageQueue, offset: int) -> None:
        """Messages polled-but-buffered for `mq` become stale (their generation is gone)."""
        self.generation[mq] = self.generation.get(mq, 0) + 1
        self.consumed[mq] = offset
        super()._restart_pull(mq, offset)

    async def shutdown(self) -> None:
        """With auto_commit, the positions of the last poll are committed before leaving."""
        if self.auto_commit and self.running:
            for mq, off in self.consumed.items():
                self.offsets[mq] = off
        await super().shutdown()

    async def _deliver(self, mq, msgs, next_offset, scope) -> None:
        await self._send.send((mq, self.generation.get(mq, 0), msgs, next_offset))

    def _advance(self, mq, offset, scope) -> None:
        """Nothing to hand out up to `offset`: the polled position moves (commit() stores it)."""
        if self.tasks.get(mq) is scope:
            self.consumed[mq] = offset

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages (empty after `timeout` seconds without any)."""
        with trio.move_on_after(timeout):
            while True:
                mq, gen, msgs, next_offset = await self._recv.receive()
                if gen == self.generation.get(mq, 0) and mq in self.tasks:
                    self.consumed[mq] = next_offset
                    return msgs
        return []


__all__ = ["AsyncPushConsumer", "AsyncLitePullConsumer", "allocate_averagely"]
