"""Query processor: messages by key (QUERY_MESSAGE, the IndexFile) and by CommitLog offset
(VIEW_MESSAGE_BY_ID, the offset a msgId names). A Kafka batch entry answers with its records."""
from __future__ import annotations

import interop.to_rocketmq as inner_batch
from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting.tags import parse_tags
from gateway.remoting.common import handles
from gateway.remoting.headers import optional_int, optional_long, required_long, required_str
from gateway.remoting.pull import MAX_BODY_BYTES
from gateway.remoting.tier_wait import after_tier_reads


@handles(RC.QUERY_MESSAGE)
@after_tier_reads
def query_message(channel, req):
    s = channel.app.store
    topic, key = required_str(req, "topic"), required_str(req, "key")
    max_num = min(optional_int(req, "maxNum", 32), 64)
    end = min(optional_long(req, "endTimestamp", 2**63 - 1), 2**62)
    found = s.query_by_key(topic, key, max_num, optional_long(req, "beginTimestamp", 0), end)
    if not found:
        return req.response(ResponseCode.QUERY_NOT_FOUND, remark="can not find message, maybe time range not correct")
    parts, size = [], 0
    for m in found:
        if size > MAX_BODY_BYTES - m.size:
            break
        size += m.size
        if m.sys_flag & inner_batch.INNER_BATCH_FLAG:
            parts.extend(inner_batch.expand_matching_key(m, key))
        else:
            parts.append(m.raw)
    return req.response(ext_fields={"indexLastUpdateTimestamp": max(m.store_timestamp for m in found),
                                    "indexLastUpdatePhyoffset": max(m.physical_offset for m in found)},
                        body=b"".join(parts))


@handles(RC.VIEW_MESSAGE_BY_ID)
@after_tier_reads
def view_message(channel, req):
    offset = required_long(req, "offset")
    m = channel.app.store.get(offset) if offset >= 0 else None
    if m is None:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"can not find message by the offset, {offset}")
    if m.sys_flag & inner_batch.INNER_BATCH_FLAG:  # a Kafka batch: its records, the first one first
        return req.response(body=b"".join(inner_batch.expand(m, m.queue_offset, 0, parse_tags(None))))
    return req.response(body=m.raw)
