"""Iceberg table topics' configs (docs/tables.md): their names, values and the partition spec syntax.

Here (not in tables/) because topic config validation (semantics.topic_configs) refuses a bad value
when CreateTopics, AlterConfigs or the RocketMQ admin command sets it, before any table exists.

    iceberg.mode                   disabled | key_value | value_schema_id_prefix | value_schema_latest
    iceberg.commit.interval.ms     how often a table topic's new records are committed as a snapshot
    iceberg.partition.spec         e.g. (hour(timestamp)) or (partition, bucket(16, key)); () = none
    iceberg.invalid.record.action  dlq_table | drop (records a schema mode cannot decode)
"""
from __future__ import annotations

import re

MODE = "iceberg.mode"
COMMIT_INTERVAL = "iceberg.commit.interval.ms"
PARTITION_SPEC = "iceberg.partition.spec"
INVALID_ACTION = "iceberg.invalid.record.action"
MODES = ("disabled", "key_value", "value_schema_id_prefix", "value_schema_latest")
ACTIONS = ("dlq_table", "drop")
DEFAULT_COMMIT_INTERVAL_MS = 60_000
# The columns every table topic has (docs/tables.md) that a partition spec may name.
PARTITION_COLUMNS = ("timestamp", "partition", "offset", "key", "tags", "protocol")
TIME_TRANSFORMS = ("year", "month", "day", "hour")
_FIELD = re.compile(r"^\s*(?:(\w+)\s*\(\s*(?:(\d+)\s*,\s*)?(\w+)\s*\)|(\w+))\s*$")


class SpecError(ValueError):
    """A partition spec that cannot be applied; the message says why."""


def parse_partition_spec(text: str) -> list[tuple[str, int | None, str]]:
    """`(hour(timestamp), bucket(16, key), partition)` -> [(transform, width, column), ...] with
    transform one of identity, year, month, day, hour, bucket, truncate (width for the last two)."""
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise SpecError("a partition spec is a parenthesised list, e.g. (hour(timestamp))")
    inner = text[1:-1].strip()
    fields = []
    for part in _split_top(inner) if inner else []:
        m = _FIELD.match(part)
        if m is None:
            raise SpecError(f"cannot read partition field {part.strip()!r}")
        transform, width, column = (m.group(1), m.group(2), m.group(3)) if m.group(3) else ("identity", None, m.group(4))
        transform = transform.lower()
        if column not in PARTITION_COLUMNS:
            raise SpecError(f"column {column!r} is not a column a table topic can be partitioned by "
                            f"(one of {', '.join(PARTITION_COLUMNS)})")
        if transform in TIME_TRANSFORMS and column != "timestamp":
            raise SpecError(f"{transform}() applies to the timestamp column only, not {column!r}")
        if transform in ("bucket", "truncate"):
            if width is None or int(width) < 1:
                raise SpecError(f"{transform}(N, column) needs a width N >= 1")
            fields.append((transform, int(width), column))
        elif transform in ("identity", *TIME_TRANSFORMS) and width is None:
            fields.append((transform, None, column))
        else:
            raise SpecError(f"unknown partition transform {transform!r} (identity, year, month, day, hour, "
                            "bucket(N, col), truncate(N, col))")
    if len({(t, c) for t, _, c in fields}) != len(fields):
        raise SpecError("a partition field is repeated")
    return fields


def _split_top(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def spec_problem(text: str) -> str | None:
    """Why the value of iceberg.partition.spec is refused, or None."""
    try:
        parse_partition_spec(text)
    except SpecError as exc:
        return str(exc)
    return None


def _value_kind(mode: str) -> str | None:
    """What the table's `value` column holds in `mode`: bytes, a struct of decoded fields, or no table."""
    return None if mode == "disabled" else "binary" if mode == "key_value" else "struct"


def switch_problem(before: dict | None, after: dict | None) -> str | None:
    """Why a topic's iceberg.mode may not change from `before`'s to `after`'s attributes: the
    table's `value` column is binary in key_value and a struct in the schema modes, and Iceberg cannot
    change a column between the two (docs/tables.md, "Switching modes"). Between the two schema
    modes, and to or from disabled, a switch is fine."""
    old, new = settings(before)[0], settings(after)[0]
    if old == new or None in (_value_kind(old), _value_kind(new)) or _value_kind(old) == _value_kind(new):
        return None
    return (f"iceberg.mode cannot change from {old} to {new} on a table topic: its table's value column is "
            f"{_value_kind(old)} in {old} and {_value_kind(new)} in {new}, which Iceberg cannot evolve; "
            f"write to a new topic (or delete and re-create this one, which purges its table)")


def settings(attributes: dict | None) -> tuple[str, int, str, str]:
    """(mode, commit interval ms, partition spec, invalid record action) of a topic's attributes."""
    attrs = attributes or {}
    mode = str(attrs.get(MODE, "disabled")).strip()
    try:
        interval = max(1, int(str(attrs.get(COMMIT_INTERVAL, DEFAULT_COMMIT_INTERVAL_MS)).strip()))
    except ValueError:
        interval = DEFAULT_COMMIT_INTERVAL_MS
    spec = str(attrs.get(PARTITION_SPEC, "()")).strip() or "()"
    action = str(attrs.get(INVALID_ACTION, "dlq_table")).strip()
    return (mode if mode in MODES else "disabled"), interval, spec, (action if action in ACTIONS else "dlq_table")
