"""Per-group configs on Kafka's GROUP config resource (KIP-932 `share.*`, KIP-1071 `streams.*`):
names, defaults, Kafka's validation, and the store (`config/shareGroupConfigs.json`, which also
keeps the known share-group ids).

Each value is checked as Kafka's GroupConfig checks it, with Kafka's messages: first the type and
the ConfigDef bound ("Invalid value X for configuration N: ..."), then the broker's min/max
(`group.streams.min.heartbeat.interval.ms` and the like, at Kafka's defaults here).
"""
from __future__ import annotations

CONFIG_FILE = "shareGroupConfigs.json"
SET, DELETE = 0, 1


def _invalid(name: str, value: str, why: str) -> str:
    return f"Invalid value {value} for configuration {name}: {why}"


def _int_in(lo: int, hi: int):
    """Share configs: an integer in [lo, hi]."""
    def check(name: str, value: str) -> str | None:
        try:
            n = int(value)
        except ValueError:
            return _invalid(name, value, "must be an integer")
        return None if lo <= n <= hi else _invalid(name, value, f"must be in [{lo}, {hi}]")
    return check


def _broker_bounded(at_least: int, lo: tuple[str, int] | None, hi: tuple[str, int] | None):
    """Streams configs as Kafka checks them: an INT at least `at_least` (ConfigDef), then within the
    broker's (config name, value) bounds `lo` and `hi`."""
    def check(name: str, value: str) -> str | None:
        try:
            n = int(value)
        except ValueError:
            return _invalid(name, value, "Not a number of type INT")
        if n < at_least:
            return _invalid(name, value, f"Value must be at least {at_least}")
        if lo is not None and n < lo[1]:
            return f"{name} must be greater than or equal to {lo[0]}"
        if hi is not None and n > hi[1]:
            return f"{name} must be less than or equal to {hi[0]}"
        return None
    return check


def _at_least(at_least: int):
    """An INT with only a ConfigDef lower bound (Kafka's message)."""
    return _broker_bounded(at_least, None, None)


def _one_of(*allowed: str):
    return lambda name, value: None if value in allowed else _invalid(name, value, f"must be one of {', '.join(allowed)}")


def _offset_reset(name: str, value: str) -> str | None:
    if value in ("earliest", "latest") or value.startswith("by_duration:"):
        return None
    return _invalid(name, value, "must be earliest, latest or by_duration:<ISO8601 duration>")


# name -> (default, broker synonym, checker: None when fine, else Kafka's message); the bounds are
# Kafka's (GroupConfig with the broker's group.share.* / group.streams.* min/max defaults)
CONFIGS = {
    "share.auto.offset.reset": ("latest", "group.share.auto.offset.reset", _offset_reset),
    "share.delivery.count.limit": ("5", "group.share.delivery.count.limit", _int_in(2, 10)),
    "share.heartbeat.interval.ms": ("5000", "group.share.heartbeat.interval.ms", _int_in(5000, 15000)),
    "share.isolation.level": ("read_uncommitted", "group.share.isolation.level",
                              _one_of("read_committed", "read_uncommitted")),
    "share.record.lock.duration.ms": ("30000", "group.share.record.lock.duration.ms", _int_in(15000, 60000)),
    "share.session.timeout.ms": ("45000", "group.share.session.timeout.ms", _int_in(45000, 60000)),
    "streams.heartbeat.interval.ms": ("5000", "group.streams.heartbeat.interval.ms", _broker_bounded(
        1, ("group.streams.min.heartbeat.interval.ms", 5000), ("group.streams.max.heartbeat.interval.ms", 15000))),
    "streams.num.standby.replicas": ("0", "group.streams.num.standby.replicas", _broker_bounded(
        0, None, ("group.streams.max.standby.replicas", 2))),
    "streams.session.timeout.ms": ("45000", "group.streams.session.timeout.ms", _broker_bounded(
        1, ("group.streams.min.session.timeout.ms", 45000), ("group.streams.max.session.timeout.ms", 60000))),
    "streams.initial.rebalance.delay.ms": ("3000", "group.streams.initial.rebalance.delay.ms", _at_least(0)),
    "streams.assignment.interval.ms": ("1000", "group.streams.assignment.interval.ms", _broker_bounded(
        0, ("group.streams.min.assignment.interval.ms", 0), ("group.streams.max.assignment.interval.ms", 15000))),
}
STRINGS = ("share.auto.offset.reset", "share.isolation.level")  # the others are INT
# The gateway's own broker defaults where Kafka's differ: a new streams group is assigned at once and
# re-assigned on every change (Kafka 4.3 waits 3 s for more members first, then batches changes per 1 s);
# a group may set either config to get Kafka's behaviour. DescribeConfigs shows them as the broker's
# static config (they are not Kafka's defaults).
GATEWAY_DEFAULTS = {"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0"}


class GroupConfigs:
    """The configs set on groups (group id -> {name: value}), persisted in `store` when given;
    `defaults` overrides a config's default (the broker's `group.*` setting, e.g. from a flag)."""

    def __init__(self, store=None, defaults: dict[str, str] | None = None) -> None:
        self.store = store
        doc = (store.read_config(CONFIG_FILE, {}) or {}) if store else {}
        self.values: dict[str, dict[str, str]] = doc.get("configs", {})
        self.share_groups: list[str] = list(doc.get("groups", ()))  # known share-group ids, kept here too
        self.defaults = {name: d for name, (d, _s, _c) in CONFIGS.items()} | GATEWAY_DEFAULTS | (defaults or {})

    def get(self, group_id: str, name: str) -> str:
        return self.values.get(group_id, {}).get(name, self.defaults[name])

    def get_int(self, group_id: str, name: str) -> int:
        return int(self.get(group_id, name))

    def alter(self, group_id: str, ops: list[tuple[str, int, str | None]], validate_only: bool) -> str | None:
        """(name, operation 0 set / 1 delete, value) changes; returns why they are refused, or None."""
        current = dict(self.values.get(group_id, {}))
        for name, op, value in ops:
            if name not in CONFIGS:
                return f"Unknown group config name: {name}"
            if op == DELETE:
                current.pop(name, None)
            elif op == SET and value is not None:
                why = CONFIGS[name][2](name, value.strip())
                if why:
                    return why
                current[name] = value.strip()
            else:
                return f"Unsupported operation {op} for {name}"
        if not validate_only:
            self.values[group_id] = current
            self.persist()
        return None

    def drop(self, group_id: str) -> None:
        if self.values.pop(group_id, None):
            self.persist()

    def persist(self) -> None:
        if self.store is not None:
            self.store.write_config(CONFIG_FILE, {"groups": sorted(self.share_groups),
                                                  "configs": {g: c for g, c in self.values.items() if c}})
