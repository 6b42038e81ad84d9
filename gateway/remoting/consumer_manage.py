"""Consumer offset processor: committed offsets (QUERY/UPDATE_CONSUMER_OFFSET) and the queue
lookups a consumer makes to place itself (GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP,
GET_EARLIEST_MSG_STORETIME)."""
from __future__ import annotations

from codec.remoting import RequestCode as RC, ResponseCode
from gateway.remoting.common import handles, legal_group, offsets_committed
from gateway.remoting.headers import optional_str, queue_id, required_long, required_str
from gateway.remoting.tier_wait import after_tier_reads


@handles(RC.QUERY_CONSUMER_OFFSET)
def query_consumer_offset(channel, req):
    app = channel.app
    group, topic, qid = required_str(req, "consumerGroup"), required_str(req, "topic"), queue_id(req)
    offset = app.offsets.fetch(group, topic, qid)
    if offset is None:
        # Like a real broker on a young store: with nothing committed and message 0 still present,
        # a new group starts at 0 (unless a 5.x client asks for a plain "not found").
        if optional_str(req, "setZeroIfNotFound") != "false" and app.store.min_offset(topic, qid) <= 0:
            offset = 0
        else:
            return req.response(ResponseCode.QUERY_NOT_FOUND, remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
    return req.response(ext_fields={"offset": offset})


@handles(RC.UPDATE_CONSUMER_OFFSET)
def update_consumer_offset(channel, req):
    group = required_str(req, "consumerGroup")
    if not legal_group(group):  # a group RocketMQ could not have created does not exist (nothing stored)
        return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark=f"Group {group} not exist!")
    topic, qid = required_str(req, "topic"), queue_id(req)
    channel.app.offsets.commit(group, topic, qid, required_long(req, "commitOffset"))
    return offsets_committed(channel, req, req.response(), [(group, topic, qid)])


@handles(RC.GET_MAX_OFFSET)
def get_max_offset(channel, req):
    return req.response(ext_fields={"offset": channel.app.store.max_offset(required_str(req, "topic"),
                                                                         queue_id(req))})


@handles(RC.GET_MIN_OFFSET)
def get_min_offset(channel, req):
    return req.response(ext_fields={"offset": channel.app.store.min_offset(required_str(req, "topic"),
                                                                         queue_id(req))})


@handles(RC.SEARCH_OFFSET_BY_TIMESTAMP)
@after_tier_reads
def search_offset(channel, req):
    topic, qid, timestamp = required_str(req, "topic"), queue_id(req), required_long(req, "timestamp")
    return req.response(ext_fields={"offset": channel.app.store.offset_for_timestamp(topic, qid, timestamp)})


@handles(RC.GET_EARLIEST_MSG_STORETIME)
@after_tier_reads
def earliest_store_time(channel, req):
    s = channel.app.store
    topic, qid = required_str(req, "topic"), queue_id(req)
    units = s.units(topic, qid, s.min_offset(topic, qid), 1)
    m = s.get(units[0][0]) if units else None
    if m is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark="no message in this queue")
    return req.response(ext_fields={"timestamp": m.store_timestamp})
