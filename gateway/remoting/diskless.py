"""RocketMQ send and pull on diskless topics (docs/diskless.md): a sent message becomes a one-record
Kafka batch (properties as headers, as `interop.to_kafka` serves native messages to Kafka), written
through the gateway's WAL; a pull reads the index and the WAL objects and expands the batches as for
any Kafka-produced entry (`interop.to_rocketmq`). An unreachable object store answers SYSTEM_BUSY."""
from __future__ import annotations

import trio

import interop.to_rocketmq as to_rocketmq
from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.remoting import FLAG_RESPONSE, RemotingCommand, ResponseCode
from codec.remoting import message as smsg
from gateway.remoting.common import REGION
from interop.to_kafka import native_batch
from semantics.diskless import is_diskless
from store.objstore.api import ObjectStoreError


def is_diskless_send(app, p) -> bool:
    """Whether a prepared send (gateway.remoting.send.PreparedSend) goes to a diskless queue now: a
    delayed or half message waits in the local schedule or half topic first (gateway.diskless_delivery)."""
    return (app.diskless is not None and is_diskless(app.store.topics.get(p.topic))
            and any(m.topic == p.topic for m in p.msgs))


async def send(channel, p) -> RemotingCommand:
    """Write the messages through the WAL; the answer names the first one's queue offset."""
    app, req = channel.app, p.req
    if any(m.topic != p.topic or m.queue_id != p.qid for m in p.msgs):  # a batch partly routed (delay, half)
        return req.response(ResponseCode.MESSAGE_ILLEGAL,
                            remark="a batch of a diskless topic mixes delayed or transactional messages with others")
    run = b"".join(native_batch(m, 0) for m in p.msgs)
    try:
        base = await app.diskless.writer.append(p.topic, p.qid, run, len(p.msgs),
                                                max(m.born_timestamp for m in p.msgs))
    except ObjectStoreError as exc:
        return req.response(ResponseCode.SYSTEM_BUSY, remark=f"[diskless] object store unavailable: {exc}")
    app.arrivals.notify(p.topic, p.qid)
    ids = [smsg.make_msg_id(app.config.advertised, channel.local_port, base + i) for i in range(len(p.msgs))]
    fields = {"msgId": ",".join(ids), "queueId": str(p.qid), "queueOffset": str(base), "MSG_REGION": REGION,
              "TRACE_ON": "true"}
    uniq = p.msgs[0].properties.get("UNIQ_KEY") if len(p.msgs) == 1 else None
    if uniq:
        fields["transactionId"] = uniq
    return RemotingCommand(code=0, ext_fields=fields, opaque=req.opaque, flag=FLAG_RESPONSE)


def _read(index, topic: str, qid: int, offset: int, max_bytes: int) -> tuple[int, int, bytes]:
    """(worker thread) (start, end, batches from `offset`) of a diskless queue after a refresh."""
    end = index.refresh(topic, qid)
    return index.start(topic, qid), end, (index.read(topic, qid, offset, max_bytes) if offset < end else b"")


def batch_message(app, topic: str, qid: int, b) -> smsg.StoredMessage:
    """A diskless queue's record batch `b` as the inner-batch entry `interop.to_rocketmq` expands."""
    return smsg.StoredMessage(topic=topic, queue_id=qid, body=b.data, sys_flag=to_rocketmq.INNER_BATCH_FLAG,
                              queue_offset=b.base_offset, physical_offset=b.base_offset,
                              store_timestamp=b.max_timestamp,
                              store_host=(app.config.advertised, app.config.remoting_port))


def _messages(app, topic: str, qid: int, data: bytes, offset: int, max_n: int, tags) -> tuple[list[bytes], int]:
    """Encoded messages from `offset` on and the next offset to pull: whole batches, until `max_n`
    messages are reached (a Kafka batch is not cut, so a pull may carry a few more)."""
    out: list[bytes] = []
    next_offset = offset
    for b in records.parse_batches(data):
        out += to_rocketmq.expand(batch_message(app, topic, qid, b), b.base_offset, offset, tags)
        next_offset = b.base_offset + b.last_offset_delta + 1
        if len(out) >= max_n:
            break
    return out, max(next_offset, offset)


async def pull(app, req, topic: str, qid: int, offset: int, max_n: int, max_bytes: int, tags,
               suspend_s: float) -> RemotingCommand:
    """PULL_MESSAGE on a diskless queue, waiting up to `suspend_s` for news (local arrivals wake it;
    another gateway's writes are seen at the next look, at most a second later)."""
    deadline = trio.current_time() + suspend_s
    while True:
        try:
            lo, hi, data = await trio.to_thread.run_sync(_read, app.diskless.index, topic, qid, offset, max_bytes)
        except ObjectStoreError as exc:
            return req.response(ResponseCode.SYSTEM_BUSY, remark=f"[diskless] object store unavailable: {exc}")

        def answer(code, next_offset, body=b""):
            return req.response(code, {"suggestWhichBrokerId": 0, "nextBeginOffset": next_offset,
                                       "minOffset": lo, "maxOffset": hi}, body=body)

        if offset > hi:
            return answer(ResponseCode.PULL_OFFSET_MOVED, hi)
        if offset < lo:
            return answer(ResponseCode.PULL_OFFSET_MOVED, lo)
        if data:
            try:
                parts, next_offset = _messages(app, topic, qid, data, offset, max_n, tags)
            except DecodeError as exc:
                return req.response(ResponseCode.SYSTEM_ERROR, remark=f"[diskless] unreadable batch: {exc}")
            if parts:
                return answer(ResponseCode.SUCCESS, next_offset, b"".join(parts))
            if next_offset > offset:
                return answer(ResponseCode.PULL_RETRY_IMMEDIATELY, next_offset)
        remaining = deadline - trio.current_time()
        if remaining <= 0:
            return answer(ResponseCode.PULL_NOT_FOUND, offset)
        await app.arrivals.wait_any([(topic, qid)], min(remaining, 1.0))
