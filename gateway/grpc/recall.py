"""RecallMessage (RocketMQ 5.3+): cancel a delayed message before it is delivered, by the recall
handle its SendMessage answered. The handle is RocketMQ's: URL-safe base64 of
"v1 <topic> <broker name> <deliver ms> <message id>", the broker being the gateway whose schedule
holds the message (`broker-<id>` in a cluster, which passes a recall there: gateway.cluster.
recall_forward). Recalling marks the message in the delay scheduler (semantics.delay), which drops
it when it falls due. Answers follow the RocketMQ 5.5
proxy: an undecodable handle or one for another topic, broker or a time not ahead is refused; a
well-formed handle ahead in time that names no scheduled message is accepted (nothing to cancel)."""
from __future__ import annotations

import base64
import binascii

from gateway.cluster import recall_forward
from gateway.cluster.ownership import clustered
from gateway.cluster.recall_forward import holder
from gateway.cluster.remoting_queues import own_broker_name
from gateway.grpc.common import Code, RpcError, d, ok, rpc, s
from gateway.grpc.route import topic_config
from gateway.remoting.common import BROKER_NAME

VERSION = "v1"
MESSAGE_TYPE = "message.type"  # the topic attribute naming its message type (RocketMQ 5)
ANY_TYPE = ("", "MIXED", "UNSPECIFIED")


def recall_handle(topic: str, due_ms: int, message_id: str, broker: str = BROKER_NAME) -> str:
    """`broker`: the gateway whose schedule holds the message (broker-<id> in a cluster)."""
    raw = " ".join((VERSION, topic, broker, str(due_ms), message_id))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode(handle: str) -> list[str]:
    try:
        fields = base64.urlsafe_b64decode(handle.encode()).decode().split(" ")
    except (binascii.Error, UnicodeError, ValueError):
        fields = []
    if len(fields) < 5 or fields[0] != VERSION:
        raise RpcError(Code.INTERNAL_SERVER_ERROR, "recall handle is invalid")
    return fields


def check_type(cfg, kind: int) -> None:
    """Refuse a message of another type than the topic's `message.type` (topics without one
    take every type)."""
    want = cfg.attributes.get(MESSAGE_TYPE, "")
    got = d.MessageType.Name(kind)
    if want not in ANY_TYPE and want != got:
        raise RpcError(Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                       f"TopicMessageType validate failed, the expected type is {want}, but actual type is {got}")


@rpc("RecallMessage")
async def recall_message(ctx, req):
    app = ctx.app
    topic = req.topic.name
    check_type(topic_config(app, topic, create=False), d.MessageType.DELAY)
    _version, handle_topic, broker, due_text, message_id = _decode(req.recall_handle)[:5]
    if handle_topic != topic:
        raise RpcError(Code.INTERNAL_SERVER_ERROR, "recall failed, topic not match")
    here = broker in (BROKER_NAME, own_broker_name(app))  # (broker-a: a handle from before broker-<id>)
    elsewhere = holder(app, broker) if not here and clustered(app) else None
    if not here and elsewhere is None:
        raise RpcError(Code.INTERNAL_SERVER_ERROR, "recall failed, broker service not available")
    due = int(due_text) if due_text.isascii() and due_text.isdigit() else -1
    if not 0 < due - app.clock.now_ms() < app.delay_levels.timer_max_delay_ms:  # as timerMaxDelaySec
        raise RpcError(Code.INTERNAL_SERVER_ERROR, "recall failed, timestamp invalid")
    if elsewhere is not None:  # its schedule is another gateway's (gateway.cluster.recall_forward)
        failed = await recall_forward.forward(app, elsewhere, topic, message_id, due)
        if failed is not None:
            raise RpcError(Code.INTERNAL_SERVER_ERROR, f"recall failed, {broker} did not take it: {failed}")
    else:
        app.delay.recall(topic, message_id, due)
    return s.RecallMessageResponse(status=ok(), message_id=message_id)
