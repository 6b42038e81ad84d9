"""SyncLiteSubscription (RocketMQ 5.5, RIP-83): a lite push consumer adds and removes the lite topics
it consumes at run time. The set is kept per client (its x-mq-client-id session) and read by each of
its ReceiveMessage calls (gateway.grpc.receive); semantics.lite says how a lite topic is stored and
consumed. Refusals: an illegal lite topic name (ILLEGAL_LITE_TOPIC, the 5.5 proxy's words).
Past 100 000 lite topics for one client (the 5.5 broker's maxLiteSubscriptionCount; 5.5 took 2001 in one
request although it tells clients a quota of 2000) LITE_SUBSCRIPTION_QUOTA_EXCEEDED, the set left as it was."""
from __future__ import annotations

from gateway.grpc.common import Code, RpcError, d, ok, rpc, s
from gateway.grpc.route import topic_config
from gateway.lite_pop import ttl
from semantics import lite


def _offset_option(req) -> tuple[str, int] | None:
    """(kind, value) of the request's OffsetOption (kind: a policy's name, "offset", "tail_n",
    "timestamp"), or None."""
    if not req.HasField("offset_option"):
        return None
    kind = req.offset_option.WhichOneof("offset_type")
    if kind is None:
        return None
    if kind == "policy":
        policy = req.offset_option.policy
        return (d.OffsetOption.Policy.Name(policy) if policy in d.OffsetOption.Policy.values() else "LAST"), 0
    return kind, getattr(req.offset_option, kind)


@rpc("SyncLiteSubscription")
async def sync_lite_subscription(ctx, req):
    app = ctx.app
    topic_config(app, req.topic.name, create=False)
    if not req.group.name:
        raise RpcError(Code.ILLEGAL_CONSUMER_GROUP, "consumer group is empty")
    for name in req.lite_topic_set:
        refused = lite.name_error(name)
        if refused:
            raise RpcError(Code.ILLEGAL_LITE_TOPIC, refused)
    session = app.grpc.session(ctx.client_id)
    action = d.LiteSubscriptionAction.Name(req.action) if req.action in d.LiteSubscriptionAction.values() else ""
    if not action:
        raise RpcError(Code.BAD_REQUEST, f"unknown LiteSubscriptionAction: {req.action}")
    wanted = lite.apply(session.lite_topics, action, req.lite_topic_set)
    if len(wanted) > lite.MAX_SUBSCRIPTIONS:
        raise RpcError(Code.LITE_SUBSCRIPTION_QUOTA_EXCEEDED, f"lite subscription quota exceeded: {lite.MAX_SUBSCRIPTIONS}")
    added, session.lite_topics = wanted - session.lite_topics, wanted
    queues = topic_config(app, req.topic.name, create=False).write_queues
    option = _offset_option(req)
    for name in added:  # a long-polling receive of this client picks the new subscription up
        qid = lite.queue_of(name, queues)
        start = lite.start_of(app.store, req.topic.name, qid, name, *option, **ttl(app, req.topic.name)) \
            if option else None
        if start is not None:  # a late subscription's offset option
            app.pop.reset(lite.subscription_group(req.group.name, name), req.topic.name, qid, start)
        app.arrivals.notify(req.topic.name, qid)
    session.group = session.group or req.group.name
    return s.SyncLiteSubscriptionResponse(status=ok())
