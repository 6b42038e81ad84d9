"""What every consumer does (`ConsumerBase`, under AsyncPushConsumer in client.push_consumer and
AsyncLitePullConsumer in client.lite_pull_consumer): hold its share of the subscribed queues
(client.rebalance), start each newly held queue where client.offset_store says, run one long-polling
pull task per held queue, commit the positions periodically, and answer the broker's requests about
them (running info, offset resets).

A subclass says what happens to pulled messages (`_deliver`) and to a pull that brought none
(`_advance`), and may hold back pulls (`_before_pull`) or refuse a queue (`_may_take`).
"""
from __future__ import annotations

import logging
import time

import trio

from client.errors import MQClientError
from client.flow import ProcessQueue
from client.instance import ClientInstance
from client.model import ConsumeFrom, MessageExt, MessageModel, MessageQueue, decode_messages
from client.offset_store import OffsetStore
from client.rebalance import queues_to_hold
from client.subscription import RETRY_PREFIX, Subscription, check_subscriptions, retry_topic
from codec.remoting import JSON, PullSysFlag, RequestCode as RC
from codec.remoting.bodies import dumps, dumps_mq_map, loads
from codec.remoting.tags import parse_tags

log = logging.getLogger("rocketgate.client")
SUSPEND_MS = 15000
PULL_TIMEOUT_S = 30.0
PULL_ERROR_DELAY_S = 3.0


def _cache_figures(pq: ProcessQueue | None) -> dict:
    """ProcessQueueInfo's cache fields for GET_CONSUMER_RUNNING_INFO (zeros without a cache)."""
    if pq is None or not pq.msgs:
        return {"cachedMsgMinOffset": 0, "cachedMsgMaxOffset": 0, "cachedMsgCount": 0, "cachedMsgSizeInMiB": 0}
    return {"cachedMsgMinOffset": min(pq.msgs), "cachedMsgMaxOffset": max(pq.msgs), "cachedMsgCount": pq.count,
            "cachedMsgSizeInMiB": pq.bytes // (1024 * 1024)}


class ConsumerBase:
    """One member of a consumer group: the queues it holds (`tasks`: one pull task's cancel scope
    per queue) and their positions (`offsets`)."""

    consume_type = "CONSUME_PASSIVELY"
    orderly = False

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
        self.offset_store = OffsetStore(self.instance, group, model)
        self.tasks: dict[MessageQueue, trio.CancelScope] = {}
        self.nursery: trio.Nursery | None = None
        self._rebalance_event = trio.Event()
        self.running = False
        self.started_ms = 0

    @property
    def offsets(self) -> dict[MessageQueue, int]:
        """Next offset to consume, per held queue (the offset store's table)."""
        return self.offset_store.table

    # ------------------------------------------------------------ configuration
    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Tags (`"A || B"`, `"*"`) or, with expression_type="SQL92", a property filter evaluated by
        the broker. A malformed SQL92 expression fails start() (or the next heartbeat) with the
        broker's SUBSCRIPTION_PARSE_FAILED."""
        self.subscriptions[topic] = Subscription.create(topic, expression, expression_type)
        self.rebalance_soon()

    def heartbeat_data(self) -> dict:
        subs = list(self.subscriptions.values())
        return {"consumeFromWhere": self.consume_from.value, "consumeType": self.consume_type,
                "groupName": self.group, "messageModel": self.model.value,
                "subscriptionDataSet": [s.to_json() for s in subs], "unitMode": False}

    def running_info(self) -> bytes:
        """ConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO, forwarded by the broker for
        `mqadmin consumerStatus` / Admin.consumer_running_info): properties, subscriptions, held queues."""
        props = {"PROP_CONSUME_TYPE": self.consume_type, "PROP_CONSUMEORDERLY": str(self.orderly).lower(),
                 "PROP_CLIENT_VERSION": "V4_9_8", "PROP_THREADPOOL_CORE_SIZE": "1",
                 "PROP_NAMESERVER_ADDR": ";".join(self.instance.namesrv_addrs),
                 "PROP_CONSUMER_START_TIMESTAMP": str(self.started_ms), "messageModel": self.model.value,
                 "consumeFromWhere": self.consume_from.value, "language": "PYTHON"}
        queues = {(mq.topic, mq.broker_name, mq.queue_id): {
            "commitOffset": self.offsets.get(mq, 0), **_cache_figures(self._cached(mq)), "transactionMsgMinOffset": 0,
            "transactionMsgMaxOffset": 0, "transactionMsgCount": 0, "locked": self._is_locked(mq),
            "tryUnlockTimes": 0, "lastLockTimestamp": 0, "droped": False, "lastPullTimestamp": 0,
            "lastConsumeTimestamp": 0} for mq in self.tasks}
        head = dumps({"properties": props, "subscriptionSet": [s.to_json() for s in self.subscriptions.values()],
                      "statusTable": {}, "jstack": ""})
        return head[:-1] + b',"mqTable":' + dumps_mq_map(queues).encode() + b"}"

    def _cached(self, mq: MessageQueue) -> ProcessQueue | None:
        """The messages of `mq` pulled but not consumed yet, if this consumer caches them."""
        return None

    def _is_locked(self, mq: MessageQueue) -> bool:
        """Whether this member holds the broker's lock of `mq` (orderly consumers)."""
        return False

    # ------------------------------------------------------------ lifecycle
    async def start(self, parent: trio.Nursery) -> None:
        self.started_ms = int(time.time() * 1000)
        if self._own_instance:
            await self.instance.start(parent)
        if self.model == MessageModel.CLUSTERING and self.consume_type == "CONSUME_PASSIVELY":
            self.subscriptions.setdefault(retry_topic(self.group), Subscription.create(retry_topic(self.group)))
        for topic in self.subscriptions:
            await self.instance.route(topic)
        await check_subscriptions(self.instance, self.group, self.subscriptions.values())
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
        await self.offset_store.persist(oneway=False)
        await self._on_queues_removed(list(self.tasks))
        self.tasks.clear()
        self.instance.consumers.pop(self.group, None)
        if self._own_instance:
            await self.instance.shutdown()
        else:
            await self.instance._unregister(consumer_group=self.group)
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    async def _persist_loop(self) -> None:
        while True:
            await trio.sleep(self.persist_interval)
            await self.offset_store.persist()

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

    async def rebalance(self) -> None:
        """Hold the wanted queues (the manual assignment, or this member's share): queues given up
        stop pulling and commit their positions; new ones start pulling from their start offset."""
        if not self.running:
            return
        if self.assigned is not None:
            wanted = set(self.assigned)
        else:
            wanted = set(await queues_to_hold(self.instance, self.group, self.model, list(self.subscriptions)))
        removed = [mq for mq in self.tasks if mq not in wanted]
        for mq in removed:
            self.tasks.pop(mq).cancel()
        if removed:
            await self.offset_store.persist(oneway=False, only=removed)
            await self._on_queues_removed(removed)
            for mq in removed:
                self.offsets.pop(mq, None)
        for mq in sorted(wanted - set(self.tasks)):
            if not await self._may_take(mq):
                continue
            try:
                offset = await self.offset_store.start_offset(mq, self.consume_from, self.consume_timestamp_ms)
            except MQClientError as exc:
                log.warning("no start offset for %s: %s", mq, exc)
                continue
            self.offsets[mq] = offset
            self._start_pull(mq)

    async def _may_take(self, mq: MessageQueue) -> bool:
        return True

    async def _on_queues_removed(self, mqs: list[MessageQueue]) -> None:
        pass

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
        await self.offset_store.persist(oneway=False, only=held)

    def _restart_pull(self, mq: MessageQueue, offset: int) -> None:
        self.tasks.pop(mq).cancel()
        self.offsets[mq] = offset
        self._start_pull(mq)

    # ------------------------------------------------------------ pulling
    def _start_pull(self, mq: MessageQueue) -> None:
        """A new pull task for `mq` from its current offset; its scope marks it as the current one."""
        scope = trio.CancelScope()
        self.tasks[mq] = scope
        self.nursery.start_soon(self._pull_loop, mq, scope)

    def _holds(self, mq: MessageQueue, scope: trio.CancelScope) -> bool:
        """Whether the pull task of `scope` is still the current one of `mq` (not given away or sought)."""
        return self.tasks.get(mq) is scope

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
            elif self._holds(mq, scope):  # OFFSET_MOVED, nothing new, or only units the subscription filters out
                self._advance(mq, next_offset)
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
        addr = await self.instance.queue_broker(mq)
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

    def _advance(self, mq: MessageQueue, offset: int) -> None:
        """The held queue has nothing to hand over up to `offset` (called only by its current task)."""
        self.offsets[mq] = offset
