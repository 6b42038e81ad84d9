"""Idempotent-producer state: producer id allocation and per-partition sequence dedup.

Producer ids are allocated from a counter persisted with `store.write_config`, so a restart never
hands out an id twice. Sequence state lives in memory: after a restart a producer that has no state
for a partition is accepted at any sequence (as Kafka does once producer state has expired).
"""
from __future__ import annotations

import collections
import dataclasses

CONFIG_NAME = "kafkaProducerIds"
CACHED_BATCHES = 5  # Kafka keeps the metadata of the last five batches per producer and partition

OK, DUPLICATE, OUT_OF_ORDER, FENCED = "ok", "duplicate", "out_of_order", "fenced"


@dataclasses.dataclass
class _Entry:
    epoch: int
    # (first_seq, last_seq, base_offset) of the last batches, newest last
    batches: collections.deque


class ProducerState:
    def __init__(self, store) -> None:
        self.store = store
        self._next_id = int(store.read_config(CONFIG_NAME, {"next": 1000}).get("next", 1000))
        self._by_partition: dict[tuple[int, str, int], _Entry] = {}

    def allocate(self) -> int:
        """A fresh producer id, durable before it is returned."""
        pid = self._next_id
        self._next_id += 1
        self.store.write_config(CONFIG_NAME, {"next": self._next_id})
        return pid

    def check(self, pid: int, epoch: int, topic: str, partition: int, first_seq: int, count: int):
        """(verdict, base_offset_of_duplicate) for a batch about to be appended."""
        entry = self._by_partition.get((pid, topic, partition))
        if entry is None:
            return OK, None
        if epoch < entry.epoch:
            return FENCED, None
        if epoch > entry.epoch:
            return (OK, None) if first_seq == 0 else (OUT_OF_ORDER, None)
        last_seq = _add(first_seq, count - 1)
        for b_first, b_last, b_offset in entry.batches:
            if b_first == first_seq and b_last == last_seq:
                return DUPLICATE, b_offset
        expected = _add(entry.batches[-1][1], 1)
        return (OK, None) if first_seq == expected else (OUT_OF_ORDER, None)

    def record(self, pid: int, epoch: int, topic: str, partition: int, first_seq: int, count: int,
               base_offset: int) -> None:
        key = (pid, topic, partition)
        entry = self._by_partition.get(key)
        if entry is None or entry.epoch != epoch:
            entry = self._by_partition[key] = _Entry(epoch, collections.deque(maxlen=CACHED_BATCHES))
        entry.batches.append((first_seq, _add(first_seq, count - 1), base_offset))

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._by_partition if k[1] == topic]:
            del self._by_partition[key]


def _add(seq: int, n: int) -> int:
    """Sequence arithmetic wraps at int32 max, like Kafka's DefaultRecordBatch.incrementSequence."""
    return (seq + n) % (1 << 31)
