"""Schema validation at the broker (issue 23), for Kafka produces and RocketMQ sends alike.

A topic opts in with Confluent Server's topic configs:
    confluent.key.schema.validation / confluent.value.schema.validation
        false (default); true: the key/value must be framed (magic byte 0, 4-byte schema id) with an id
        registered under its subject; full: that, and the payload must decode against the schema.
    confluent.key.subject.name.strategy / confluent.value.subject.name.strategy
        TopicNameStrategy (default; subject <topic>-key / <topic>-value), RecordNameStrategy (the
        schema's record name), TopicRecordNameStrategy (<topic>-<record name>); Confluent's class
        names io.confluent.kafka.serializers.subject.<Strategy> are accepted too.
A null key or value passes: serializers write null for null (a tombstone, a keyless record).

Cost: a topic's rule is cached against its attributes dict (one lookup for a topic without
validation). The id level gets each record's first 5 bytes (codec.schema_frames) and judges each
distinct head of a batch once, from a verdict cache by (topic, side, id) that is cleared whenever the
registry applies a `_schemas` record. The full level decodes every payload.

In a cluster a gateway may hold no replica of `_schemas` (or a lagging one): an id it does not know is
asked of the registry leader (`fetch_ids`, set by gateway.schema_registry.lookup) by the async entry
points, `refusals_learning` and `body_refusal_learning` (or `learn` when `pending` after a sync
judgement, as the remoting loop does), and kept: an id's schema never changes, and its
subjects are kept as Confluent Server's caching registry client keeps them. Known ids never wait on it;
an id the leader does not know is asked again after REMOTE_RETRY_S at the earliest. What the leader
told is asked again after REMOTE_TTL_S (a record framed with the id waits on that, as the first one
did; an unreachable leader leaves the last answer in force), so a subject or version deleted there
reaches this gateway's validation within that time."""
from __future__ import annotations

import dataclasses
import logging
import time

from semantics.schema_formats import SchemaError, module
from semantics.topic_configs import SR_CLASS_PREFIX as CLASS_PREFIX, SR_DEFAULT_STRATEGY as DEFAULT_STRATEGY

VALIDATION = {"key": "confluent.key.schema.validation", "value": "confluent.value.schema.validation"}
STRATEGY = {"key": "confluent.key.subject.name.strategy", "value": "confluent.value.subject.name.strategy"}
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
NO_REGISTRY = "schema validation needs the gateway's schema registry (--schema-registry-port)"
log = logging.getLogger("rocketgate.schema_validation")
MAX_REASON = 300  # characters of a decoder's message in a refusal (the answer stays small)
MAX_VERDICTS = 10_000  # (topic, side, id) answers kept; ids come from clients, so the cache is bounded
MAX_REMOTE = 10_000  # ids learnt from the registry leader
MAX_ASKED = 16  # ids of one batch asked of the leader (a hostile batch may hold thousands)
REMOTE_RETRY_S = 1.0  # an id the leader did not know (or could not be asked about) is asked again after this
REMOTE_TTL_S = 10.0  # what the leader told about an id is asked again after this (its subjects may be deleted)


@dataclasses.dataclass(frozen=True)
class Side:
    """How one side (key or value) of a topic's records is validated."""
    part: str  # "key" or "value"
    strategy: str  # a short name of STRATEGIES
    full: bool  # decode the payload too


@dataclasses.dataclass(frozen=True)
class Rule:
    key: Side | None
    value: Side | None


def level_of(attributes: dict, part: str) -> str:
    return str(attributes.get(VALIDATION[part], "false")).strip().lower()


def rule_of(attributes: dict) -> Rule | None:
    """The topic's validation rule, None when neither side validates."""
    sides = []
    for part in ("key", "value"):
        level = level_of(attributes, part)
        if level not in ("true", "full"):
            sides.append(None)
            continue
        strategy = str(attributes.get(STRATEGY[part], DEFAULT_STRATEGY)).strip().removeprefix(CLASS_PREFIX)
        sides.append(Side(part, strategy if strategy in STRATEGIES else "TopicNameStrategy", level == "full"))
    return None if sides == [None, None] else Rule(*sides)


def validates(attributes: dict) -> bool:
    return any(level_of(attributes, part) in ("true", "full") for part in ("key", "value"))


def registry_problem(registry, attributes: dict) -> str | None:
    """Validation needs this gateway's registry: refused when the topic is configured, not at every send."""
    if registry is None and validates(attributes):
        return f"Invalid configuration: {NO_REGISTRY}"
    return None


_MISSING = object()


class SchemaValidation:
    """The App's validator: topic rules, the verdict cache and the refusal counters."""

    def __init__(self, registry) -> None:
        self.registry = registry  # semantics.schema_registry.Registry, None without --schema-registry-port
        self._rules: dict[str, tuple[dict, Rule | None]] = {}
        self._verdicts: dict[tuple, str | None] = {}
        self._applied = -1
        self.refused: dict[tuple[str, str, str], int] = {}  # (protocol, topic, part) -> records refused
        # async (ids) -> {id: (Schema, frozenset of subjects[, {name: text} of its references]) or None when the
        # leader has no such id}
        self.fetch_ids = None
        self._remote: dict[int, tuple] = {}  # id -> (Schema, subjects, resolved references or None) from the leader
        self._asked: dict[int, float] = {}  # id -> monotonic time it was last asked of the leader
        self._unknown: set[int] = set()  # ids the current judgement wants asked
        self._learnt: dict[int, float] = {}  # id -> monotonic time the leader last answered about it
        self._expiry = 0.0  # when verdicts from the leader's answers are next dropped (to be asked again)

    def rule(self, cfg) -> Rule | None:
        """The rule of a TopicConfig; recomputed only when its attributes dict is replaced (every
        config change replaces it)."""
        attrs = cfg.attributes
        hit = self._rules.get(cfg.name)
        if hit is not None and hit[0] is attrs:
            return hit[1]
        rule = rule_of(attrs or {})
        self._rules[cfg.name] = (attrs, rule)
        return rule

    def refusals(self, protocol: str, topic: str, rule: Rule, keys: list | None,
                 values: list | None) -> list[tuple[int, str]]:
        """(record index, why) of each refused record, counted per topic and side. `keys` and `values`
        (None: that side is not checked) hold 5-byte heads unless the side is `full` (whole payloads).
        An id this gateway does not know and may ask the leader about leaves `pending` true and the
        answer provisional (not counted): the caller awaits `learn()` and asks again."""
        bad = self._judge(topic, rule, keys, values)
        if self.pending:
            return sorted((i, why) for i, (_, why) in bad.items())
        return self._counted(protocol, topic, bad)

    @property
    def pending(self) -> bool:
        """Whether the last judgement met ids to ask the registry leader about (`learn`)."""
        return bool(self._unknown) and self.fetch_ids is not None

    async def refusals_learning(self, protocol: str, topic: str, rule: Rule, keys: list | None,
                                values: list | None) -> list[tuple[int, str]]:
        """`refusals`, after asking the registry leader about ids this gateway does not know."""
        bad = self._judge(topic, rule, keys, values)
        if self.pending:
            await self.learn()
            bad = self._judge(topic, rule, keys, values)
            self._unknown.clear()
        return self._counted(protocol, topic, bad)

    def accepts_ids(self, topic: str, rule: Rule, key_ids: set | None, value_ids: set | None) -> bool:
        """Whether records framed with only these ids (None: that side not read) pass the id level
        on every side; False sends the caller to `refusals_learning`, which says which record is
        refused and why, and asks the leader about unknown ids."""
        if self.registry is None:
            return False
        self._sync()
        for side, ids in ((rule.key, key_ids), (rule.value, value_ids)):
            if side is not None and (ids is None or any(self._id_verdict(topic, side, i) is not None for i in ids)):
                return False
        return not self.pending  # an id due to be asked of the leader again: refusals_learning asks

    def _judge(self, topic: str, rule: Rule, keys: list | None, values: list | None) -> dict:
        """{record index: (part, why)} of the refused records."""
        count = len(values if values is not None else keys)
        if self.registry is None:
            return {i: ((rule.value or rule.key).part, NO_REGISTRY) for i in range(count)}
        self._sync()
        bad: dict[int, tuple[str, str]] = {}
        for side, column in ((rule.key, keys), (rule.value, values)):
            if side is None or column is None:
                continue
            for i, why in self._side_refusals(topic, side, column):
                bad.setdefault(i, (side.part, why))
        return bad

    def _counted(self, protocol: str, topic: str, bad: dict) -> list[tuple[int, str]]:
        out = []
        for i, (part, why) in sorted(bad.items()):
            self._count(protocol, topic, part, 1)
            out.append((i, why))
        return out

    async def learn(self) -> None:
        """Ask the registry leader about the ids judged unknown; verdicts are judged again after."""
        ids, now = sorted(self._unknown)[:MAX_ASKED], time.monotonic()  # the rest stay refused
        self._unknown.clear()
        for schema_id in ids:
            self._asked[schema_id] = now
        if len(self._asked) > MAX_REMOTE:
            self._asked = {i: t for i, t in self._asked.items() if now - t < REMOTE_RETRY_S}
        try:
            found = await self.fetch_ids(ids)
        except Exception as exc:  # noqa: BLE001 - an unreachable leader leaves the ids unknown (refused)
            found = {}
            log.warning("schema validation: asking the registry leader about ids %s failed: %s", ids, exc)
        if len(self._remote) > MAX_REMOTE:
            self._remote.clear()
            self._learnt.clear()
        for schema_id, entry in found.items():  # ids it could not be asked about keep their last answer
            if entry is None:  # the leader has no such id (now)
                self._remote.pop(schema_id, None)
                self._learnt.pop(schema_id, None)
            else:
                self._remote[schema_id] = (entry[0], entry[1], entry[2] if len(entry) > 2 else None)
                self._learnt[schema_id] = now
        self._verdicts.clear()

    def _side_refusals(self, topic: str, side: Side, column: list) -> list[tuple[int, str]]:
        """The refused entries of one side. At the id level the distinct 5-byte heads are judged
        (a set, built in C: a batch mostly repeats one id) and the records walked only when one is
        refused; the full level decodes each payload."""
        if not side.full:
            verdicts = {head: self._head_verdict(topic, side, head) for head in set(column) if head is not None}
            if not any(verdicts.values()):
                return []
            return [(i, verdicts[head]) for i, head in enumerate(column) if head is not None and verdicts[head]]
        seen: dict[bytes, str | None] = {}
        out = []
        for i, data in enumerate(column):
            if data is None:  # a null key or value: nothing to frame
                continue
            head = data[:5]
            why = seen.get(head, _MISSING)
            if why is _MISSING:
                why = seen[head] = self._head_verdict(topic, side, head)
            if why is None:
                why = self._decode(side, int.from_bytes(head[1:5], "big", signed=True), data[5:])
            if why is not None:
                out.append((i, why))
        return out

    def body_refusal(self, protocol: str, cfg, bodies: list[bytes]) -> str | None:
        """Why a RocketMQ send of these message bodies to topic `cfg` is refused (None: accepted). The
        body is the framed value; RocketMQ's KEYS are index strings, never framed, so only the value
        side applies."""
        rule = self.rule(cfg)
        if rule is None or rule.value is None:
            return None
        values = bodies if rule.value.full else [b[:5] for b in bodies]
        return self._body_answer(cfg, len(bodies), self.refusals(protocol, cfg.name, Rule(None, rule.value),
                                                                 None, values))

    async def body_refusal_learning(self, protocol: str, cfg, bodies: list[bytes]) -> str | None:
        """`body_refusal`, after asking the registry leader about ids this gateway does not know."""
        rule = self.rule(cfg)
        if rule is None or rule.value is None:
            return None
        values = bodies if rule.value.full else [b[:5] for b in bodies]
        refused = await self.refusals_learning(protocol, cfg.name, Rule(None, rule.value), None, values)
        return self._body_answer(cfg, len(bodies), refused)

    @staticmethod
    def _body_answer(cfg, count: int, refused: list) -> str | None:
        if not refused:
            return None
        index, why = refused[0]
        return (f"schema validation of topic {cfg.name} refused {len(refused)} of {count} message(s); "
                f"message {index}: {why}")

    def _count(self, protocol: str, topic: str, part: str, n: int) -> None:
        key = (protocol, topic, part)
        self.refused[key] = self.refused.get(key, 0) + n

    def _sync(self) -> None:
        """Catch the registry up with `_schemas`; verdicts are dropped when anything was applied, and
        every REMOTE_TTL_S when some come from the leader's answers (to ask it again)."""
        self.registry.fresh()
        applied = self.registry.log.applied
        if applied != self._applied or len(self._verdicts) > MAX_VERDICTS:
            self._verdicts.clear()
            self._applied = applied
        if self._remote:
            now = time.monotonic()
            if now >= self._expiry:
                self._verdicts.clear()
                self._expiry = now + REMOTE_TTL_S

    def _head_verdict(self, topic: str, side: Side, head: bytes) -> str | None:
        """Why a key/value starting with these 5 bytes is refused (None: its id is the subject's)."""
        if len(head) < 5 or head[0] != 0:
            return f"{side.part} is not framed with a schema id (magic byte 0 and a 4-byte id)"
        return self._id_verdict(topic, side, int.from_bytes(head[1:5], "big", signed=True))

    def _id_verdict(self, topic: str, side: Side, schema_id: int) -> str | None:
        """Why a key/value framed with this id is refused (None: the id is the subject's), cached."""
        cache_key = (topic, side, schema_id)
        verdict = self._verdicts.get(cache_key, _MISSING)
        if verdict is _MISSING:
            verdict = self._verdict(topic, side, schema_id)
            if verdict is None or self.fetch_ids is None:  # a refusal may change once the leader is asked
                self._verdicts[cache_key] = verdict
        return verdict

    def _verdict(self, topic: str, side: Side, schema_id: int) -> str | None:
        """This gateway's copy of `_schemas` first, then what the leader told; a refusal, and when the
        leader may be asked, the id is noted in `_unknown` (ids registered through another gateway, not yet or
        never replicated here)."""
        verdict = self._subject_verdict(topic, side, schema_id, self.registry.state.schema_by_id(schema_id), None)
        if verdict is None or self.fetch_ids is None:
            return verdict
        remote = self._remote.get(schema_id)
        now = time.monotonic()
        may_ask = now - self._asked.get(schema_id, -REMOTE_RETRY_S) >= REMOTE_RETRY_S
        if remote is not None:
            verdict = self._subject_verdict(topic, side, schema_id, remote[0], remote[1])
            if verdict is None:
                if may_ask and now - self._learnt.get(schema_id, now) >= REMOTE_TTL_S:
                    self._unknown.add(schema_id)  # accepted by the last answer, which is due to be asked again
                return None
        if may_ask:
            self._unknown.add(schema_id)  # refused unless the leader, asked, knows better
        return verdict

    def _subject_verdict(self, topic: str, side: Side, schema_id: int, schema, subjects) -> str | None:
        """The verdict on `schema` (None: not registered), its subjects from this gateway's state, or
        `subjects` when given (learnt from the leader)."""
        if schema is None:
            return f"{side.part} schema id {schema_id} is not registered"
        if side.strategy == "TopicNameStrategy":
            subject = f"{topic}-{side.part}"
        else:
            try:
                name = self._parsed(schema).name
            except Exception as exc:  # noqa: BLE001 - a stored schema that no longer parses refuses, never crashes
                return f"{side.part} schema id {schema_id} does not parse: {exc}"
            if not name:
                return f"{side.part} schema id {schema_id} has no record name for {side.strategy}"
            subject = name if side.strategy == "RecordNameStrategy" else f"{topic}-{name}"
        known = self.registry.state.subject_has_id(subject, schema_id) if subjects is None else subject in subjects
        if not known:
            return f"{side.part} schema id {schema_id} is not registered under subject {subject}"
        return None

    def _parsed(self, schema):
        """The parsed schema; one learnt from the leader (not in this gateway's copy) with the
        references the leader resolved for it."""
        remote = self._remote.get(schema.id)
        if remote is None or remote[2] is None or self.registry.state.schema_by_id(schema.id) is not None:
            return self.registry.parsed(schema)
        return self.registry.parsed(schema, remote[2])

    def _decode(self, side: Side, schema_id: int, payload: bytes) -> str | None:
        schema = self.registry.state.schema_by_id(schema_id) or self._remote[schema_id][0]
        try:
            parsed = self._parsed(schema)
            module(schema.schema_type).check_payload(parsed, payload)
        except SchemaError as exc:
            why = str(exc)
        except Exception as exc:  # noqa: BLE001 - a decoder's own error on hostile bytes refuses the record
            why = f"{type(exc).__name__}: {exc}"
        else:
            return None
        return f"{side.part} does not decode with schema id {schema_id}: {why[:MAX_REASON]}"

    def topics(self, store) -> list[dict]:
        """Every topic that validates, with its settings (the dashboard and `rocketgate schemas topics`)."""
        out = []
        for name in sorted(store.topics.names()):
            cfg = store.topics.get(name)
            attrs = (cfg.attributes or {}) if cfg is not None else {}
            if cfg is None or not validates(attrs):
                continue
            row = {"topic": name}
            for part in ("key", "value"):
                row[f"{part}_validation"] = level_of(attrs, part)
                row[f"{part}_strategy"] = str(attrs.get(STRATEGY[part], DEFAULT_STRATEGY)).removeprefix(CLASS_PREFIX)
                row[f"{part}_refused"] = sum(n for (_, t, p), n in self.refused.items() if t == name and p == part)
            out.append(row)
        return out
