"""Carrying the POP journals forward, so they never pin a CommitLog file (docs/tiered-storage.md,
"What is deleted locally, and when").

A pop journal (`RMQ_SYS_POP_JOURNAL_<topic>`, semantics.replication.pop_journal) is not tiered: a
take-over replays it from its latest checkpoint, synchronously, from local entries. Its first entry
is written when the topic is created, so with a tier it would keep the oldest CommitLog file (and,
files going oldest first, every later one) on every member's disk. But a replay needs only the
entries from the latest checkpoint on: the older ones are superseded. So, as RocketMQ's compaction
carries live entries forward before a file is dropped, local deletion (store.tier.local) asks this
object, the store's `carry`:

- `needed_from(journal)`: the lowest CommitLog offset still needed, the latest checkpoint of each
  queue (named by the copy's last entry); the journal pins no file that ends at or below it;
- `forward(journal, file_end)` when the journaled topic's own local retention lets a file go that
  the journal still needs; `carry()` (called with no store lock held) then has the leader of each
  such journal queue write a new checkpoint: its older entries become superseded on the leader and,
  once replicated, on every follower, so the file goes on each member.
"""
from __future__ import annotations

from semantics.replication.pop_journal import CHECKPOINT, _decode, journaled_topic

CHECKPOINT_HEAD = b'{"k":"%s"' % CHECKPOINT.encode()  # how PopJournal._write begins a checkpoint's body


class JournalCarry:
    def __init__(self, store, journal, pop) -> None:
        """`journal`: the gateway's PopJournal (who leads a journal queue); `pop`: its PopEngine."""
        self.store, self.journal, self.pop = store, journal, pop
        self._wanted: dict[str, int] = {}  # journal topic -> the end of the file it should free

    def follows(self, topic: str) -> str | None:
        """The topic whose local retention `topic`'s entries follow; None: `topic` is no journal."""
        return journaled_topic(topic)

    def needed_from(self, name: str) -> int:
        needed = self.store.max_physical_offset
        for qid in self.store.queues(name):
            phys = self._checkpoint_phys(name, qid)
            if phys is not None:
                needed = min(needed, phys)
        return needed

    def forward(self, name: str, file_end: int) -> None:
        self._wanted[name] = max(self._wanted.get(name, 0), file_end)

    def carry(self) -> int:
        """Write the checkpoints asked for, on the queues this gateway leads; how many were written."""
        wanted, self._wanted = self._wanted, {}
        written = 0
        for name, file_end in wanted.items():
            topic = journaled_topic(name)
            for qid in self.store.queues(name):
                phys = self._checkpoint_phys(name, qid)
                if phys is not None and phys < file_end and self.journal.leads(topic, qid) \
                        and self.pop.checkpoint_journal(topic, qid):
                    written += 1
        return written

    def _checkpoint_phys(self, name: str, qid: int) -> int | None:
        """The CommitLog offset of the queue's latest checkpoint (of its first entry when the copy
        names none); None for an empty queue."""
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
