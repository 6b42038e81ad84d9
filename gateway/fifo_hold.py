"""FIFO message groups for a remoting POP_MESSAGE with `order=true` (RocketMQ's orderly POP header
field), which is how a gRPC ReceiveMessage forwarded to a diskless bucket's POP owner asks for them
(gateway.diskless_pop_grpc): while a message with a message group is in flight from a queue, that
queue hands nothing more to the consumer group, as the gRPC receive does locally
(gateway.grpc.receive). The held receipts are the ones that receive keeps, in App.grpc.fifo_in_flight
by (group, topic, queue id), so a receive served locally and one forwarded hold each other back.

Why: without it the owner served a forwarded receive as a plain POP, so the next message of a group
went out while the one before was still unacknowledged, and a group's order was lost."""
from __future__ import annotations

from codec.remoting import message as smsg
from gateway.lite_pop import in_flight
from semantics.pop import Receipt
from semantics.pop_raw import raw_properties

MESSAGE_GROUP = "__SHARDINGKEY"  # the stored property of a gRPC message group (gateway.grpc.messages)


def ordered(req) -> bool:
    """Whether a POP_MESSAGE asks for FIFO message groups (its `order` header field)."""
    return str(req.ext_fields.get("order", "")).strip().lower() == "true"


def held(app, group: str, topic: str, qid: int) -> bool:
    """Whether a message with a message group popped from the queue by `group` is still in flight."""
    return in_flight(app.pop, app.grpc.fifo_in_flight.get((group, topic, qid)))


def hold(app, group: str, topic: str, qid: int, pop_time: int, deliveries) -> None:
    """Hold the queue for `group` while the delivered messages that have a message group are in flight."""
    receipts = [Receipt(group, topic, qid, d.offset, pop_time) for d in deliveries if _has_group(d)]
    if receipts:
        app.grpc.fifo_in_flight[(group, topic, qid)] = receipts


def _has_group(delivery) -> bool:
    if delivery.raw is not None:
        props = raw_properties(delivery.raw)
        if props is None:  # fields that do not fit the quick look: decoded
            props = smsg.decode(delivery.raw, 0).properties
    else:
        props = getattr(delivery.message, "properties", None) or {}
    return bool((props or {}).get(MESSAGE_GROUP))
