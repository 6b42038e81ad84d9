"""Per-client byte-rate quotas, KIP-13 style (Kafka's ClientQuotaManager), for the Kafka side.

Quotas are set per entity: a user, a client id, or a (user, client id) pair, each name either a
real name or the default (`<default>`, None here). Keys: `producer_byte_rate` (bytes of Produce
requests per second) and `consumer_byte_rate` (bytes of Fetch answers per second). They live in
`<store>/config/client_quotas.json`, written atomically on every change.

A request is charged to the most specific quota matching its (user, client id), in Kafka's order:
(user, client), (user, default client), user, (default user, client), (default user, default
client), default user, client, default client. Clients matching one quota entity share one rate:
the sensor is keyed by the names the matched entity uses (a client-id quota is shared by every
user of that client id; a default quota is per actual name).

The rate is measured as Kafka's Rate over a SampledStat: `WINDOW_NUM` samples of `WINDOW_S`, the
elapsed time counted as at least (WINDOW_NUM - 1) windows. Once a recorded amount puts the rate
above the quota, the throttle time is Kafka's: how much longer than the measured window the bytes
take at the quota, (rate - quota) / quota × window, at most WINDOW_NUM × WINDOW_S.
"""
from __future__ import annotations

import time

from store.config import ConfigDir

USER, CLIENT = "user", "client-id"
PRODUCE_KEY, FETCH_KEY = "producer_byte_rate", "consumer_byte_rate"
KEYS = (PRODUCE_KEY, FETCH_KEY)
FILE = "client_quotas"
WINDOW_NUM = 11  # quota.window.num
WINDOW_S = 1.0  # quota.window.size.seconds
MAX_THROTTLE_S = WINDOW_NUM * WINDOW_S
PRUNE_AT = 10_000  # rates kept before the idle ones (every sample expired) are dropped
# DescribeClientQuotas match types
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaError(Exception):
    """An entity or an operation Kafka refuses (INVALID_REQUEST with this message)."""


def entity_key(components: list[tuple[str, str | None]]) -> tuple:
    """The canonical key of an entity: ((type, name), ...) sorted by type (a type named twice: the
    last name, as Kafka's map of them); QuotaError for an entity Kafka refuses, with Kafka's words."""
    names = dict(components)
    for t, name in names.items():
        if t not in (USER, CLIENT):  # Kafka's ip quotas limit connection rates: not served here
            raise QuotaError(f"Unhandled client quota entity type: {t}")
        if name == "":
            raise QuotaError(f"Empty {t} not supported")
    if not names:
        raise QuotaError("Invalid empty client quota entity")
    return tuple(sorted(names.items()))


def describe_filter_error(filters: list[tuple[str, int, str | None]]) -> tuple[int, str] | None:
    """(error code, message) Kafka answers a DescribeClientQuotas filter it refuses, else None."""
    seen = set()
    for entity_type, match_type, match in filters:
        if entity_type in seen:
            return 42, f"Entity type {entity_type} cannot appear more than once in the filter."
        seen.add(entity_type)
        if entity_type not in (USER, CLIENT, "ip"):
            return 35, f"Unsupported entity type {entity_type}"
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return 42, f"Unknown match type {match_type}"
        if match_type == MATCH_DEFAULT and match is not None:
            return 42, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
    return None


class _Rate:
    """Kafka's sampled Rate: `WINDOW_NUM` samples of `WINDOW_S`, each started by its first event."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: list[list[float]] = []  # [start, amount], oldest first

    def _purge(self, now: float) -> None:
        self.samples = [s for s in self.samples if now - s[0] < WINDOW_NUM * WINDOW_S]

    def record(self, amount: float, now: float) -> None:
        self._purge(now)
        if not self.samples or now - self.samples[-1][0] >= WINDOW_S:
            self.samples.append([now, 0.0])
        self.samples[-1][1] += amount

    def window(self, now: float) -> float:
        """The time the rate is measured over (s): at least WINDOW_NUM - 1 windows."""
        elapsed = now - self.samples[0][0] if self.samples else 0.0
        full = int(elapsed // WINDOW_S)
        if full < WINDOW_NUM - 1:
            elapsed += (WINDOW_NUM - 1 - full) * WINDOW_S
        return elapsed

    def rate(self, now: float) -> float:
        self._purge(now)
        return sum(s[1] for s in self.samples) / self.window(now)


class ClientQuotas:
    """The quota table (both keys) and the rate of every throttled (user, client id)."""

    def __init__(self, config_dir: str | None, clock=time.monotonic) -> None:
        self.cfg = ConfigDir(config_dir) if config_dir else None
        self.clock = clock
        self.table: dict[tuple, dict[str, float]] = {}
        self.rates: dict[tuple, _Rate] = {}  # (key, user tag, client tag) -> rate
        for row in (self.cfg.read(FILE, []) if self.cfg else []):
            self.table[entity_key([(t, n) for t, n in row["entity"]])] = dict(row["values"])

    # ------------------------------------------------------------ the config API
    def alter(self, components: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]],
              validate_only: bool) -> None:
        """Set or remove (`remove`) keys of one entity; QuotaError when Kafka would refuse."""
        key = entity_key(components)
        values = dict(self.table.get(key, {}))
        seen = set()
        for name, value, remove in ops:
            if name in seen:
                entries = ", ".join(f"{t}={n}" for t, n in key)
                raise QuotaError(f"Ignoring duplicate entity ClientQuotaEntity(entries={{{entries}}})")
            seen.add(name)
            if name not in KEYS:  # request_percentage, controller_mutation_rate: not enforced, so refused
                raise QuotaError(f"Invalid configuration key {name}")
            if remove:
                values.pop(name, None)
                continue
            if value != int(value):
                raise QuotaError(f"{name} cannot be a fractional value.")
            if value <= 0:
                raise QuotaError(f"Quota {name} must be greater than 0")
            values[name] = float(value)
        if validate_only:
            return
        if values:
            self.table[key] = values
        else:
            self.table.pop(key, None)
        self.rates.clear()  # a new quota may change which entity a client is charged to
        if self.cfg is not None:
            self.cfg.write(FILE, [{"entity": [list(c) for c in k], "values": v} for k, v in self.table.items()])

    def describe(self, filters: list[tuple[str, int, str | None]], strict: bool) -> list[tuple[tuple, dict]]:
        """The entities matching every (type, match type, name) filter (and only those types, strict)."""
        found = []
        for key, values in self.table.items():
            names = dict(key)
            if strict and set(names) != {t for t, _, _ in filters}:
                continue
            if all(_matches(names, f) for f in filters):
                found.append((key, dict(values)))
        return found

    # ------------------------------------------------------------ enforcement
    def quota_of(self, kind: str, user: str, client_id: str) -> tuple[float, tuple] | None:
        """(bytes per second, sensor key) of the most specific quota of `kind`, None without one."""
        for entity in ((USER, user), (CLIENT, client_id)), ((USER, user), (CLIENT, None)), ((USER, user),), \
                ((USER, None), (CLIENT, client_id)), ((USER, None), (CLIENT, None)), ((USER, None),), \
                ((CLIENT, client_id),), ((CLIENT, None),):
            value = self.table.get(tuple(sorted(entity)), {}).get(kind)
            if value is not None:
                types = {t for t, _ in entity}
                return value, (kind, user if USER in types else "", client_id if CLIENT in types else "")
        return None

    def record(self, kind: str, user: str, client_id: str, amount: int) -> float:
        """Charge `amount` bytes; the throttle time in seconds (0 while under the quota)."""
        quota = self.quota_of(kind, user, client_id)
        if quota is None:
            return 0.0
        bound, sensor = quota
        now = self.clock()
        if sensor not in self.rates and len(self.rates) >= PRUNE_AT:  # as Kafka expires idle sensors
            self.rates = {k: r for k, r in self.rates.items() if r.rate(now) > 0}
        rate = self.rates.setdefault(sensor, _Rate())
        rate.record(amount, now)
        observed = rate.rate(now)
        if observed <= bound:
            return 0.0
        return min((observed - bound) / bound * rate.window(now), MAX_THROTTLE_S)

    def unrecord(self, kind: str, user: str, client_id: str, amount: int) -> None:
        """Take back a charge (a throttled Fetch is answered empty, so its bytes are not sent)."""
        quota = self.quota_of(kind, user, client_id)
        if quota is not None and quota[1] in self.rates:
            self.rates[quota[1]].record(-amount, self.clock())

    def max_window_bytes(self, kind: str, user: str, client_id: str) -> int | None:
        """What a Fetch may carry at most: the quota over WINDOW_NUM - 1 windows (None: no quota)."""
        quota = self.quota_of(kind, user, client_id)
        return None if quota is None else int(quota[0] * (WINDOW_NUM - 1) * WINDOW_S)


def _matches(names: dict, flt: tuple[str, int, str | None]) -> bool:
    entity_type, match_type, match = flt
    if entity_type not in names:
        return False
    name = names[entity_type]
    if match_type == MATCH_EXACT:
        return name == match
    if match_type == MATCH_DEFAULT:
        return name is None
    return True  # MATCH_SPECIFIED: any name of that type, the default too (as Kafka answers)
