"""Kafka topic configs: the names Kafka 4.x knows, their types, defaults and validation.

Kafka refuses a topic config it does not know or a value its ConfigDef rejects (INVALID_CONFIG with
"Unknown topic config name: x" / "Invalid value v for configuration x: why"); this module gives the
same answers, plus one of ours: `max.message.bytes` above what the store holds. Which of these
configs the gateway enforces and which it only records is in docs/mapping.md.
"""
from __future__ import annotations

import dataclasses
import functools
import re

# ConfigEntry types and sources as DescribeConfigs numbers them (Kafka's ConfigType / ConfigSource).
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", LONG: "LONG", DOUBLE: "DOUBLE", LIST: "LIST"}
LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_DOUBLE = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?(NaN|Infinity)$")  # Java's forms
_THROTTLED = re.compile(r"^\*$|^[0-9]+:[0-9]+(,[0-9]+:[0-9]+)*$")


@dataclasses.dataclass(frozen=True)
class ConfigDef:
    type: int
    default: str
    low: float | None = None  # inclusive bounds of a number
    high: float | None = None
    choices: tuple = ()  # the allowed strings (for a LIST: of each element)
    synonym: str | None = None  # the broker config this topic config defaults from


D = ConfigDef
SR_CLASS_PREFIX = "io.confluent.kafka.serializers.subject."
SR_STRATEGIES = tuple(prefix + s for prefix in (SR_CLASS_PREFIX, "")
                      for s in ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"))
SR_DEFAULT_STRATEGY = SR_CLASS_PREFIX + "TopicNameStrategy"
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    "cleanup.policy": D(LIST, "delete", choices=("compact", "delete"), synonym="log.cleanup.policy"),
    # Confluent Server's schema validation (semantics.schema_validation): true/false, or our "full"
    "confluent.key.schema.validation": D(BOOLEAN, "false", choices=("full",)),
    "confluent.key.subject.name.strategy": D(STRING, SR_DEFAULT_STRATEGY, choices=SR_STRATEGIES),
    "confluent.value.schema.validation": D(BOOLEAN, "false", choices=("full",)),
    "confluent.value.subject.name.strategy": D(STRING, SR_DEFAULT_STRATEGY, choices=SR_STRATEGIES),
    "compression.type": D(STRING, "producer", choices=("uncompressed", "zstd", "lz4", "snappy", "gzip",
                                                       "producer")),
    "compression.gzip.level": D(INT, "-1", 1, 9),  # or -1 (checked in _problem)
    "compression.lz4.level": D(INT, "9", 1, 17),
    "compression.zstd.level": D(INT, "3", -131072, 22),
    "delete.retention.ms": D(LONG, "86400000", 0, synonym="log.cleaner.delete.retention.ms"),
    "file.delete.delay.ms": D(LONG, "60000", 0, synonym="log.segment.delete.delay.ms"),
    "flush.messages": D(LONG, str(LONG_MAX), 1, synonym="log.flush.interval.messages"),
    "flush.ms": D(LONG, str(LONG_MAX), 0),
    "follower.replication.throttled.replicas": D(LIST, ""),
    "index.interval.bytes": D(INT, "4096", 0, synonym="log.index.interval.bytes"),
    "leader.replication.throttled.replicas": D(LIST, ""),
    "local.retention.bytes": D(LONG, "-2", -2, synonym="log.local.retention.bytes"),
    "local.retention.ms": D(LONG, "-2", -2, synonym="log.local.retention.ms"),
    "max.compaction.lag.ms": D(LONG, str(LONG_MAX), 1, synonym="log.cleaner.max.compaction.lag.ms"),
    "max.message.bytes": D(INT, "1048588", 0, synonym="message.max.bytes"),
    "message.timestamp.after.max.ms": D(LONG, "3600000", 0, synonym="log.message.timestamp.after.max.ms"),
    "message.timestamp.before.max.ms": D(LONG, str(LONG_MAX), 0, synonym="log.message.timestamp.before.max.ms"),
    "message.timestamp.type": D(STRING, "CreateTime", choices=("CreateTime", "LogAppendTime"),
                                synonym="log.message.timestamp.type"),
    "min.cleanable.dirty.ratio": D(DOUBLE, "0.5", 0, 1, synonym="log.cleaner.min.cleanable.ratio"),
    "min.compaction.lag.ms": D(LONG, "0", 0, synonym="log.cleaner.min.compaction.lag.ms"),
    "min.insync.replicas": D(INT, "1", 1, synonym="min.insync.replicas"),
    "preallocate": D(BOOLEAN, "false", synonym="log.preallocate"),
    "remote.log.copy.disable": D(BOOLEAN, "false"),
    "remote.log.delete.on.disable": D(BOOLEAN, "false"),
    "remote.storage.enable": D(BOOLEAN, "false"),
    "retention.bytes": D(LONG, "-1", synonym="log.retention.bytes"),
    "retention.ms": D(LONG, str(72 * 3600 * 1000), -1, synonym="log.retention.ms"),
    "segment.bytes": D(INT, str(1 << 30), 1 << 20, synonym="log.segment.bytes"),
    "segment.index.bytes": D(INT, "10485760", 4, synonym="log.index.size.max.bytes"),
    "segment.jitter.ms": D(LONG, "0", 0),
    "segment.ms": D(LONG, "604800000", 1),
    "unclean.leader.election.enable": D(BOOLEAN, "false", synonym="unclean.leader.election.enable"),
}
del D


@dataclasses.dataclass(frozen=True)
class Entry:
    """One config as DescribeConfigs reports it."""
    name: str
    value: str
    source: int
    type: int
    read_only: bool = False
    synonyms: tuple = ()  # ((name, value, source), ...), the effective one first


def problem(name: str, value: str | None, store_max_bytes: int) -> str | None:
    """Kafka's INVALID_CONFIG message for setting a topic config, or None when it is acceptable."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    text = value.strip()
    if d.type == LIST and d.choices and any(not item for item in list_items(text)):
        return f"Configuration '{name}' values must not be empty."
    why = _problem(name, d, text)
    if why is None and name == "max.message.bytes" and int(text) > store_max_bytes:
        why = f"Value must be no more than {store_max_bytes} (the largest entry the store holds)"
    if why is None and name == "remote.storage.enable" and text.lower() == "true":
        return "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with " \
               "remote log storage."
    shown = f"[{', '.join(list_items(value))}]" if name.endswith(".throttled.replicas") else value
    return None if why is None else f"Invalid value {shown} for configuration {name}: {why}"


def _problem(name: str, d: ConfigDef, text: str) -> str | None:
    if d.type in (INT, LONG):
        top = INT_MAX if d.type == INT else LONG_MAX
        significant = text.lstrip("+-").lstrip("0")  # more than 19 digits: out of range (int() refuses huge ones)
        if not _INTEGER.match(text) or len(significant) > 19 or not -top - 1 <= int(text) <= top:
            return f"Not a number of type {TYPE_NAMES[d.type]}"
        number = int(text)
        if name == "compression.gzip.level":
            return None if number == -1 or 1 <= number <= 9 else "Value must be between 1 and 9 or equal to -1"
        return _bounds(d, number)
    if d.type == DOUBLE:
        if not _DOUBLE.match(text):
            return "Not a number of type DOUBLE"
        return _bounds(d, float(text))
    if d.type == BOOLEAN:
        if d.choices:  # a boolean with more values (schema validation's "full")
            allowed = ("true", "false", *d.choices)
            return None if text.lower() in allowed else f"Expected value to be one of {', '.join(allowed)}"
        return None if text.lower() in ("true", "false") else "Expected value to be either true or false"
    if d.type == STRING:
        return None if text in d.choices else f"String must be one of: {', '.join(d.choices)}"
    if name.endswith(".throttled.replicas"):
        return None if not text or _THROTTLED.match(text.replace(" ", "")) else \
            f"{name} must be the literal '*' or a list of replicas in the following format: " \
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    bad = [item for item in list_items(text) if item not in d.choices]
    return f"String must be one of: {', '.join(d.choices)}" if bad else None


def _bounds(d: ConfigDef, number: float) -> str | None:
    if d.low is not None and number < d.low:
        return f"Value must be at least {_show(d.low)}"
    if d.high is not None and number > d.high:
        return f"Value must be no more than {_show(d.high)}"
    return None


def _show(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def list_items(text: str) -> list[str]:
    """The elements of a LIST config value ("compact, delete" -> ["compact", "delete"])."""
    return [item.strip() for item in text.split(",")] if text.strip() else []


def defaults(max_message_bytes: int, segment_bytes: int) -> dict[str, tuple[str, int]]:
    """name -> (default value, source): Kafka's defaults, except what this gateway's own settings fix
    (`--max-message-bytes`, the CommitLog file size) or its store does (72 h retention)."""
    out = {name: (d.default, SOURCE_DEFAULT) for name, d in TOPIC_CONFIGS.items()}
    out["max.message.bytes"] = (str(max_message_bytes), SOURCE_STATIC_BROKER)
    out["segment.bytes"] = (str(segment_bytes), SOURCE_STATIC_BROKER)
    return out


@functools.lru_cache(maxsize=8)
def _default_entries(max_message_bytes: int, segment_bytes: int) -> tuple[Entry, ...]:
    """The entries of a topic that sets no config, sorted by name; cached, as every topic created
    without configs lists the same ones (Entry is frozen, so they are shared safely)."""
    out = []
    for name, (default, source) in sorted(defaults(max_message_bytes, segment_bytes).items()):
        d = TOPIC_CONFIGS[name]
        synonyms = ((d.synonym, default, source),) if d.synonym is not None else ()
        out.append(Entry(name, default, source, d.type, synonyms=synonyms))
    return tuple(out)


def describe(attributes: dict, max_message_bytes: int, segment_bytes: int,
             extra_read_only: tuple = ()) -> list[Entry]:
    """Every Kafka topic config of a topic with these attributes (set ones first in their synonyms),
    plus the attributes named in `extra_read_only` (our own topic configs, fixed at creation)."""
    out = list(_default_entries(max_message_bytes, segment_bytes))
    if attributes:
        for i, e in enumerate(out):
            if e.name in attributes:
                value = str(attributes[e.name])
                own = (e.name, value, SOURCE_TOPIC)
                out[i] = Entry(e.name, value, SOURCE_TOPIC, e.type, synonyms=(own, *e.synonyms))
    for name in extra_read_only:
        if name in attributes:
            value = str(attributes[name])
            out.append(Entry(name, value, SOURCE_TOPIC, STRING, True, ((name, value, SOURCE_TOPIC),)))
    return out


def incremental(current: dict, ops: list[tuple[str, int, str | None]]) -> tuple[dict, str | None]:
    """Apply IncrementalAlterConfigs operations (SET 0, DELETE 1, APPEND 2, SUBTRACT 3) to a copy of
    `current` (topic attributes); (new attributes, None) or (current, the INVALID_CONFIG message).
    Values are not validated here (`problem` does that)."""
    out = dict(current)
    for name, op, value in ops:
        d = TOPIC_CONFIGS.get(name)
        if op == 0:
            out[name] = value
        elif op == 1:
            out.pop(name, None)
        elif op in (2, 3):
            if d is None:
                return current, f"Unknown topic config name: {name}"
            if d.type != LIST:
                return current, f"Can't {'APPEND' if op == 2 else 'SUBTRACT'} to key {name} because its type is not LIST."
            items = list_items(str(out.get(name, d.default)))
            change = list_items(value or "")
            items = items + [i for i in change if i not in items] if op == 2 else [i for i in items if i not in change]
            out[name] = ",".join(items)
        else:
            return current, f"Unknown config operation {op} for {name}"
    return out, None
