"""Consumer retry and dead letters (CONSUMER_SEND_MSG_BACK, remoting-protocol.md §2.7).

A message a consumer failed to process goes back to `%RETRY%<group>` through the delay queue
(level 3 + reconsumeTimes unless the client names a level; above the last level the last level,
so past 16 retries every retry waits 2 h). Once it has been reconsumed `maxReconsumeTimes` times,
or the client asks with a negative level, it goes to `%DLQ%<group>` (one queue, created on first
use). The copy keeps body, flags, born time/host and properties (so UNIQ_KEY, the client msgId, is
unchanged), sets RETRY_TOPIC (first time only) and ORIGIN_MESSAGE_ID, and increments
reconsumeTimes. `resend_from_dlq` puts a dead letter back on its original topic.
"""
from __future__ import annotations

from semantics.routing import (
    DEFAULT_LEVELS,
    PROPERTY_DELAY,
    PROPERTY_REAL_QID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_SCHEDULE_OFFSET,
    PROPERTY_SCHEDULE_SOURCE,
    PROPERTY_START_DELIVER_TIME,
    DelayLevels,
    ensure_topic,
    schedule,
    to_message,
)
from codec.remoting.message import Message, StoredMessage, tag_hash

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
DEFAULT_MAX_RECONSUME_TIMES = 16
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_UNIQ_KEY = "UNIQ_KEY"
# Routing leftovers of an earlier trip that must not follow the message into a new topic.
_TRANSIENT = (PROPERTY_DELAY, PROPERTY_START_DELIVER_TIME, PROPERTY_REAL_TOPIC, PROPERTY_REAL_QID,
              PROPERTY_SCHEDULE_OFFSET, PROPERTY_SCHEDULE_SOURCE)


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


def _clean(props: dict) -> dict:
    out = dict(props)
    for key in _TRANSIENT:
        out.pop(key, None)
    return out


def build_send_back(original: StoredMessage, group: str, delay_level: int = 0,
                    max_reconsume_times: int | None = DEFAULT_MAX_RECONSUME_TIMES,
                    origin_msg_id: str | None = None, now_ms: int = 0,
                    levels: DelayLevels = DEFAULT_LEVELS) -> Message:
    """The message to append for a send-back: scheduled for `%RETRY%group` or bound for the DLQ."""
    if max_reconsume_times is None or max_reconsume_times < 0:
        max_reconsume_times = DEFAULT_MAX_RECONSUME_TIMES
    props = _clean(original.properties)
    props.setdefault(PROPERTY_RETRY_TOPIC, original.topic)
    if PROPERTY_ORIGIN_MESSAGE_ID not in props:
        props[PROPERTY_ORIGIN_MESSAGE_ID] = (
            origin_msg_id or original.properties.get(PROPERTY_UNIQ_KEY) or original.msg_id)
    times = original.reconsume_times
    if times >= max_reconsume_times or delay_level < 0:
        return to_message(original, topic=dlq_topic(group), queue_id=0, properties=props,
                          reconsume_times=times + 1)
    props[PROPERTY_DELAY] = str(delay_level if delay_level > 0 else 3 + times)
    msg = to_message(original, topic=retry_topic(group), queue_id=0, properties=props,
                     reconsume_times=times + 1)
    return schedule(msg, now_ms, levels)


def consumer_send_back(store, commit_log_offset: int, group: str, delay_level: int = 0,
                       max_reconsume_times: int | None = DEFAULT_MAX_RECONSUME_TIMES,
                       origin_msg_id: str | None = None, now_ms: int = 0,
                       levels: DelayLevels = DEFAULT_LEVELS):
    """CONSUMER_SEND_MSG_BACK: append the retry (or DLQ) copy of the message at
    `commit_log_offset`. Returns the AppendResult (await app.durable(r.end_offset) before the
    SUCCESS reply in sync mode), or None when no message is there (answer SYSTEM_ERROR)."""
    msg = send_back_message(store, commit_log_offset, group, delay_level, max_reconsume_times, origin_msg_id,
                            now_ms, levels)
    return None if msg is None else store.append(msg)


def send_back_message(store, commit_log_offset: int, group: str, delay_level: int = 0,
                      max_reconsume_times: int | None = DEFAULT_MAX_RECONSUME_TIMES,
                      origin_msg_id: str | None = None, now_ms: int = 0, levels: DelayLevels = DEFAULT_LEVELS):
    """The message `consumer_send_back` appends (its topic created), or None when no message is there."""
    original = store.get(commit_log_offset)
    if original is None:
        return None
    msg = build_send_back(original, group, delay_level, max_reconsume_times, origin_msg_id, now_ms, levels)
    ensure_topic(store, msg.topic if msg.topic.startswith(DLQ_PREFIX) else retry_topic(group), 1)
    return msg


def resend_from_dlq(store, commit_log_offset: int, queue_id: int | None = None):
    """Put the dead letter at `commit_log_offset` back on its original topic (RETRY_TOPIC) as a
    fresh message (reconsumeTimes 0, same UNIQ_KEY). Returns the AppendResult, or None when the
    entry is missing or is not a dead letter with a known original topic."""
    msg = dlq_resend_message(store, commit_log_offset, queue_id)
    return None if msg is None else store.append(msg)


def dlq_resend_message(store, commit_log_offset: int, queue_id: int | None = None):
    """The message `resend_from_dlq` appends, or None (see there)."""
    dead = store.get(commit_log_offset)
    if dead is None or not dead.topic.startswith(DLQ_PREFIX):
        return None
    props = _clean(dead.properties)
    topic = props.pop(PROPERTY_RETRY_TOPIC, None)
    if not topic:
        return None
    if queue_id is None:
        cfg = store.topics.get(topic)
        queues = cfg.write_queues if cfg is not None and cfg.write_queues > 0 else 1
        queue_id = abs(tag_hash(props.get(PROPERTY_UNIQ_KEY) or dead.msg_id)) % queues
    return to_message(dead, topic=topic, queue_id=queue_id, properties=props, reconsume_times=0)
