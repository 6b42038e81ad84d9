"""Priority messages (RocketMQ RIP-80, 5.4+), as RocketMQ 5.5's broker serves them.

A message carries its priority in the system property `_SYS_MSG_PRIORITY_` (an integer >= 0; the
5.x SDK's `setPriority`, gRPC `SystemProperties.priority`). The priority picks the queue: a
priority message (one that is not transactional, delayed or FIFO) is stored in queue
`min(priority, writeQueueNums - 1)`; any other message loses the property. A topic whose
`message.type` attribute is PRIORITY is popped from its highest queue down (the broker's default
`priorityOrderAsc`, and `priority.factor` 100 of a consumer group), so that a POP or gRPC
consumer gets the higher priorities first; other topics start at a random queue, as ever.
"""
from __future__ import annotations

import dataclasses
import random

from codec.remoting.message import Message

PROPERTY_PRIORITY = "_SYS_MSG_PRIORITY_"
PRIORITY_TYPE = "PRIORITY"
# The properties that make a message transactional, delayed or FIFO (TopicMessageType's order).
_OTHER_TYPES = ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "__STARTDELIVERTIME",
                "__SHARDINGKEY")


def priority_of(props: dict) -> int:
    """The message's priority, -1 for none (as the broker's NumberUtils.toInt(.., -1))."""
    text = props.get(PROPERTY_PRIORITY)
    if text is None:
        return -1
    text = text.strip()
    if not text.lstrip("-").isdigit() or len(text) > 11:
        return -1
    value = int(text)
    return value if -(1 << 31) <= value < (1 << 31) else -1


def is_priority_message(props: dict) -> bool:
    """RocketMQ's TopicMessageType.parseFromMessageProperty == PRIORITY."""
    if props.get("TRAN_MSG", "").lower() == "true" or any(k in props for k in _OTHER_TYPES):
        return False
    return PROPERTY_PRIORITY in props


def place(msg: Message, write_queues: int) -> Message:
    """The message to store for `msg`: a priority message moved to its priority's queue, another
    one with the property dropped; a message without a priority (or with a negative one) as it is."""
    value = priority_of(msg.properties)
    if value < 0:
        return msg
    if is_priority_message(msg.properties):
        qid = min(value, max(write_queues, 1) - 1)
        return msg if qid == msg.queue_id else dataclasses.replace(msg, queue_id=qid)
    props = dict(msg.properties)
    del props[PROPERTY_PRIORITY]
    return dataclasses.replace(msg, properties=props)


def pop_order(cfg, n: int) -> list[int]:
    """The order a POP of every queue reads a topic's `n` queues in: highest first for a PRIORITY
    topic, else from a random queue on (so that consumers spread over the queues)."""
    if cfg is not None and cfg.attributes.get("message.type", "") == PRIORITY_TYPE:
        return list(range(n - 1, -1, -1))
    first = random.randrange(n) if n else 0
    return [(first + i) % n for i in range(n)]
