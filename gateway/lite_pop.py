"""Popping a client's lite subscriptions (semantics.lite), shared by both faces that consume lite
topics: gRPC ReceiveMessage of a lite push consumer and remoting POP_LITE_MESSAGE (what RocketMQ
5.5's proxy sends its broker). Each subscription (group G, lite topic L) is the pop-engine group
`G#L` over L's queue of the parent keeping only L's messages; while any message it handed out is
in flight (leased, not acknowledged) it hands out nothing else, so one lite topic is consumed in
order, as a FIFO message group (RocketMQ 5.5 blocks a lite topic the same way until its popped
messages are acknowledged). The in-flight receipts live in App.grpc.fifo_in_flight, so the block
holds whichever protocol popped."""
from __future__ import annotations

from semantics import lite
from semantics.pop import Receipt
from semantics.retry import DEFAULT_MAX_RECONSUME_TIMES


def in_flight(engine, receipts) -> bool:
    """Whether one of `receipts` is still leased (not acknowledged, its invisible time not over)."""
    if not receipts:
        return False
    now = engine.clock()
    for r in receipts:
        lease = engine.lease(r)
        if lease is not None and lease.deadline > now:
            return True
    return False


def keeper(name: str):
    """The exact check of a record of the parent: it belongs to lite topic `name`."""
    return lambda message, offset: message.properties.get(lite.PROPERTY_LITE_TOPIC) == name


def ttl(app, parent: str) -> dict:
    """The keyword arguments that make semantics.lite see only a lite topic's live messages."""
    cfg = app.store.topics.get(parent)
    return {"expire_ms": lite.expire_after_ms(cfg.attributes if cfg is not None else None, app.config.lite_min_ttl_ms),
            "now_ms": app.clock.now_ms()}


def pop_subscriptions(app, group: str, parent: str, names, write_queues: int, invisible_ms: int, max_n: int,
                      per_topic: int, pop_time: int, dead_letter) -> list:
    """[(lite topic, queue id, deliveries)] of the subscribed lite topics `names` that are not held,
    up to `per_topic` messages of each and `max_n` in all; `dead_letter(message)` takes a message
    past its last delivery (to the group's DLQ)."""
    engine, held, out, total = app.pop, app.grpc.fifo_in_flight, [], 0
    live = ttl(app, parent)
    for name in sorted(names):
        qid = lite.queue_of(name, write_queues)
        sub = lite.subscription_group(group, name)
        key = (sub, parent, qid)
        if in_flight(engine, held.get(key)):
            continue
        state = engine.state(sub, parent, qid)
        if state is None or not state.leases:  # nothing in flight: jump to the lite topic's next message
            at = state.next if state is not None else engine.start_offset(sub, parent, qid)
            jump = lite.next_offset(app.store, parent, qid, name, at, **live)
            if jump is not None and jump > at:
                engine.reset(sub, parent, qid, jump)
        code = lite.tags_code(name)
        got = engine.acquire(sub, parent, qid, min(per_topic, max_n - total), invisible_ms, keep=keeper(name),
                             tag_filter=lambda c, code=code: c == code,
                             max_deliveries=DEFAULT_MAX_RECONSUME_TIMES + 1, pop_time=pop_time,
                             dead_letter=lambda g, m, o: dead_letter(m, o))
        if got.deliveries:
            held[key] = [Receipt(sub, parent, qid, d.offset, pop_time) for d in got.deliveries]
            out.append((name, qid, got.deliveries))
            total += len(got.deliveries)
        if total >= max_n:
            break
    return out
