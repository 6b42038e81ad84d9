"""Carrying the POP state forward, so its logs never pin a CommitLog file (docs/tiered-storage.md,
"What is deleted locally, and when").

The POP state lives in untiered system topics whose old entries are superseded, not expired:

- the node log `RMQ_SYS_POP_LOG` (semantics.pop_log): a start replays it from the position the
  snapshot on disk (config/popState.json) covers, `logNext`;
- in a cluster, each replicated topic's pop journal `RMQ_SYS_POP_JOURNAL_<topic>`
  (semantics.replication.pop_journal): a take-over replays it, synchronously and from local
  entries, from its latest checkpoint (the copy's last entry names it). Its first entry is written
  when the topic is created, so into CommitLog file 0 of every member.

With a tier such a topic would keep the oldest file holding one of its entries (and, files going
oldest first, every later one) on the disk until `--file-reserved-hours`. Instead, as RocketMQ's
compaction carries live entries forward before a file is dropped, local deletion
(store.tier.local) asks this object, the store's `carry`:

- `needed_from(topic)`: the lowest CommitLog offset still needed (the node log's entry at
  `logNext`; each journal queue's latest checkpoint), None for a topic it does not carry; the
  topic pins no file that ends at or below it;
- `follows(topic)`: the topic whose local retention asks for a carry (a journal's topic; None for
  the node log: then the tiered topics of the file do);
- `forward(topic, file_end)` when a file could go but for `topic`; `carry()` (called with no store
  lock held) then writes the state forward: a node-log snapshot; on the leader of each such
  journal queue, a new checkpoint, which followers copy by replication, so the file goes on every
  member.
"""
from __future__ import annotations

from semantics.pop_log import LOG_TOPIC
from semantics.replication.pop_journal import CHECKPOINT, _decode, journaled_topic

CHECKPOINT_HEAD = b'{"k":"%s"' % CHECKPOINT.encode()  # how PopJournal._write begins a checkpoint's body


class PopCarry:
    def __init__(self, store, pop, journal=None) -> None:
        """`pop`: the gateway's PopEngine; `journal`: its PopJournal in a cluster (who leads a journal
        queue), None on a single gateway."""
        self.store, self.pop, self.journal = store, pop, journal
        self._wanted: dict[str, int] = {}  # topic -> the end of the file it should free

    def follows(self, topic: str) -> str | None:
        return journaled_topic(topic)

    def needed_from(self, name: str) -> int | None:
        store = self.store
        if name == LOG_TOPIC:
            covered = max(self.pop.writes.log.covered(), store.min_offset(LOG_TOPIC, 0))
            unit = store.units(LOG_TOPIC, 0, covered, 1)
            return unit[0][0] if unit else store.max_physical_offset
        if self.journal is None or journaled_topic(name) is None:
            return None
        needed = store.max_physical_offset
        for qid in store.queues(name):
            phys = self._checkpoint_phys(name, qid)
            if phys is not None:
                needed = min(needed, phys)
        return needed

    def forward(self, name: str, file_end: int) -> None:
        self._wanted[name] = max(self._wanted.get(name, 0), file_end)

    def carry(self) -> int:
        """Write forward what was asked for (journal queues: those this gateway leads); how many
        snapshots and checkpoints were written."""
        wanted, self._wanted = self._wanted, {}
        written = 0
        for name, file_end in wanted.items():
            if name == LOG_TOPIC:
                written += self.pop.snapshot()
                continue
            topic = journaled_topic(name)
            for qid in self.store.queues(name):
                phys = self._checkpoint_phys(name, qid)
                if phys is not None and phys < file_end and self.journal.leads(topic, qid) \
                        and self.pop.checkpoint_journal(topic, qid):
                    written += 1
        return written

    def _checkpoint_phys(self, name: str, qid: int) -> int | None:
        """The CommitLog offset of the journal queue's latest checkpoint (of its first entry when
        the copy names none); None for an empty queue."""
        store = self.store
        low, end = store.min_offset(name, qid), store.max_offset(name, qid)
        if end <= low:
            return None
        last = store.units(name, qid, end - 1, 1)
        msg = store.get(last[0][0]) if last else None
        if msg is not None and msg.body.startswith(CHECKPOINT_HEAD):  # a checkpoint (often large): not decoded
            cp = end - 1
        else:
            doc = _decode(msg.body) if msg is not None else {}
            cp = end - 1 if doc.get("k") == CHECKPOINT else doc.get("cp")
        unit = store.units(name, qid, cp if isinstance(cp, int) and low <= cp < end else low, 1)
        return unit[0][0] if unit else None
