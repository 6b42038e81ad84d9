"""RocketMQ subscription group attributes (5.5's SubscriptionGroupAttributes: priority.factor and the
lite consumer group's lite.*), set with UPDATE_AND_CREATE_SUBSCRIPTIONGROUP as mqadmin updateSubGroup
sends them ("+key": value adds or changes, "-key" removes), checked as the 5.5 broker checks them
(its AttributeUtil's words), and kept in the store's config so that they outlive a restart. Groups
themselves still exist implicitly; only the attributes set on one are kept. The gRPC lite push
consumer reads them: lite.sub.client.quota is the quota told the client in its Settings (the SDK
refuses a subscription past it), lite.bind.topic the parent topic the group may consume."""
from __future__ import annotations

CONFIG_FILE = "subscriptionGroupAttributes.json"
LONG_MAX = 2**63 - 1

# name -> (kind, bounds or allowed values, default): as SubscriptionGroupAttributes.ALL in 5.5.0
ATTRIBUTES: dict[str, tuple] = {
    "priority.factor": ("long", (0, 100), "100"),
    "lite.bind.topic": ("string", None, ""),
    "lite.sub.model": ("enum", ("Shared", "Exclusive"), "Shared"),
    "lite.sub.reset.offset.exclusive": ("bool", None, "false"),
    "lite.sub.reset.offset.unsubscribe": ("bool", None, "false"),
    "lite.sub.client.quota": ("long", (-1, LONG_MAX), "2000"),
    "lite.sub.client.max.event.cnt": ("long", (10, LONG_MAX), "400"),
    "lite.sub.wildcard": ("string", None, ""),
}


RUNTIME = "java.lang.RuntimeException: "


def value_error(name: str, value: str) -> str | None:
    """Why `value` is refused for attribute `name` (the exception the 5.5 broker answers), or None."""
    kind, bounds, _ = ATTRIBUTES[name]
    if kind == "long":
        digits = value[1:] if value.startswith("-") else value
        if not (digits.isascii() and digits.isdigit()):
            return f'java.lang.NumberFormatException: For input string: "{value}"'
        if not bounds[0] <= int(value) <= bounds[1]:
            return f"{RUNTIME}value is not in range({bounds[0]}, {bounds[1]})"
    elif kind == "enum" and value not in bounds:
        return f"{RUNTIME}value is not in set: [{', '.join(bounds)}]"
    elif kind == "bool" and value.lower() not in ("true", "false"):
        return f"{RUNTIME}boolean attribute format is wrong."
    return None


def altered(current: dict[str, str], changes: dict[str, str], create: bool) -> tuple[dict[str, str] | None, str | None]:
    """(the attributes after `changes`, None) or (None, why they are refused)."""
    after = dict(current)
    for key, value in changes.items():
        op, name = key[:1], key[1:]
        if op not in "+-" or not name:
            return None, f"{RUNTIME}kv string format wrong. key: {key}"
        if name not in ATTRIBUTES:
            return None, f"{RUNTIME}unsupported key: {name}"
        if op == "-":
            if create:
                return None, f"{RUNTIME}only add attribute is supported while creating topic. key: {name}"
            if name not in after:
                return None, f"{RUNTIME}attempt to delete a nonexistent key: {name}"
            del after[name]
            continue
        why = value_error(name, str(value))
        if why:
            return None, why
        after[name] = str(value)
    return after, None


class SubscriptionGroups:
    """group -> {attribute: value} of the groups that have attributes set."""

    def __init__(self, store=None) -> None:
        self.store = store
        doc = (store.read_config(CONFIG_FILE, {}) or {}) if store is not None else {}
        self.attributes: dict[str, dict[str, str]] = {g: dict(a) for g, a in doc.get("groups", {}).items()}

    def get(self, group: str, name: str) -> str:
        return self.attributes.get(group, {}).get(name, ATTRIBUTES[name][2])

    def quota(self, group: str) -> int:
        return int(self.get(group, "lite.sub.client.quota"))

    def alter(self, group: str, changes: dict) -> str | None:
        """Apply "+key"/"-key" changes to the group's attributes; why they are refused, or None."""
        create = group not in self.attributes
        after, why = altered(self.attributes.get(group, {}), changes, create)
        if why:
            return why
        if after:
            self.attributes[group] = after
        else:
            self.attributes.pop(group, None)
        self._persist()
        return None

    def drop(self, group: str) -> None:
        if self.attributes.pop(group, None) is not None:
            self._persist()

    def _persist(self) -> None:
        if self.store is not None:
            self.store.write_config(CONFIG_FILE, {"groups": self.attributes})
