"""Where the pop engine keeps its state so that it survives kill -9.

As RocketMQ 5 appends POP checkpoints and acks to a system topic (`rmq_sys_REVIVE_LOG`), every
engine op is appended as one small JSON message to the system topic `RMQ_SYS_POP_LOG` (one queue)
before it takes effect. Now and then the whole state is written as `config/popState.json`
(atomic, fsynced) together with the log position it covers; a start loads that snapshot and
applies the ops logged after it. An op is in the CommitLog before its answer leaves (in sync-flush
mode the answer also waits for it to be on disk), so a process crash loses no answered op.

In a cluster the ops of a replicated queue go to that queue's pop journal instead, replicated
with the queue (`journal`, a `semantics.replication.pop_journal.PopJournal` the cluster layer
sets), so its POP state follows the queue to a new leader (`take_over`).
"""
from __future__ import annotations

import json
import logging

from codec.remoting.message import Message
from semantics.pop_state import QueueState
from semantics.routing import ensure_topic

LOG_TOPIC = "RMQ_SYS_POP_LOG"
SNAPSHOT_FILE = "popState.json"
log = logging.getLogger(__name__)

Key = tuple  # (group, topic, queue id)


def offset_ranges(offsets: list[int]) -> list[list[int]]:
    """Ascending offsets as [first, end) ranges, as ops log them (a filtered queue skips long runs)."""
    out: list[list[int]] = []
    for offset in offsets:
        if out and out[-1][1] == offset:
            out[-1][1] += 1
        else:
            out.append([offset, offset + 1])
    return out


class PopLog:
    def __init__(self, store, writer=None) -> None:
        self.store = store
        self.writer = writer  # the off-loop config writer (the gateway's); None: write in place
        self.journal = None  # cluster mode: the pop journals of replicated queues (PopJournal)
        self._covered = 0  # the log position the snapshot on disk covers (entries below: superseded)
        self._submitted: tuple[int, int] | None = None  # (writer's number, logNext) of a snapshot on its way
        ensure_topic(store, LOG_TOPIC, 1)

    def append(self, op: dict) -> int:
        """Log one op; returns the CommitLog end offset (for a sync-flush durability wait)."""
        if self.journal is not None:
            end = self.journal.append(op)  # a queue whose journal this gateway leads
            if end is not None:
                return end
        body = json.dumps(op, separators=(",", ":")).encode()
        return self.store.append(Message(topic=LOG_TOPIC, queue_id=0, body=body)).end_offset

    def load(self) -> dict[Key, QueueState]:
        """The snapshot plus every op logged after it."""
        doc = self.store.read_config(SNAPSHOT_FILE, {}) or {}
        states = {(q["g"], q["t"], int(q["q"])): QueueState.from_json(q) for q in doc.get("queues", ())}
        position = self._covered = int(doc.get("logNext", 0))
        end = self.store.max_offset(LOG_TOPIC, 0)
        if position > end:  # the log lost a tail the snapshot already holds (OS crash, async flush)
            self.snapshot(states)
            return states
        position = max(position, self.store.min_offset(LOG_TOPIC, 0))
        for _, entry in self.store.iterate(LOG_TOPIC, 0, start=position):
            try:
                op = json.loads(entry.body)
            except ValueError:
                op = None
            apply_op(states, op, entry.queue_offset)
        return states

    def take_over(self, topic: str, qid: int, states: dict[Key, QueueState]) -> list[QueueState]:
        """This gateway now leads the replicated queue (topic, qid): every group's state of it in
        `states` is replaced by the one its journal copy holds, and a checkpoint of that starts this
        leadership's entries. Returns the states taken over."""
        for key in [k for k in states if k[1] == topic and k[2] == qid]:
            del states[key]
        if self.journal is None:
            return []
        adopted = self.journal.replay(topic, qid)
        states.update(adopted)
        self.journal.checkpoint(topic, qid, adopted)
        return list(adopted.values())

    def covered(self) -> int:
        """The log position the snapshot on disk covers: the entries below it are superseded
        (semantics.pop_carry lets local deletion drop them)."""
        sub = self._submitted
        if sub is not None and self.writer.written_already(SNAPSHOT_FILE, sub[0]):
            self._covered, self._submitted = max(self._covered, sub[1]), None
        return self._covered

    def snapshot(self, states: dict[Key, QueueState]) -> None:
        """Write (or submit to the writer) the state with the log position it covers; a snapshot
        not yet on disk at a crash costs nothing: the older one plus the log cover the same state."""
        doc = {
            "logNext": self.store.max_offset(LOG_TOPIC, 0),
            "queues": [{"g": g, "t": t, "q": q, **state.to_json()} for (g, t, q), state in states.items()],
        }
        if self.writer is None:
            self.store.write_config(SNAPSHOT_FILE, doc)
            self._covered = doc["logNext"]
        else:
            self._submitted = (self.writer.submit(SNAPSHOT_FILE, doc), doc["logNext"])
        if self.journal is not None:
            self.journal.checkpoint_led(states)


def apply_op(states: dict[Key, QueueState], op, position: int) -> None:
    """Replay one logged op into `states` (the node log's and a pop journal's rule); an unreadable
    one (at `position`) is skipped."""
    try:
        kind, key = op["k"], (op["g"], op["t"], int(op["q"]))
    except (KeyError, TypeError, ValueError):
        log.warning("pop log: unreadable entry at %s skipped", position)
        return
    if kind == "drop":  # the group's progress on the queue was deleted
        states.pop(key, None)
        return
    state = states.get(key)
    if state is None:
        if kind != "init":
            return
        state = states[key] = QueueState(int(op["s"]))
    if kind != "init":
        state.apply(op)
