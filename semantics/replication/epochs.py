"""Leader epochs per queue (Kafka's leader-epoch checkpoint): which epoch's leader wrote which
range of offsets, as (epoch, start offset) pairs, ascending in both. It is what lets a follower of a
new leader find where its log diverged (`end_offset`), and what fences a stale leader.

Persisted in the data dir (`config/leaderEpochs.json`, written atomically on every change; changes
happen on role changes and epoch changes only, never per entry)."""
from __future__ import annotations

CONFIG_NAME = "leaderEpochs"
UNDEFINED = -1


class LeaderEpochCache:
    """The epoch table of every replicated queue of one store."""

    def __init__(self, store) -> None:
        self.store = store
        raw = store.read_config(CONFIG_NAME, {}) or {}
        self._table: dict[tuple[str, int], list[tuple[int, int]]] = {
            (topic, int(qid)): [(int(e), int(s)) for e, s in pairs]
            for topic, queues in raw.items() for qid, pairs in queues.items()}

    def entries(self, topic: str, queue_id: int) -> list[tuple[int, int]]:
        return list(self._table.get((topic, queue_id), ()))

    def latest_epoch(self, topic: str, queue_id: int) -> int:
        pairs = self._table.get((topic, queue_id))
        return pairs[-1][0] if pairs else UNDEFINED

    def assign(self, topic: str, queue_id: int, epoch: int, start_offset: int) -> None:
        """Epoch `epoch` starts at `start_offset` (a leader's first offset in it). Older epochs
        starting at or after it wrote nothing that survives: they are dropped."""
        pairs = self._table.setdefault((topic, queue_id), [])
        if pairs and pairs[-1][0] >= epoch:
            return
        while pairs and pairs[-1][1] >= start_offset:
            pairs.pop()
        pairs.append((epoch, start_offset))
        self._persist()

    def replace(self, topic: str, queue_id: int, pairs: list[tuple[int, int]], log_end: int) -> None:
        """A follower mirrors its leader's table for the offsets it holds (below `log_end`)."""
        kept = [(e, s) for e, s in pairs if s < log_end or (e, s) == pairs[-1]]
        if kept != self._table.get((topic, queue_id)):
            self._table[(topic, queue_id)] = kept
            self._persist()

    def truncate_from_end(self, topic: str, queue_id: int, end_offset: int) -> None:
        """The queue now ends at `end_offset`: epochs starting at or after it are forgotten."""
        pairs = self._table.get((topic, queue_id))
        if pairs and pairs[-1][1] >= end_offset:
            while pairs and pairs[-1][1] >= end_offset:
                pairs.pop()
            self._persist()

    def end_offset(self, topic: str, queue_id: int, epoch: int, log_end: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (the largest epoch <= `epoch`, the offset where it ended: the next
        epoch's start, or `log_end` for the latest). (UNDEFINED, UNDEFINED) if none is <= `epoch`."""
        pairs = self._table.get((topic, queue_id)) or []
        for i in range(len(pairs) - 1, -1, -1):
            e, _start = pairs[i]
            if e <= epoch:
                return e, (pairs[i + 1][1] if i + 1 < len(pairs) else log_end)
        return UNDEFINED, UNDEFINED

    def forget(self, topic: str, queue_id: int) -> None:
        if self._table.pop((topic, queue_id), None) is not None:
            self._persist()

    def _persist(self) -> None:
        out: dict = {}
        for (topic, qid), pairs in self._table.items():
            out.setdefault(topic, {})[str(qid)] = [list(p) for p in pairs]
        self.store.write_config(CONFIG_NAME, out)
