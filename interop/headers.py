"""Kafka record headers ⇄ RocketMQ message properties.

A record's headers are its message's properties (UTF-8 values), its key the `KEYS` property when
the record has no `KEYS` header; the other way, properties become headers and `KEYS` the key. The
reserved inner-batch properties (`INNER_NUM`, `TAGS_CODES`, `INNER_KEYS`) never become headers.
"""
from __future__ import annotations

from codec.remoting.message import PROP_INNER_KEYS, PROP_INNER_NUM, PROP_TAGS_CODES, tag_hash

TAGS = "TAGS"
KEYS = "KEYS"
# RocketMQ's delay properties (MessageConst DELAY, __STARTDELIVERTIME; semantics.routing acts on them):
# records carrying them are stored routed to the schedule topic.
DELAY = "DELAY"
START_DELIVER_TIME = "__STARTDELIVERTIME"
ROUTING_HEADERS = (DELAY, START_DELIVER_TIME)
RESERVED_PROPS = frozenset((PROP_INNER_NUM, PROP_TAGS_CODES, PROP_INNER_KEYS))


def tag_code(headers) -> int | None:
    """The tag hashcode of a record: its first non-empty TAGS header (None without one)."""
    for hk, hv in headers:
        if hk == TAGS and hv:
            return tag_hash(hv.decode("utf-8", "replace"))
    return None


def record_properties(record) -> dict[str, str]:
    """The properties of the message a record becomes: its headers, its key as KEYS."""
    props = {}
    for name, value in record.headers:
        if value is not None:
            props[name] = value.decode("utf-8", "replace")
    if record.key is not None and KEYS not in props:
        try:
            props[KEYS] = record.key.decode()
        except UnicodeDecodeError:
            pass
    return props


def message_headers(properties: dict) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """(record key, record headers) of a message: every property but the reserved ones, KEYS the key."""
    props = {k: v for k, v in properties.items() if k not in RESERVED_PROPS}
    keys = props.get(KEYS)
    return (keys.encode("utf-8") if keys else None), [(k, v.encode("utf-8")) for k, v in props.items()]
