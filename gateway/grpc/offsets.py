"""The PullConsumer's RPCs: PullMessage (server streaming, long polling), UpdateOffset, GetOffset,
QueryOffset, over the store's queues and the one offset table (the same rows remoting and Kafka
consumer groups use). In a cluster the request's queue is the route's (broker, broker-local id),
translated to the cluster's queue (gateway.grpc.route.pulled_queue); pulled messages carry the
broker-local id back."""
from __future__ import annotations

import trio

import interop.to_rocketmq as inner_batch
from interop.txn_visibility import VISIBLE
from codec.remoting.message import INNER_BATCH_FLAG
from gateway import tier_reads
from gateway.grpc.common import Code, RpcError, d, ok, rpc, s, status
from gateway.grpc.messages import to_pb
from gateway.grpc.receive import DEADLINE_MARGIN, MAX_BATCH, MAX_POLL_S, _filter, _group, _millis
from gateway.grpc.route import pulled_queue, topic_config


def _queue(app, mq) -> tuple[str, int]:
    """(topic, cluster queue id) of the request's queue."""
    cfg = topic_config(app, mq.topic.name, create=False)
    qid = pulled_queue(app, mq.topic.name, mq)
    if not 0 <= qid < cfg.read_queues:
        raise RpcError(Code.BAD_REQUEST, f"queue {mq.id} is not a queue of {mq.topic.name}")
    return mq.topic.name, qid


def _pull(app, topic, qid, offset, max_n, subscription, local_id):
    """(messages, next offset) from `offset` on, filtered (a Kafka record batch record by record)."""
    lo, hi = app.store.min_offset(topic, qid), app.store.max_offset(topic, qid)
    if offset < lo or offset > hi:
        raise RpcError(Code.ILLEGAL_OFFSET, f"offset {offset} is outside [{lo}, {hi}] of {topic}:{qid}")
    tag_filter = None if getattr(subscription, "match_all", True) else subscription.matches_code
    read = app.store.read(topic, qid, offset, max_count=max_n, tag_filter=tag_filter,
                          end=VISIBLE.stable_end(topic, qid, hi, lo))  # not past an open Kafka transaction
    out = []
    for first, m in read.entries:
        if m.sys_flag & INNER_BATCH_FLAG:
            for i, record in enumerate(inner_batch.records_as_messages(m)):
                if record is not None and first + i >= offset and subscription.matches_properties(record.properties):
                    out.append(to_pb(m, body=record.body, properties=record.properties, queue_offset=first + i,
                                     queue_id=local_id))
        elif subscription.matches_properties(m.properties):
            out.append(to_pb(m, queue_offset=first, queue_id=local_id))
    if len(out) > max_n:  # a record batch went past the limit: the next pull starts after the last one kept
        return out[:max_n], out[max_n - 1].system_properties.queue_offset + 1
    return out, read.next_offset


@rpc("PullMessage", "server_stream")
async def pull_message(ctx, req, send):
    app = ctx.app
    _group(req)
    topic, qid = _queue(app, req.message_queue)
    subscription = _filter(req.filter_expression)
    max_n = min(max(req.batch_size, 1), MAX_BATCH)
    messages, next_offset = await tier_reads.read(_pull, app, topic, qid, req.offset, max_n, subscription,
                                                  req.message_queue.id)
    poll_s = min(_millis(req.long_polling_timeout) / 1000, MAX_POLL_S)
    if not messages and poll_s > 0:
        deadline = min(trio.current_time() + poll_s, ctx.call.deadline - DEADLINE_MARGIN)
        while not messages and (remaining := deadline - trio.current_time()) > 0:
            await app.arrivals.wait_any([(topic, qid)], remaining)
            messages, next_offset = await tier_reads.read(_pull, app, topic, qid, next_offset, max_n, subscription,
                                                          req.message_queue.id)
    if messages:
        await send(s.PullMessageResponse(status=ok()))
        for message in messages:
            await send(s.PullMessageResponse(message=message))
    else:
        await send(s.PullMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message")))
    await send(s.PullMessageResponse(next_offset=next_offset))


@rpc("UpdateOffset")
async def update_offset(ctx, req):
    group = _group(req)  # the group first, as the proxy checks it: before the queue's broker (a cluster)
    topic, qid = _queue(ctx.app, req.message_queue)
    if req.offset < 0:
        raise RpcError(Code.ILLEGAL_OFFSET, f"offset {req.offset} is negative")
    ctx.app.offsets.commit(group, topic, qid, req.offset)
    if ctx.app.sync_flush:
        await ctx.app.offsets.wait_durable()
    if not await ctx.app.offsets.wait_mirrored([(group, topic, qid)]):  # a cluster: etcd lacks it (undone)
        raise RpcError(Code.INTERNAL_SERVER_ERROR, "offset not written to the cluster (etcd)")
    return s.UpdateOffsetResponse(status=ok())


@rpc("GetOffset")
async def get_offset(ctx, req):
    group = _group(req)
    topic, qid = _queue(ctx.app, req.message_queue)
    offset = ctx.app.offsets.fetch(group, topic, qid)
    if offset is None:
        raise RpcError(Code.OFFSET_NOT_FOUND, f"group {req.group.name} has no offset for {topic}:{qid}")
    return s.GetOffsetResponse(status=ok(), offset=offset)


@rpc("QueryOffset")
async def query_offset(ctx, req):
    app = ctx.app
    topic, qid = _queue(app, req.message_queue)
    policy = req.query_offset_policy
    if policy == d.QueryOffsetPolicy.BEGINNING:
        offset = app.store.min_offset(topic, qid)
    elif policy == d.QueryOffsetPolicy.END:
        offset = app.store.max_offset(topic, qid)
    else:
        ms = req.timestamp.seconds * 1000 + req.timestamp.nanos // 1_000_000
        offset = await tier_reads.read(app.store.offset_for_timestamp, topic, qid, ms)
    return s.QueryOffsetResponse(status=ok(), offset=offset)
