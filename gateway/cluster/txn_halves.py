"""A cluster partition leader's halves of Kafka transactions (`--cluster-txn-layout halves`) read back
from the half topic: a restart takes the undecided ones out of memory, and a decided end may reach
this leader after one (`ClusterTxns.markers`)."""
from __future__ import annotations

from codec.kafka.records import HEADER_SIZE, PRODUCER_FIELDS, PRODUCER_ID_AT
from interop.inner_batch import INNER_BATCH_FLAG
from semantics.routing import HALF_TOPIC, PROPERTY_PRODUCER_GROUP, PROPERTY_REAL_QID, PROPERTY_REAL_TOPIC


def recover(app, halves: dict, txn_id: str, pid: int) -> None:
    """Add to `halves` (producer id -> [(topic, partition, half offset, epoch)]) the undecided halves
    of `txn_id` written by producer `pid` that are in the half topic and not held there yet."""
    tr, held = app.transactions, {h[2] for h in halves.get(pid, ())}
    for off in range(tr.cursor, app.store.max_offset(HALF_TOPIC, 0)):
        half = None if off in held or tr.outcome(off) is not None else tr.half(off)
        if half is None or half.queue_offset != off or half.properties.get(PROPERTY_PRODUCER_GROUP) != txn_id:
            continue
        fields = producer(half)
        try:
            real = (half.properties[PROPERTY_REAL_TOPIC], int(half.properties[PROPERTY_REAL_QID]))
        except (KeyError, ValueError):
            continue
        if fields is not None and fields[0] == pid:
            halves.setdefault(pid, []).append((*real, off, fields[1]))


def producer(half) -> tuple[int, int] | None:
    """(producer id, epoch) of a Kafka half (its body is the record batch), None for another half."""
    body = half.body
    if not half.sys_flag & INNER_BATCH_FLAG or len(body) < HEADER_SIZE:
        return None
    pid, epoch, _seq, _count = PRODUCER_FIELDS.unpack_from(body, PRODUCER_ID_AT)
    return pid, epoch
