"""Incremental fetch sessions (KIP-227), as Kafka's FetchManager keeps them.

A Fetch with epoch 0 (a full fetch) opens a session: its partitions (with their fetch positions) are
kept under a random id, answered in full, and the client then sends (id, next epoch) naming only the
partitions whose position changed and those it forgets. Such an incremental fetch reads every partition
of the session but answers only those with news: records, an error, or a changed high watermark, last
stable offset or log start offset; a partition that returned records moves to the end of the session
(so a full answer does not starve the later ones). Epoch -1 is sessionless (and closes the named
session). An unknown id: FETCH_SESSION_ID_NOT_FOUND; a wrong epoch: INVALID_FETCH_SESSION_EPOCH; by name
in a session opened by topic id, or the reverse: FETCH_SESSION_TOPIC_ID_ERROR. A partition kept by a
topic id whose topic was deleted and re-created answers INCONSISTENT_TOPIC_ID (Kafka 4.3.1 the same).

The cache is per gateway and bounded (`--max-incremental-fetch-session-cache-slots`, Kafka's
`max.incremental.fetch.session.cache.slots`): when full, a session idle for 2 minutes is evicted, else
the smallest one if the new session has more partitions; otherwise the fetch is answered without a
session (id 0) and the client goes on with full fetches. A client whose session is gone (a restart)
gets FETCH_SESSION_ID_NOT_FOUND and opens a new one.
"""
from __future__ import annotations

import dataclasses
import random
import time

import gateway.kafka.topics as topics

NONE = 0
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
INCONSISTENT_TOPIC_ID = 103
FETCH_SESSION_TOPIC_ID_ERROR = 106
FINAL_EPOCH = -1
SLOTS = 1000  # Kafka's max.incremental.fetch.session.cache.slots
EVICTION_S = 120.0  # Kafka's minimum age before an idle session may be evicted


@dataclasses.dataclass
class Cached:
    """One partition of a session: how it is named, its request fields, what was last answered."""
    topic: str | None  # the name when added (for a topic id: to tell a re-created topic from a deleted one)
    topic_id: bytes | None  # by id (Fetch v13+), else None
    request: dict  # partition, fetch_offset, partition_max_bytes, ...
    answered: tuple = (-1, -1, -1)  # high watermark, last stable offset, log start offset


class Session:
    def __init__(self, session_id: int, by_id: bool, now: float) -> None:
        self.id, self.by_id, self.epoch, self.last_used = session_id, by_id, 1, now
        self.parts: dict[tuple, Cached] = {}  # (topic id or name, partition) -> Cached, in fetch order

    def update(self, topics_: list, forgotten: list, name_key: str) -> None:
        for t in topics_:
            for p in t["partitions"]:
                key = (self._topic_key(t, name_key), p["partition"])
                old = self.parts.get(key)
                self.parts[key] = Cached(t.get(name_key) if old is None or old.topic is None else old.topic,
                                         t.get("topic_id") if self.by_id else None, p,
                                         old.answered if old else (-1, -1, -1))
        for t in forgotten:
            for index in t["partitions"]:
                self.parts.pop((self._topic_key(t, name_key), index), None)

    def _topic_key(self, t: dict, name_key: str):
        return bytes(t["topic_id"]) if self.by_id else t[name_key]


class FetchSessionCache:
    def __init__(self, slots: int = SLOTS, clock=time.monotonic) -> None:
        self.slots, self.clock = slots, clock
        self.sessions: dict[int, Session] = {}

    def open(self, by_id: bool, size: int) -> Session | None:
        """A new session, or None when the cache is full of sessions worth more."""
        now = self.clock()
        if self.slots <= 0:
            return None
        if len(self.sessions) >= self.slots and not self._evict(size, now):
            return None
        session_id = random.randint(1, 0x7FFFFFFF)
        while session_id in self.sessions:
            session_id = random.randint(1, 0x7FFFFFFF)
        session = self.sessions[session_id] = Session(session_id, by_id, now)
        return session

    def _evict(self, size: int, now: float) -> bool:
        idle = min(self.sessions.values(), key=lambda s: s.last_used)
        if now - idle.last_used > EVICTION_S:
            del self.sessions[idle.id]
            return True
        smallest = min(self.sessions.values(), key=lambda s: (len(s.parts), s.last_used))
        if len(smallest.parts) < size:
            del self.sessions[smallest.id]
            return True
        return False


class Plan:
    """What one Fetch reads (`topics`, the request's layout) and how its answer is finished."""

    def __init__(self, topics_: list, session: Session | None = None, full: bool = False, error: int = NONE,
                 inconsistent: list | None = None) -> None:
        self.topics, self.session, self.full, self.error = topics_, session, full, error
        self.inconsistent = inconsistent or []  # (Cached) answered INCONSISTENT_TOPIC_ID

    def finish(self, responses: list) -> tuple[list, int]:
        """(the answer's topics, its session id) from the responses of `topics`."""
        if self.session is None:
            return responses, 0
        for cached in self.inconsistent:
            responses.append({"topic": None, "topic_id": cached.topic_id, "partitions": [
                {"partition_index": cached.request["partition"], "error_code": INCONSISTENT_TOPIC_ID,
                 "high_watermark": -1, "records": b""}]})
        kept, moved = [], []
        for t in responses:
            key_topic = bytes(t["topic_id"]) if self.session.by_id else t["topic"]
            parts = []
            for p in t["partitions"]:
                cached = self.session.parts.get((key_topic, p["partition_index"]))
                if cached is None or self._must_answer(cached, p):
                    parts.append(p)
                    if cached is not None and p.get("records") and not self.full:
                        moved.append((key_topic, p["partition_index"]))
            if parts:
                kept.append(dict(t, partitions=parts))
        for key in moved:  # fairness: partitions that returned records are read last next time
            self.session.parts[key] = self.session.parts.pop(key)
        return (responses if self.full else kept), self.session.id

    def _must_answer(self, cached: Cached, p: dict) -> bool:
        answered = (p.get("high_watermark", -1), p.get("last_stable_offset", -1), p.get("log_start_offset", -1))
        if p.get("error_code", NONE) != NONE:
            cached.answered = (-1, -1, -1)  # answered again once the error is gone
            return True
        news = bool(p.get("records")) or answered != cached.answered
        cached.answered = answered
        return news or self.full


def plan(app, version: int, req: dict) -> Plan:
    """The Plan of a Fetch request (topics named by id already carry their name, `topics.name_topics_by_id`)."""
    if version < 7:
        return Plan(req["topics"])
    cache: FetchSessionCache = app.kafka.fetch_sessions
    session_id, epoch, by_id = req["session_id"], req["session_epoch"], version >= 13
    if epoch in (0, FINAL_EPOCH):
        if session_id:
            cache.sessions.pop(session_id, None)
        if epoch == FINAL_EPOCH:
            return Plan(req["topics"])
        size = sum(len(t["partitions"]) for t in req["topics"])
        session = cache.open(by_id, size)
        if session is not None:
            session.update(req["topics"], [], "topic")
        return Plan(req["topics"], session, full=True)
    session = cache.sessions.get(session_id)
    if session is None:
        return Plan([], error=FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return Plan([], error=INVALID_FETCH_SESSION_EPOCH)
    if session.by_id != by_id:
        return Plan([], error=FETCH_SESSION_TOPIC_ID_ERROR)
    session.update(req["topics"], req["forgotten_topics_data"], "topic")
    if not session.parts:
        del cache.sessions[session_id]
        return Plan([])
    session.epoch = session.epoch + 1 if session.epoch < 0x7FFFFFFF else 1
    session.last_used = cache.clock()
    fetched, inconsistent = _session_topics(app, session)
    return Plan(fetched, session, inconsistent=inconsistent)


def _session_topics(app, session: Session) -> tuple[list, list]:
    """The session's partitions in the request's layout, grouped by topic in session order; and those
    whose topic id no longer names a topic while a topic of their name exists (re-created)."""
    out: list = []
    inconsistent = []
    for cached in session.parts.values():
        name = cached.topic
        if cached.topic_id is not None:
            current = topics.name_of_topic_id(app, cached.topic_id)
            if current is None and name is not None and topics.existing(app, name) is not None:
                inconsistent.append(cached)
                continue
            name = current if current is not None else name
        if out and out[-1]["topic"] == name and out[-1]["topic_id"] == cached.topic_id:
            out[-1]["partitions"].append(cached.request)
        else:
            out.append({"topic": name, "topic_id": cached.topic_id, "partitions": [cached.request]})
    return out, inconsistent
