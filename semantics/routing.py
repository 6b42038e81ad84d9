"""Where a message is stored first: `route()` runs on every produce/send (every protocol) before
`store.append`, and sends delayed messages to the schedule topic and transactional half messages
to the half topic, as RocketMQ's CommitLog put path does. Everything else passes through
untouched after three dict lookups (the hot path).

Schedule topic layout (`SCHEDULE_TOPIC_XXXX`, one queue per delay level plus one):
- queue `level - 1` for property DELAY=level (1..N; above N → N, ≤ 0 → not delayed);
- queue `N` (18 with the default levels) for `__STARTDELIVERTIME` = epoch ms (a deliver time not
  ahead → not delayed). It wins over DELAY when both are set.
The ConsumeQueue tagsCode of a scheduled entry is its deliver time (epoch ms); REAL_TOPIC and
REAL_QID keep the destination.

The delay rule (`delay_refusal`, docs/mapping.md "Delay rule"), one for every protocol, as RocketMQ
5.5's broker: a DELAY that is not an integer (Java's parseInt: empty, spaces, decimals, beyond int32)
and a __STARTDELIVERTIME that is not an integer or lies more than `timer_max_delay_ms` ahead
(RocketMQ's timerMaxDelaySec) are refused: `route()` raises DelayRefused and nothing is stored.
"""
from __future__ import annotations

import dataclasses
import re

from codec.remoting.message import TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE, Message, StoredMessage

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"

PROPERTY_DELAY = "DELAY"
PROPERTY_START_DELIVER_TIME = "__STARTDELIVERTIME"
PROPERTY_TRANSACTION = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QID = "REAL_QID"
# a Kafka transaction's half record (semantics.txn_layout): written by the gateway only, never a client's
PROPERTY_KAFKA_TXN_FIRST, PROPERTY_KAFKA_TXN_PRODUCER = "KAFKA_TXN_FIRST", "KAFKA_TXN_PRODUCER"
PROPERTY_SCHEDULE_OFFSET = "SCHEDULE_OFFSET"  # on a delivered copy: "<schedule queue>:<offset>"
PROPERTY_SCHEDULE_SOURCE = "SCHEDULE_SOURCE"  # and, in a cluster, the node id whose schedule topic that is
PROPERTY_REAL_TAGS_CODES = "REAL_TAGS_CODES"  # an inner batch's own tags codes while scheduled

MAX_DELIVER_MS = (1 << 63) - 1
DEFAULT_TIMER_MAX_DELAY_MS = 3 * 86_400_000  # RocketMQ 5's timerMaxDelaySec default, 259200 s
TRANSACTION_MASK = TRANSACTION_ROLLBACK_TYPE  # 0xC: the two transaction-type bits of sysFlag

# Delay levels of RocketMQ's messageDelayLevel default: level i (1-based) waits DEFAULT_DELAYS_MS[i-1].
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class DelayLevels:
    """Parsed `messageDelayLevel`: `delay_ms(level)`; queues 0..N-1 are levels, queue N is timers,
    whose deliver times may lie at most `timer_max_delay_ms` ahead."""

    __slots__ = ("spec", "millis", "max_level", "timer_queue", "queue_count", "timer_max_delay_ms")

    def __init__(self, spec: str = DEFAULT_DELAY_LEVELS, timer_max_delay_ms: int = DEFAULT_TIMER_MAX_DELAY_MS) -> None:
        millis = []
        for item in spec.split():
            unit = _UNITS_MS.get(item[-1:].lower())
            if unit is None or not item[:-1].isdigit():
                raise ValueError(f"bad delay level {item!r} in {spec!r} (use e.g. 10s, 5m, 2h, 1d)")
            millis.append(int(item[:-1]) * unit)
        if not millis:
            raise ValueError("messageDelayLevel needs at least one level")
        self.spec = spec
        self.millis = millis
        self.max_level = len(millis)
        self.timer_queue = len(millis)
        self.queue_count = len(millis) + 1
        self.timer_max_delay_ms = timer_max_delay_ms

    def delay_ms(self, level: int) -> int:
        return self.millis[min(level, self.max_level) - 1]


DEFAULT_LEVELS = DelayLevels()


class DelayRefused(ValueError):
    """A delay property the delay rule refuses. `timer`: the deliver time is wrong (RocketMQ answers
    MESSAGE_ILLEGAL "timer message illegal"), otherwise the level (its SYSTEM_ERROR)."""

    def __init__(self, message: str, timer: bool) -> None:
        super().__init__(message)
        self.timer = timer


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Java's Integer.parseInt / Long.parseLong accept


def _java_int(text: str | None, bits: int) -> int | None:
    """`text` as Java's parseInt (bits=32) / parseLong (64) reads it, None where they throw."""
    if text is None or not _JAVA_INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << (bits - 1)) <= value < 1 << (bits - 1) else None


def delay_refusal(props: dict, now_ms: int, levels: DelayLevels = DEFAULT_LEVELS) -> DelayRefused | None:
    """Why the delay properties of a message are refused, None when they are not (see the module doc)."""
    level = props.get(PROPERTY_DELAY)
    if level is not None and _java_int(level, 32) is None:
        return DelayRefused(f'the {PROPERTY_DELAY} property is not a delay level: For input string: "{level}"',
                            timer=False)
    start = props.get(PROPERTY_START_DELIVER_TIME)
    if start is None:
        return None
    due = _java_int(start, 64)
    if due is None:
        return DelayRefused(f'timer message illegal, {PROPERTY_START_DELIVER_TIME} "{start}" is not a time '
                            f'in epoch milliseconds', timer=True)
    if due - now_ms > levels.timer_max_delay_ms:
        return DelayRefused(f"timer message illegal, the delay time should not be bigger than the max delay "
                            f"{levels.timer_max_delay_ms}ms ({PROPERTY_START_DELIVER_TIME} {due} is "
                            f"{due - now_ms}ms ahead)", timer=True)
    return None


# RocketMQ 5's own timer properties (its 5.x client's setDelayTimeSec / setDelayTimeMs / setDeliverTimeMs),
# in the order its broker reads them, each with its unit (0: an epoch ms deliver time).
ROCKETMQ_TIMER_PROPERTIES = {"TIMER_DELAY_SEC": 1000, "TIMER_DELAY_MS": 1, "TIMER_DELIVER_MS": 0}


def adopt_rocketmq_timer(msg: Message, now_ms: int) -> Message:
    """A remoting message with RocketMQ 5's timer properties given the deliver time they name as
    `__STARTDELIVERTIME`, read as RocketMQ 5.5's broker does (HookUtils.transformTimerMessage): the
    first present counts, a DELAY level above 0 wins over them, DelayRefused when it is not an
    integer. A message that has a __STARTDELIVERTIME keeps it."""
    props = msg.properties
    for name, unit in ROCKETMQ_TIMER_PROPERTIES.items():
        if name in props:
            break
    else:
        return msg
    if PROPERTY_START_DELIVER_TIME in props:
        return msg
    level = _java_int(props.get(PROPERTY_DELAY), 32)
    if level is not None and level > 0:
        return msg
    value = _java_int(props[name], 64)
    if value is None:
        raise DelayRefused(f'timer message illegal, {name} "{props[name]}" is not an integer', timer=True)
    return dataclasses.replace(msg, properties={
        **props, PROPERTY_START_DELIVER_TIME: str(now_ms + value * unit if unit else value)})


def route(msg: Message, now_ms: int, levels: DelayLevels = DEFAULT_LEVELS) -> Message:
    """The message to append instead of `msg`: a half message, a scheduled one, or `msg` itself.
    DelayRefused for delay properties the delay rule refuses."""
    props = msg.properties
    if PROPERTY_DELAY in props or PROPERTY_START_DELIVER_TIME in props:
        refused = delay_refusal(props, now_ms, levels)
        if refused is not None:
            raise refused
    if PROPERTY_TRANSACTION in props and props[PROPERTY_TRANSACTION].lower() == "true":
        if msg.topic in (HALF_TOPIC, OP_TOPIC):
            return msg
        return to_half(msg)
    if PROPERTY_DELAY in props or PROPERTY_START_DELIVER_TIME in props:
        return schedule(msg, now_ms, levels)
    return msg


def to_half(msg: Message) -> Message:
    """A transactional half message: invisible in the half topic until commit (RocketMQ §4.6)."""
    props = dict(msg.properties)
    props.pop(PROPERTY_KAFKA_TXN_FIRST, None)  # a client's: not a Kafka transaction's half record
    props.pop(PROPERTY_KAFKA_TXN_PRODUCER, None)
    props[PROPERTY_REAL_TOPIC] = msg.topic
    props[PROPERTY_REAL_QID] = str(msg.queue_id)
    return dataclasses.replace(
        msg, topic=HALF_TOPIC, queue_id=0, properties=props,
        sys_flag=(msg.sys_flag & ~TRANSACTION_MASK) | TRANSACTION_NOT_TYPE)


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip())
    except (AttributeError, ValueError):
        return None


def deliver_time(msg: Message, now_ms: int, levels: DelayLevels = DEFAULT_LEVELS) -> tuple[int, int] | None:
    """(schedule queue, deliver time ms) of a delayed message, None when it is not delayed."""
    props = msg.properties
    start = props.get(PROPERTY_START_DELIVER_TIME)
    if start is not None:
        due = _int(start)
        if due is not None:
            due = min(due, MAX_DELIVER_MS)  # it must fit the ConsumeQueue's int64 tagsCode slot
        if due is not None and due > now_ms:
            return levels.timer_queue, due
        if due is not None:
            return None
    level = _int(props.get(PROPERTY_DELAY))
    if level is None or level <= 0:
        return None
    level = min(level, levels.max_level)
    return level - 1, now_ms + levels.delay_ms(level)


def schedule(msg: Message, now_ms: int, levels: DelayLevels = DEFAULT_LEVELS) -> Message:
    """Send a delayed message to its schedule queue (deliver time in the tagsCode slot)."""
    target = deliver_time(msg, now_ms, levels)
    if target is None or msg.topic == SCHEDULE_TOPIC:
        return msg
    return _to_schedule(msg, *target)


def schedule_due_now(msg: Message, now_ms: int, levels: DelayLevels = DEFAULT_LEVELS) -> Message:
    """`msg` through the timer queue, due at once: the delay scheduler then delivers it to its
    queue's leader, which may be another gateway (semantics.delay's router)."""
    props = {k: v for k, v in msg.properties.items() if k != PROPERTY_DELAY}
    props[PROPERTY_START_DELIVER_TIME] = str(now_ms)
    return _to_schedule(dataclasses.replace(msg, properties=props), levels.timer_queue, now_ms)


def _to_schedule(msg: Message, qid: int, due: int) -> Message:
    props = dict(msg.properties)
    props[PROPERTY_REAL_TOPIC] = msg.topic
    props[PROPERTY_REAL_QID] = str(msg.queue_id)
    if msg.tags_codes:
        props[PROPERTY_REAL_TAGS_CODES] = ",".join(map(str, msg.tags_codes))
    return dataclasses.replace(
        msg, topic=SCHEDULE_TOPIC, queue_id=qid, properties=props, tags_codes=[due] * msg.batch_count)


def unschedule(entry: StoredMessage, q: int) -> Message | None:
    """The message to deliver for an entry of schedule queue `q` (None if it has no REAL_TOPIC): the
    reverse of `schedule`, marked SCHEDULE_OFFSET=<q>:<offset> (semantics.delay's crash recovery)."""
    props = dict(entry.properties)
    topic = props.get(PROPERTY_REAL_TOPIC)
    if not topic:
        return None
    try:
        qid = int(props.get(PROPERTY_REAL_QID, "0"))
    except ValueError:
        qid = 0
    props.pop(PROPERTY_DELAY, None)
    props.pop(PROPERTY_START_DELIVER_TIME, None)
    props[PROPERTY_SCHEDULE_OFFSET] = f"{q}:{entry.queue_offset}"
    codes = None  # the deliver times give way to the tags codes (from TAGS, or the batch's own)
    saved = props.pop(PROPERTY_REAL_TAGS_CODES, None)
    if saved:
        try:
            codes = [int(c) for c in saved.split(",")]
        except ValueError:
            codes = None
        if codes is not None and len(codes) != entry.batch_count:
            codes = None
    return to_message(entry, topic=topic, queue_id=qid, properties=props, tags_codes=codes)


def to_message(stored: StoredMessage, **changes) -> Message:
    """A new Message carrying a stored one's content (for a second write: delivery, retry, commit)."""
    fields = dict(
        topic=stored.topic, queue_id=stored.queue_id, body=stored.body,
        properties=dict(stored.properties), flag=stored.flag, sys_flag=stored.sys_flag,
        born_timestamp=stored.born_timestamp, born_host=stored.born_host,
        reconsume_times=stored.reconsume_times,
        prepared_transaction_offset=stored.prepared_transaction_offset,
        batch_count=stored.batch_count, tags_codes=stored.tags_codes, keys=stored.keys)
    fields.update(changes)
    return Message(**fields)


def ensure_topic(store, name: str, queues: int) -> None:
    """Create a system topic (or grow its queue count) so appends and Kafka/RocketMQ reads see it."""
    cfg = store.topics.get(name)
    if cfg is None:
        store.topics.create(name, read_queues=queues, write_queues=queues)
    elif cfg.read_queues < queues or cfg.write_queues < queues:
        cfg.read_queues = max(cfg.read_queues, queues)
        cfg.write_queues = max(cfg.write_queues, queues)
        store.topics.update(cfg)


def ensure_system_topics(store, levels: DelayLevels = DEFAULT_LEVELS) -> None:
    ensure_topic(store, SCHEDULE_TOPIC, levels.queue_count)
    ensure_topic(store, HALF_TOPIC, 1)
    ensure_topic(store, OP_TOPIC, 1)

