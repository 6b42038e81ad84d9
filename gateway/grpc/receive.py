"""ReceiveMessage (server streaming, long polling), AckMessage, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue over the one pop engine (semantics.pop), as the remoting POP
face (gateway.remoting.pop) uses it.

A receipt handle is "<queue id> <offset> <pop time> <topic>": what the engine's Receipt needs.
The request's queue names only the broker (as with the RocketMQ proxy): every queue is popped.
FIFO: while a message with a message group is in flight from a queue, that queue delivers nothing
else to the group, so the messages of a group are consumed in order.
"""
from __future__ import annotations

import trio

import interop.to_rocketmq as inner_batch
from codec.remoting.extra_info import pop_retry_topic
from codec.remoting.message import INNER_BATCH_FLAG
from gateway.grpc.common import Code, RpcError, d, ok, rpc, s, status
from gateway.grpc.messages import to_pb
from gateway.grpc.renew import Renewer
from gateway.lite_pop import in_flight, pop_subscriptions
from gateway.grpc.route import served_queues, topic_config
from gateway.ops.stats import stats_of
from gateway.remoting.common import client_group_error
from gateway.remoting.pop import MAX_INVISIBLE_MS, _keeper, _tag_filter, _to_dlq
import gateway.diskless_pop as diskless_pop
import gateway.diskless_pop_grpc as diskless_pop_grpc
from store.objstore.api import ObjectStoreError
from semantics import lite, routing
from semantics.pop import Receipt
from semantics.priority import pop_order
from semantics.retry import DEFAULT_MAX_RECONSUME_TIMES
from semantics.sql92 import FilterSyntaxError, subscription_filter

MAX_BATCH = 32
AUTO_RENEW_INVISIBLE_MS = 60_000  # push consumers ask the server to renew; they get a long lease instead
MIN_INVISIBLE_MS = 10_000  # the RocketMQ proxy's minInvisibleTimeMillsForRecv
DEADLINE_MARGIN = 0.3  # seconds: answer a long poll this long before the call's deadline
MAX_POLL_S = 30.0


def receipt_handle(topic: str, qid: int, offset: int, pop_time: int, lite_topic: str = "") -> str:
    return f"{qid} {offset} {pop_time} {topic} {lite_topic}" if lite_topic else f"{qid} {offset} {pop_time} {topic}"


def parse_receipt(group: str, handle: str) -> Receipt:
    parts = handle.split(" ", 3)
    if len(parts) != 4 or not all(p.lstrip("-").isdigit() for p in parts[:3]) or not parts[3]:
        raise RpcError(Code.INVALID_RECEIPT_HANDLE, f"receipt handle {handle!r} is malformed")
    qid, offset, pop_time = (int(p) for p in parts[:3])
    topic, _, lite_topic = parts[3].partition(" ")  # a lite subscription's handle names its lite topic
    return Receipt(lite.subscription_group(group, lite_topic) if lite_topic else group, topic, qid, offset, pop_time)


def _millis(duration) -> int:
    return duration.seconds * 1000 + duration.nanos // 1_000_000


def _filter(expr):
    kind = {d.FilterType.SQL: "SQL92"}.get(expr.type, "TAG")
    try:
        return subscription_filter(kind, expr.expression or "*")
    except FilterSyntaxError as exc:
        raise RpcError(Code.ILLEGAL_FILTER_EXPRESSION, f"bad filter expression: {exc}") from None


def _group(req) -> str:
    error = client_group_error(req.group.name)  # as the 5.5 proxy answers (measured)
    if error:
        raise RpcError(Code.ILLEGAL_CONSUMER_GROUP, error)
    return req.group.name


class _Receive:
    """One ReceiveMessage: the queues to pop and the lease settings."""

    def __init__(self, ctx, req) -> None:
        app = self.app = ctx.app
        self.group, self.topic = _group(req), req.message_queue.topic.name
        cfg = topic_config(app, self.topic, create=False)
        # As the RocketMQ proxy: the queue names only a broker; every queue of it is popped.
        queues = pop_order(cfg, cfg.read_queues)  # a PRIORITY topic's highest queue first
        led = served_queues(app, self.topic)  # in a cluster: those led here
        queues = queues if led is None else [q for q in queues if q in led]
        retry = app.store.topics.get(pop_retry_topic(self.group, self.topic))
        self.sources = [(self.topic, q) for q in queues] + \
            ([(retry.name, q) for q in range(retry.read_queues)] if retry else [])
        session = self.session = app.grpc.clients.get(ctx.client_id)
        # a lite push consumer: (lite topic, its queue) for each of its subscriptions (semantics.lite)
        self.lite = session is not None and session.is_lite_consumer
        self.write_queues = cfg.write_queues
        self.max_n = min(max(req.batch_size, 1), MAX_BATCH)
        self.invisible = _millis(req.invisible_duration) if req.HasField("invisible_duration") else 0
        if req.auto_renew and self.invisible <= 0:
            self.invisible = AUTO_RENEW_INVISIBLE_MS
        conn = ctx.call.conn
        self.renewer = conn.service("renew", lambda: Renewer(app)) if req.auto_renew else None
        if self.invisible < MIN_INVISIBLE_MS:
            raise RpcError(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {MIN_INVISIBLE_MS}")
        if self.invisible > MAX_INVISIBLE_MS:
            raise RpcError(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too large. max is {MAX_INVISIBLE_MS}")
        self.subscription = _filter(req.filter_expression)
        self.poll_s = min(_millis(req.long_polling_timeout) / 1000, MAX_POLL_S)

    def once(self) -> list:
        if self.lite:
            return self.once_lite()
        app, engine = self.app, self.app.pop
        pop_time, left, out = engine.new_pop_time(), self.max_n, []
        fifo = app.grpc.fifo_in_flight
        for topic, qid in self.sources:
            key = (self.group, topic, qid)
            if in_flight(engine, fifo.get(key)):
                continue
            got = engine.acquire(self.group, topic, qid, left, self.invisible, tag_filter=_tag_filter(self.subscription),
                                 keep=_keeper(self.subscription), max_deliveries=DEFAULT_MAX_RECONSUME_TIMES + 1,
                                 pop_time=pop_time, dead_letter=lambda g, m, o: _to_dlq(app, g, m, o))
            held, leased, first = [], [], len(out)
            for delivery in got.deliveries:
                message = self._message(topic, qid, delivery, pop_time)
                if message is None:
                    continue
                receipt = Receipt(self.group, topic, qid, delivery.offset, pop_time)
                leased.append(receipt)
                if message.system_properties.message_group:
                    held.append(receipt)
                out.append(message)
            if held:
                fifo[key] = held
            if leased and self.renewer is not None:
                self.renewer.hold(leased)
            if len(out) > first:
                stats_of(app).fetched("grpc", topic, sum(len(m.body) for m in out[first:]))
            left = self.max_n - len(out)
            if left <= 0:
                break
        return out

    def once_lite(self) -> list:
        """One message of each subscribed lite topic whose last one was acknowledged (so each lite
        topic is consumed in order, one at a time, as a FIFO message group is)."""
        app = self.app
        pop_time, out = app.pop.new_pop_time(), []
        # the subscriptions as they are now (they change while this call long-polls)
        names = set(self.session.lite_topics)
        self.sources = sorted({(self.topic, lite.queue_of(name, self.write_queues)) for name in names})
        for name, qid, deliveries in pop_subscriptions(app, self.group, self.topic, names, self.write_queues,
                                                       self.invisible, self.max_n, 1, pop_time,
                                                       lambda m, o: _to_dlq(app, self.group, m, o)):
            out.extend(self._message(self.topic, qid, delivery, pop_time, name) for delivery in deliveries)
            if self.renewer is not None:
                self.renewer.hold(app.grpc.fifo_in_flight[(lite.subscription_group(self.group, name), self.topic, qid)])
        return out

    def _message(self, topic, qid, delivery, pop_time, lite_topic=""):
        m = delivery.message
        handle = receipt_handle(topic, qid, delivery.offset, pop_time, lite_topic)
        common = dict(topic=self.topic, receipt_handle=handle, invisible_ms=self.invisible,
                      attempt=delivery.count, queue_offset=delivery.offset,
                      deliver_at=scheduled_at(self.app, m.properties))
        if m.sys_flag & INNER_BATCH_FLAG:
            records = inner_batch.records_as_messages(m)
            index = delivery.offset - m.queue_offset
            record = records[index] if 0 <= index < len(records) else None
            if record is None:
                return None
            return to_pb(m, body=record.body, properties=record.properties, **common)
        return to_pb(m, **common)


def scheduled_at(app, props: dict) -> int:
    """When a message that went through the schedule topic was due (epoch ms; 0: not delayed).
    The delivered copy names its schedule entry (SCHEDULE_OFFSET), which holds the due time."""
    where = props.get(routing.PROPERTY_SCHEDULE_OFFSET)
    if not where:
        return 0
    q, _, offset = where.partition(":")
    try:
        read = app.store.read(routing.SCHEDULE_TOPIC, int(q), int(offset), max_count=1)
    except ValueError:
        return 0
    for _, entry in read.entries:
        due = entry.properties.get(routing.PROPERTY_START_DELIVER_TIME)
        if due and due.isdigit():
            return int(due)
        level = entry.properties.get(routing.PROPERTY_DELAY)
        if level and level.isdigit() and int(level) > 0:
            return entry.store_timestamp + app.delay_levels.delay_ms(int(level))
    return 0


@rpc("ReceiveMessage", "server_stream")
async def receive_message(ctx, req, send):
    receive = _Receive(ctx, req)
    diskless = diskless_pop.diskless_sources(ctx.app, receive.sources)  # loaded before each try
    if diskless and not receive.lite and await _at_owner(ctx, req, receive, send):
        return  # another gateway owns POP of the bucket: its state, not this one's, says what is in flight
    await _load(ctx.app, receive.group, diskless)
    messages = receive.once()
    if not messages and receive.poll_s > 0:
        app = ctx.app
        deadline = min(trio.current_time() + receive.poll_s, ctx.call.deadline - DEADLINE_MARGIN)
        while not messages and (remaining := deadline - trio.current_time()) > 0:
            # another gateway's writes to a diskless queue wake nobody here: look again each second
            await app.arrivals.wait_any(receive.sources, min(remaining, 1.0) if diskless else remaining)
            await _load(app, receive.group, diskless)
            messages = receive.once()
    if not messages:
        await send(s.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message")))
        return
    await send(s.ReceiveMessageResponse(status=ok()))
    for message in messages:
        await send(s.ReceiveMessageResponse(message=message))
    sent_at = s.ReceiveMessageResponse()  # the SDKs measure delivery latency from it
    sent_at.delivery_timestamp.FromMilliseconds(ctx.app.clock.now_ms())
    await send(sent_at)


async def _at_owner(ctx, req, receive: _Receive, send) -> bool:
    """Whether the bucket's POP owner served this receive (gateway.diskless_pop_grpc): its answer sent."""
    poll_s = max(0.0, min(receive.poll_s, ctx.call.deadline - DEADLINE_MARGIN - trio.current_time()))
    expr = req.filter_expression
    got = await diskless_pop_grpc.receive(ctx.app, receive.group, receive.topic, receive.max_n, receive.invisible,
                                          poll_s, "SQL92" if expr.type == d.FilterType.SQL else "TAG",
                                          expr.expression or "*")
    if got is None:
        return False
    pop_time, stored = got
    if not stored:
        await send(s.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message")))
        return True
    await send(s.ReceiveMessageResponse(status=ok()))
    handles = [receipt_handle(m.topic, m.queue_id, m.queue_offset, pop_time) for m in stored]
    if receive.renewer is not None:  # renewed at the owner while the consumer processes them
        receive.renewer.hold_remote([parse_receipt(receive.group, h) for h in handles], receive.invisible)
    for m, handle in zip(stored, handles):
        await send(s.ReceiveMessageResponse(message=to_pb(
            m, topic=receive.topic, receipt_handle=handle, invisible_ms=receive.invisible,
            attempt=m.reconsume_times + 1, deliver_at=scheduled_at(ctx.app, m.properties))))
    sent_at = s.ReceiveMessageResponse()
    sent_at.delivery_timestamp.FromMilliseconds(ctx.app.clock.now_ms())
    await send(sent_at)
    return True


async def _load(app, group: str, diskless: list) -> None:
    try:
        await diskless_pop.load(app, group, diskless)
    except ObjectStoreError as exc:  # as the proxy answers a broker's SYSTEM_BUSY
        raise RpcError(Code.TOO_MANY_REQUESTS, f"[diskless] object store unavailable: {exc}") from None


@rpc("AckMessage")
async def ack_message(ctx, req):
    group, engine = _group(req), ctx.app.pop
    entries, end, failed = [], 0, 0
    renewer = ctx.call.conn.services.get("renew")
    for entry in req.entries:
        try:
            receipt = parse_receipt(group, entry.receipt_handle)
            at_owner = await diskless_pop_grpc.ack(ctx.app, receipt)  # another gateway's POP state?
            if at_owner is not None and renewer is not None:
                renewer.release(receipt)  # no renewal at the owner of what it acknowledged
            done, end_offset = engine.ack([receipt]) if at_owner is None else (at_owner, 0)
            if done and lite.GROUP_SEPARATOR in receipt.group:  # the lite topic's next message may go
                ctx.app.arrivals.notify(receipt.topic, receipt.queue_id)
        except RpcError as exc:
            done, end_offset = 0, 0
            entry_status = status(exc.code, exc.message)
        else:
            entry_status = ok() if done else status(Code.INVALID_RECEIPT_HANDLE,
                                                    "the receipt names no message in flight (acknowledged, expired "
                                                    "or unknown)")
        end = max(end, end_offset)
        failed += not done
        entries.append(s.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle,
                                               status=entry_status))
    if end:
        await ctx.app.durable(end)
    if not failed:
        overall = ok()
    elif failed == len(entries):
        overall = entries[0].status if len(entries) == 1 else status(Code.INVALID_RECEIPT_HANDLE, "no receipt was valid")
    else:
        overall = status(Code.MULTIPLE_RESULTS, f"{failed} of {len(entries)} receipts were not valid")
    return s.AckMessageResponse(status=overall, entries=entries)


@rpc("ChangeInvisibleDuration")
async def change_invisible_duration(ctx, req):
    receipt = parse_receipt(_group(req), req.receipt_handle)
    invisible = _millis(req.invisible_duration)
    if not 0 <= invisible <= MAX_INVISIBLE_MS:
        raise RpcError(Code.ILLEGAL_INVISIBLE_TIME, f"invisible duration {invisible} ms is out of range")
    renewer = ctx.call.conn.services.get("renew")
    if renewer is not None:
        renewer.release(receipt)
    at_owner = await diskless_pop_grpc.change_invisible(ctx.app, receipt, invisible)  # another gateway's POP state?
    if at_owner:
        return s.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=req.receipt_handle)
    renewed = ctx.app.pop.renew(receipt, invisible) if at_owner is None else None
    if renewed is None:
        raise RpcError(Code.INVALID_RECEIPT_HANDLE, "the receipt names no message in flight (acknowledged, "
                                                    "expired or unknown)")
    await ctx.app.durable(renewed[1])
    return s.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=req.receipt_handle)


@rpc("ForwardMessageToDeadLetterQueue")
async def forward_to_dead_letter_queue(ctx, req):
    app = ctx.app
    receipt = parse_receipt(_group(req), req.receipt_handle)
    done, end = app.pop.reject([receipt], dead_letter=lambda g, m, o: _to_dlq(app, g, m, o))
    if not done:
        raise RpcError(Code.INVALID_RECEIPT_HANDLE, "the receipt names no message in flight")
    await app.durable(end)
    return s.ForwardMessageToDeadLetterQueueResponse(status=ok())
