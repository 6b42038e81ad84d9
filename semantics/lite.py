"""Lite topics (RocketMQ RIP-83, 5.5): very many light topics under one parent topic.

A lite topic costs what a key costs, not what a topic costs: it has no ConsumeQueue, no topic config
and no route of its own. A message sent to lite topic L of parent P is stored in P (CommitLog and
P's ConsumeQueue) with the property `__LITE_TOPIC` = L, always in the same queue of P
(crc32(L) mod P's write queues), so the messages of one lite topic keep their send order in one
queue. A lite push consumer of group G subscribes lite topics of P at run time (SyncLiteSubscription);
each subscription (G, L) is consumed through the pop engine as its own consumer group `G#L` over
L's queue of P, keeping only L's messages and delivering them one at a time in order (as a FIFO
message group), so one lite topic's progress never skips another's messages. Kafka clients see P
as an ordinary topic whose records carry the header `__LITE_TOPIC` (docs/mapping.md).
"""
from __future__ import annotations

import dataclasses
import re
import zlib

from codec.remoting.message import tag_hash
from store.key_positions import key_positions

PROPERTY_LITE_TOPIC = "__LITE_TOPIC"
MAX_LITE_TOPIC_SIZE = 64  # the 5.5 proxy's maxLiteTopicSize
MAX_SUBSCRIPTIONS = 100_000  # the 5.5 broker's maxLiteSubscriptionCount: what one client may hold here
GROUP_SEPARATOR = "#"  # never in a legal group name: "G#L" cannot be a client's own group
_LEGAL = re.compile(r"[A-Za-z0-9_-]+")
LMQ_PREFIX = "%LMQ%$"  # RocketMQ 5.5 names lite topic L of parent P "%LMQ%$P$L" (its LMQ queue)
POLICIES = {0: "LAST", 1: "MIN", 2: "MAX"}  # 5.5's OffsetOption POLICY values
MIN_TTL_MS = 900_000  # the 5.5 broker's minLiteTTl: no lite topic expires sooner (--lite-min-ttl-ms)


@dataclasses.dataclass
class LiteClient:
    """A remoting lite consumer (as 5.5's proxy registers one for each lite push consumer with
    LITE_SUBSCRIPTION_CTL): its group, parent topic and lite topics."""
    group: str
    topic: str
    names: set = dataclasses.field(default_factory=set)
    last_access_ms: int = -1  # its last POP_LITE_MESSAGE


def lmq_name(parent: str, name: str) -> str:
    return f"{LMQ_PREFIX}{parent}${name}"


def offset_option(option) -> tuple[str, int] | None:
    """(kind, value) for start_of from a remoting OffsetOption ({"type": "POLICY", "value": 1}, ...)."""
    if not isinstance(option, dict) or not isinstance(option.get("value", 0), int):
        return None
    kind, value = option.get("type"), option.get("value", 0)
    if kind == "POLICY":
        return POLICIES.get(value, "LAST"), 0
    return {"OFFSET": "offset", "TAIL_N": "tail_n", "TIMESTAMP": "timestamp"}.get(kind, "LAST"), value


def name_error(name: str) -> str | None:
    """Why a lite topic name is refused (the 5.5 proxy's words), or None."""
    if not name.strip():
        return "lite topic cannot be the char sequence of whitespace"
    if len(name) > MAX_LITE_TOPIC_SIZE:
        return f"lite topic exceed the max size {MAX_LITE_TOPIC_SIZE}"
    if not _LEGAL.fullmatch(name):
        return "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)"
    return None


def queue_of(name: str, queues: int) -> int:
    """The one queue of the parent that holds a lite topic's messages."""
    return zlib.crc32(name.encode()) % max(queues, 1)


def place(msg, write_queues: int):
    """`msg` in its lite topic's queue of the parent (as it is when it names no lite topic)."""
    name = msg.properties.get(PROPERTY_LITE_TOPIC)
    if name:
        msg.queue_id = queue_of(name, write_queues)
    return msg


def tags_code(name: str) -> int:
    """The ConsumeQueue tags code of a lite topic's messages (codec.remoting.message.tags_code_of)."""
    return tag_hash(name)


def next_offset(store, parent: str, qid: int, name: str, after: int, expire_ms: int | None = None,
                now_ms: int = 0) -> int | None:
    """Where lite topic `name`'s subscription may jump to from `after` in its queue: its next live
    message (the IndexFile key `<parent>#<name>`), or the queue's end when it has none past `after`;
    None (scan as usual) when the index holds too many entries for it to be read whole."""
    found = offsets_of(store, parent, qid, name, expire_ms, now_ms)
    if found is None:
        return None
    mine, end = found
    later = [o for o in mine if o >= after]
    return min(later) if later else end


def start_of(store, parent: str, qid: int, name: str, kind: str, value: int, expire_ms: int | None = None,
             now_ms: int = 0) -> int | None:
    """Where a subscription of lite topic `name` starts by its offset option (RIP-83 OffsetOption), as
    a position in its queue of the parent, as RocketMQ 5.5.0 serves them (measured): MIN its first
    message, MAX the queue's end (new messages only), "offset" n its n-th message; LAST, TAIL_N and
    TIMESTAMP start where the group is (for a new group its first message). None: where the group is
    (also when the index holds too many entries to be read)."""
    if kind not in ("MIN", "MAX", "offset"):
        return None
    found = offsets_of(store, parent, qid, name, expire_ms, now_ms)
    if found is None:
        return None
    mine, end = found
    if kind == "MAX" or not mine:
        return end
    if kind == "MIN":
        return mine[0]
    return mine[min(max(value, 0), len(mine) - 1)] if value < len(mine) else end


def _messages(store, parent: str, qid: int, name: str) -> tuple[list, int] | None:
    """([(offset, store timestamp)] of lite topic `name`'s messages in its queue of the parent, that
    queue's end), or None when the index holds too many entries for it to be read whole."""
    positions = key_positions(store, parent, qid, name)
    if positions is None:
        return None
    hits, end = positions
    return [(o, ts) for o, props, ts in hits if props.get(PROPERTY_LITE_TOPIC) == name], end


def offsets_of(store, parent: str, qid: int, name: str, expire_ms: int | None = None,
               now_ms: int = 0) -> tuple[list[int], int] | None:
    """(the offsets of lite topic `name`'s live messages in its queue of the parent, that queue's
    end), or None when the index holds too many entries for it to be read whole."""
    found = _messages(store, parent, qid, name)
    return None if found is None else (live_offsets(found[0], expire_ms, now_ms), found[1])


EXPIRATION = "lite.topic.expiration"
EXPIRATION_RANGE = (-1, 43200)  # minutes, as RocketMQ 5.5's topic attribute allows


def expiration_problem(attributes: dict) -> str | None:
    """Why `lite.topic.expiration` cannot be set so (RocketMQ 5.5's words: a Java long in -1..43200),
    or None; checked on any topic, as 5.5 checks every topic's attributes."""
    raw = attributes.get(EXPIRATION)
    if raw is None:
        return None
    if re.fullmatch(r"[+-]?[0-9]+", raw) is None:  # what Java's Long.parseLong takes
        return f'For input string: "{raw}"'
    low, high = EXPIRATION_RANGE
    return None if low <= int(raw) <= high else f"value is not in range({low}, {high})"


def expire_after_ms(attributes, min_ttl_ms: int) -> int | None:
    """How long a lite topic of a parent with these attributes lives without a new message: its
    `lite.topic.expiration` (minutes; -1, the default, or 0: forever), at least the broker's
    minLiteTTl, as RocketMQ 5.5 expires them; None: forever."""
    raw = (attributes or {}).get("lite.topic.expiration", "-1")
    minutes = int(raw) if raw.lstrip("-").isdigit() else -1
    return max(minutes * 60_000, min_ttl_ms) if minutes > 0 else None


def live_offsets(messages: list, expire_ms: int | None, now_ms: int) -> list[int]:
    """The offsets of a lite topic's live messages, from its [(offset, store timestamp)] in offset
    order: RocketMQ 5.5 deletes a lite topic (its LMQ, the groups' progress, the subscriptions) once
    it has had no new message for its TTL, and the next message starts it anew. So its live messages
    are those after the last silence longer than the TTL, and none once it is silent that long."""
    if expire_ms is None or not messages:
        return [o for o, _ in messages]
    if now_ms - messages[-1][1] > expire_ms:
        return []
    first = len(messages) - 1
    while first > 0 and messages[first][1] - messages[first - 1][1] <= expire_ms:
        first -= 1
    return [o for o, _ in messages[first:]]


def expired(store, parent: str, qid: int, name: str, expire_ms: int | None, now_ms: int) -> bool:
    """Whether lite topic `name` had messages and has been silent past its TTL."""
    found = _messages(store, parent, qid, name) if expire_ms is not None else None
    return bool(found and found[0]) and not live_offsets(found[0], expire_ms, now_ms)


def count_topics(store, parent: str, queues: int, chunk: int = 65536) -> int:
    """How many lite topics the parent holds messages of: the distinct tags codes of its
    ConsumeQueues (a lite message's code is its lite topic's hash), read without the CommitLog."""
    codes = set()
    for qid in range(queues):
        at, end = store.min_offset(parent, qid), store.max_offset(parent, qid)
        while at < end:
            units = store.units(parent, qid, at, min(chunk, end - at))
            if not units:
                break
            codes.update(code for _, _, code in units)
            at += len(units)
    codes.discard(0)
    return len(codes)


def subscription_group(group: str, name: str) -> str:
    """The pop engine's consumer group of one lite subscription."""
    return f"{group}{GROUP_SEPARATOR}{name}"


def apply(current: set, action: str, names) -> set:
    """The subscription set after one SyncLiteSubscription (PARTIAL_ADD, PARTIAL_REMOVE,
    COMPLETE_ADD: the set becomes `names`, COMPLETE_REMOVE: empty)."""
    names = set(names)
    if action == "PARTIAL_ADD":
        return current | names
    if action == "PARTIAL_REMOVE":
        return current - names
    if action == "COMPLETE_ADD":
        return names
    return set()
