"""RocketMQ 5 gRPC SendMessage on diskless topics (docs/diskless.md): each message becomes a
one-record Kafka batch, as remoting sends do (gateway.remoting.diskless), written through the WAL
and answered once its object and index entry are in the store. Delay and transactional messages
(routed to the schedule and half topics) are refused with UNSUPPORTED; an unreachable object store
answers TOO_MANY_REQUESTS, as the proxy answers a broker's SYSTEM_BUSY (the SDKs retry it)."""
from __future__ import annotations

import itertools

from gateway.grpc.common import Code, RpcError, ok, s
from interop.to_kafka import native_batch
from store.objstore.api import ObjectStoreError


async def send(app, sent: list, msgs: list):
    """`sent`: the request's messages; `msgs`: them as routed store messages (gateway.grpc.send)."""
    topic = sent[0].topic.name
    if any(m.topic != topic for m in msgs):
        raise RpcError(Code.UNSUPPORTED, "delay and transactional messages are not supported on diskless "
                                         f"topic[{topic}] yet")
    offsets = {}
    order = sorted(range(len(msgs)), key=lambda i: msgs[i].queue_id)  # stable: a queue's messages keep order
    for qid, group in itertools.groupby(order, key=lambda i: msgs[i].queue_id):
        group = list(group)
        run = b"".join(native_batch(msgs[i], 0) for i in group)
        try:
            base = await app.diskless.writer.append(topic, qid, run, len(group),
                                                    max(msgs[i].born_timestamp for i in group))
        except ObjectStoreError as exc:
            raise RpcError(Code.TOO_MANY_REQUESTS, f"[diskless] object store unavailable: {exc}") from None
        app.arrivals.notify(topic, qid)
        offsets.update({i: base + n for n, i in enumerate(group)})
    entries = [s.SendResultEntry(status=ok(), message_id=m.system_properties.message_id, offset=offsets[i])
               for i, m in enumerate(sent)]
    return s.SendMessageResponse(status=ok(), entries=entries)
