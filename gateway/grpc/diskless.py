"""RocketMQ 5 gRPC SendMessage on diskless topics (docs/diskless.md): each message becomes a
one-record Kafka batch, as remoting sends do (gateway.remoting.diskless), written through the WAL
and answered once its object and index entry are in the store. Delay and transactional messages
wait in the local schedule and half topics first, as on plain topics (gateway.diskless_delivery);
an unreachable object store answers TOO_MANY_REQUESTS, as the proxy answers a broker's SYSTEM_BUSY
(the SDKs retry it)."""
from __future__ import annotations

from gateway.diskless_delivery import append_messages
from gateway.grpc.common import Code, RpcError, ok, s
from store.objstore.api import ObjectStoreError


def goes_through_wal(topic: str, msgs: list) -> bool:
    """Whether a send's routed messages (gateway.grpc.send) go to the diskless queue now."""
    return any(m.topic == topic for m in msgs)


async def send(app, sent: list, msgs: list):
    """`sent`: the request's messages; `msgs`: them as routed store messages (gateway.grpc.send)."""
    topic = sent[0].topic.name
    if any(m.topic != topic for m in msgs):
        raise RpcError(Code.UNSUPPORTED, f"a send to diskless topic[{topic}] mixes delayed or transactional "
                                         "messages with others")
    try:
        offsets = await append_messages(app, msgs)
    except ObjectStoreError as exc:
        raise RpcError(Code.TOO_MANY_REQUESTS, f"[diskless] object store unavailable: {exc}") from None
    entries = [s.SendResultEntry(status=ok(), message_id=m.system_properties.message_id, offset=offsets[i])
               for i, m in enumerate(sent)]
    return s.SendMessageResponse(status=ok(), entries=entries)
