"""The POP state of a replicated queue follows the queue's leadership (docs/cluster.md, "POP state
across a failover").

On one gateway the pop engine logs its ops to the node-local system topic `RMQ_SYS_POP_LOG`
(`semantics.pop_log`). In a cluster that log would stay on the old leader, so the new leader of a
queue would know nothing of what was acknowledged or in flight. Instead, every replicated queue
(topic, q) has a companion queue, its **pop journal** `RMQ_SYS_POP_JOURNAL_<topic>` queue q, that
takes the ops of every group on that queue while this gateway leads it, and is replicated exactly
as the queue is: same leader, replicas and epoch (`gateway.cluster.replicas` gives both keys the
same role), the same follower fetch loop, epoch truncation and high watermark. RocketMQ HA copies
the whole CommitLog, revive and checkpoint topics included, to the slave; our replication is per
queue, so the queue's POP state travels as one more replicated queue beside it.

- **Entries**: one JSON op per engine change, as in the node log (`k`, `g`, `t`, `q`, ...), plus
  `cp`, the journal offset of the latest checkpoint when the op was written. A checkpoint
  (`k` = "states") holds the whole state of every group on the queue; a leader writes one when
  it takes the queue over (the first entry of its leadership) and whenever the engine snapshots.
- **Taking over** (`replay`): the new leader reads its copy's last entry, starts at the checkpoint
  it names, and applies what follows; that is every group's state as the old leader last had it
  in the entries that reached this copy.
- **Acks wait for the replicas** (`journaled`): with `--flush sync` (SYNC_MASTER) an ack is
  answered once the in-sync replicas hold the journal up to it, as acks=all. So an acknowledged
  record is never delivered again after a failover; only records in flight at the crash (and
  acks answered in async-flush mode within the replication lag) can be.

Ops of queues this gateway does not lead in the journal (not replicated, local topics such as
the POP retry topics, or follower queues) stay in the node log as before.
"""
from __future__ import annotations

import json
import logging

from codec.remoting.message import Message
from semantics.pop_log import apply_op
from semantics.pop_state import QueueState
from semantics.replication.manager import LEADER
from semantics.routing import ensure_topic

JOURNAL_PREFIX = "RMQ_SYS_POP_JOURNAL_"
CHECKPOINT = "states"
log = logging.getLogger("rocketgate.replication")


def journal_topic(topic: str) -> str:
    """The pop journal of a replicated topic (a system topic: not assigned in etcd, its queues get
    their roles from the topic's)."""
    return JOURNAL_PREFIX + topic


def journaled_topic(name: str) -> str | None:
    """The topic whose pop journal `name` is, or None when it is not a journal."""
    return name[len(JOURNAL_PREFIX):] if name.startswith(JOURNAL_PREFIX) else None


class PopJournal:
    """The journals of one gateway: where ops of the queues it leads go, checkpoints, and replay.
    `manager` is the gateway's ReplicaManager (whose role of the journal queue decides)."""

    def __init__(self, store, manager) -> None:
        self.store, self.manager = store, manager
        self._checkpoints: dict[tuple[str, int], int] = {}  # (topic, q): the latest checkpoint's offset

    def ensure(self, topic: str, queues: int) -> None:
        """The journal topic of `topic` exists here with at least `queues` queues."""
        ensure_topic(self.store, journal_topic(topic), queues)

    def leads(self, topic: str, qid: int) -> bool:
        r = self.manager.role(journal_topic(topic), qid)
        return r is not None and r.role == LEADER

    def append(self, op: dict) -> int | None:
        """Journal `op` (it names g, t, q) if this gateway leads the queue's journal; its CommitLog
        end offset, or None: the op belongs in the node log."""
        topic, qid = op["t"], int(op["q"])
        if not self.leads(topic, qid):
            return None
        cp = self._checkpoints.get((topic, qid))
        return self._write(topic, qid, op if cp is None else {**op, "cp": cp}).end_offset

    def checkpoint(self, topic: str, qid: int, states: dict) -> None:
        """Write the whole state of every group on (topic, qid) (`states`: {(g, t, q): QueueState})."""
        doc = {"k": CHECKPOINT, "t": topic, "q": qid,
               "queues": [{"g": g, **state.to_json()} for (g, t, q), state in states.items()
                          if t == topic and q == qid]}
        self._checkpoints[(topic, qid)] = self._write(topic, qid, doc).queue_offset

    def checkpoint_led(self, states: dict) -> None:
        """A checkpoint of every journal this gateway leads that took an op since its last one (the
        engine's snapshot time): bounds what a take-over replays and what retention may drop."""
        for topic, qid in list(self._checkpoints):
            end = self.store.max_offset(journal_topic(topic), qid)
            if self.leads(topic, qid) and end > self._checkpoints[(topic, qid)] + 1:
                self.checkpoint(topic, qid, states)

    def replay(self, topic: str, qid: int) -> dict:
        """Every group's state of (topic, qid) as this copy of its journal holds it:
        {(g, t, q): QueueState}, empty for a journal with nothing in it."""
        name = journal_topic(topic)
        start, end = self.store.min_offset(name, qid), self.store.max_offset(name, qid)
        last = next(iter(self.store.iterate(name, qid, start=max(start, end - 1))), None)
        if last is not None:
            doc = _decode(last[1].body)
            cp = last[0] if doc.get("k") == CHECKPOINT else doc.get("cp")
            if isinstance(cp, int) and cp >= start:
                start = cp
            else:
                log.warning("%s/%d: no checkpoint in the pop journal; replaying it from %d", topic, qid, start)
        states: dict = {}
        for _, entry in self.store.iterate(name, qid, start=start, end=end):
            doc = _decode(entry.body)
            if doc.get("k") == CHECKPOINT:
                states = {(q["g"], topic, qid): QueueState.from_json(q) for q in doc.get("queues", ())}
            else:
                apply_op(states, doc, entry.queue_offset)
        return states

    def _write(self, topic: str, qid: int, doc: dict):
        body = json.dumps(doc, separators=(",", ":")).encode()
        return self.store.append(Message(topic=journal_topic(topic), queue_id=qid, body=body))


def _decode(body: bytes) -> dict:
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    return doc if isinstance(doc, dict) else {}


async def journaled(manager, queues) -> None:
    """Return once the in-sync replicas hold the pop journal of each (topic, q) in `queues` up to
    its current end (at once for a queue whose journal is not replicated here). Raises NotLeader
    when this gateway stops leading one first."""
    for topic, qid in sorted(set(queues)):
        name = journal_topic(topic)
        if manager.replicates(name, qid):
            await manager.wait_replicated(name, qid, manager.store.max_offset(name, qid))
