"""SendMessage (normal, FIFO, delay by delivery timestamp, transactional) and EndTransaction. A send is routed like every other (semantics.routing: delayed messages to the
schedule topic, transactional ones to the half topic), appended, and answered once durable in
sync-flush mode. A transactional send answers a transaction id "<half offset>:<CommitLog offset>"
that EndTransaction (or a check-back's answer) names the half message by, a delayed one the
recall handle of gateway.grpc.recall. A message of another type than its topic's `message.type`
is refused (MESSAGE_PROPERTY_CONFLICT_WITH_TYPE), as the RocketMQ proxy does."""
from __future__ import annotations

import random

import store
import gateway.grpc.diskless as diskless
from gateway.grpc.common import Code, RpcError, ok, rpc, s
from gateway.grpc.messages import message_type, to_store
from gateway.grpc.recall import check_type, recall_handle
from gateway.cluster.ownership import clustered
from gateway.cluster.remoting_queues import own_broker_name
from gateway.cluster.routes import led_queues
from gateway.grpc.fifo_queue import group_queue
from gateway.grpc.forward import forward_elsewhere
from gateway.grpc.route import served_queues, topic_config
from semantics import lite, priority, routing
from semantics.diskless import is_diskless
from semantics.flow_control import SendRefused
from semantics.transactions import EndResult


def _peer(ctx) -> tuple:
    try:
        host, port = ctx.call.conn.socket.getpeername()[:2]
        return host, port
    except (OSError, AttributeError):
        return "127.0.0.1", 0


def _prepare(ctx, msgs):
    app = ctx.app
    busy = app.flow.refusal(None)
    if busy:
        raise RpcError(Code.TOO_MANY_REQUESTS, busy)
    if not msgs:
        raise RpcError(Code.BAD_REQUEST, "no message to send")
    topic = msgs[0].topic.name
    if any(m.topic.name != topic for m in msgs):
        raise RpcError(Code.BAD_REQUEST, "the messages of one send must share a topic")
    cfg = topic_config(app, topic)
    if not cfg.perm & 2:
        raise RpcError(Code.FORBIDDEN, f"the topic[{topic}] sending is forbidden")
    total = cluster_queue_count(app, topic)  # None: one gateway or a local topic
    grouped = total is not None and all(m.system_properties.message_group for m in msgs)
    # in a cluster: the queues this gateway leads (FORBIDDEN when none, unless every message is placed by its group)
    led = led_queues(app.ownership, topic) if grouped else served_queues(app, topic)
    limit, born, out, now = app.config.max_message_bytes, _peer(ctx), [], app.clock.now_ms()
    for m in msgs:
        if len(m.body) > limit:
            raise RpcError(Code.MESSAGE_BODY_TOO_LARGE, f"the message body size {len(m.body)} is over the limit {limit}")
        if not m.body:
            raise RpcError(Code.MESSAGE_BODY_EMPTY, "the message body is empty")
        stored = to_store(m, _queue_of(m.system_properties, cfg, led, total), born)
        # a lite topic's queue of the parent, a priority's queue (RIP-83, RIP-80); in a cluster such a
        # topic is led whole by one gateway (ownership.led_whole), so that queue is one of this one's
        chosen = stored.queue_id
        placed = priority.place(lite.place(stored, cfg.write_queues), cfg.write_queues)
        if led is not None and placed.queue_id not in led:  # a topic made another type after it was placed
            placed.queue_id = chosen  # (or a message group's queue led elsewhere: forwarded)
        out.append(placed)
        check_type(cfg, message_type(out[-1].properties))
    try:
        return [routing.route(m, now, app.delay_levels) for m in out]
    except routing.DelayRefused as exc:  # a delivery_timestamp beyond --timer-max-delay-sec
        raise RpcError(Code.ILLEGAL_DELIVERY_TIME, str(exc)) from None


def cluster_queue_count(app, topic: str) -> int | None:
    """How many queues a cluster topic has (the route lists them all); None for one gateway or a
    local topic."""
    if not clustered(app) or not app.ownership.assigned(topic):
        return None
    return len(app.ownership.view.queues_of(topic))


def _queue_of(sp, cfg, led, total) -> int:
    """The queue a message goes to. One gateway or a local topic: the one the client named. A
    cluster topic: a message group's queue is fixed by the group (`fifo_queue.group_queue`, the
    Java SDK's own pick over the route's queues), wherever it is led now; any other message goes
    to the queue it names if led here, else to one this gateway leads."""
    if total is None:
        qid = sp.queue_id if sp.queue_id >= 0 else random.randrange(cfg.write_queues)
        return qid % cfg.write_queues
    if sp.message_group:
        return group_queue(sp.message_group, total)
    qid = sp.queue_id if sp.queue_id >= 0 else random.randrange(total)
    return qid if qid in led else led[qid % len(led)]


def _append_error(exc: store.StoreError) -> RpcError:
    if isinstance(exc, store.MessageTooLarge):
        return RpcError(Code.MESSAGE_BODY_TOO_LARGE, str(exc))
    return RpcError(Code.INTERNAL_SERVER_ERROR, str(exc))


@rpc("SendMessage")
async def send_message(ctx, req):
    app = ctx.app
    read_at = app.flow.clock()  # its wait for the send queue starts here (flow control)
    msgs = _prepare(ctx, list(req.messages))
    cfg, validation = topic_config(app, req.messages[0].topic.name), app.schema_validation
    if validation.rule(cfg):  # ids this gateway lacks are asked of the registry leader (an await)
        refused = await validation.body_refusal_learning("grpc", cfg, [m.body for m in req.messages])
        if refused:
            raise RpcError(Code.BAD_REQUEST, refused)
    if app.diskless is not None and is_diskless(cfg) and diskless.goes_through_wal(cfg.name, msgs):  # the WAL
        return await diskless.send(app, req.messages, msgs)
    forwarded = await forward_elsewhere(app, msgs)  # message groups' queues led by other gateways
    here = [m for i, m in enumerate(msgs) if i not in forwarded]
    try:  # off the loop while the disk is slow, as remoting sends
        appended = await app.flow.append(app.store, here, read_at) if here else []
    except SendRefused as exc:  # the proxy answers a broker's SYSTEM_BUSY so
        raise RpcError(Code.TOO_MANY_REQUESTS, str(exc)) from None
    except store.StoreError as exc:
        raise _append_error(exc) from None
    if appended:
        await app.durable(appended[-1].end_offset)
    taken = iter(appended)
    results = [forwarded[i] if i in forwarded else next(taken) for i in range(len(msgs))]
    entries = []
    for sent, m, r in zip(req.messages, msgs, results):
        tx = f"{r.queue_offset}:{r.physical_offset}" if m.topic == routing.HALF_TOPIC else ""
        due = m.properties.get(routing.PROPERTY_START_DELIVER_TIME) if m.topic == routing.SCHEDULE_TOPIC else None
        recall = recall_handle(sent.topic.name, int(due), sent.system_properties.message_id,
                               own_broker_name(app)) if due else ""
        entries.append(s.SendResultEntry(status=ok(), message_id=sent.system_properties.message_id,
                                         transaction_id=tx, offset=r.queue_offset, recall_handle=recall))
    return s.SendMessageResponse(status=ok(), entries=entries)


def parse_transaction_id(text: str) -> tuple[int, int]:
    half, sep, phys = text.partition(":")
    if not sep or not half.isdigit() or not phys.isdigit():
        raise RpcError(Code.INVALID_TRANSACTION_ID, f"transaction id {text!r} names no half message")
    return int(half), int(phys)


@rpc("EndTransaction")
async def end_transaction(ctx, req):
    app = ctx.app
    half_offset, phys = parse_transaction_id(req.transaction_id)
    if req.resolution not in (1, 2):  # COMMIT, ROLLBACK; unspecified leaves it to the check-back
        return s.EndTransactionResponse(status=ok("left to the check-back"))
    outcome, result = await app.transactions.end_in_turn(app.flow, half_offset, req.resolution == 1, None, phys)
    if outcome in (EndResult.NOT_FOUND, EndResult.MISMATCH):
        raise RpcError(Code.INVALID_TRANSACTION_ID, f"transaction {req.transaction_id}: {outcome.value}")
    if result is not None:
        await app.durable(result.end_offset)
    return s.EndTransactionResponse(status=ok(outcome.value))
