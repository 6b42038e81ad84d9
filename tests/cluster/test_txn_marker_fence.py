"""The marker fence of Kafka's layout in a cluster (gateway/cluster/txn_fence.py): each replica derives a
producer's last marker number per queue from the marker's control record (TxnVisibility.marks), and a
leader appends no marker of an end at or below it: a retried copy, or an old coordinator's arriving after
the producer's next v1 transaction (same producer id and epoch) began there. In process; the cluster
case, first on Kafka 4.3.1, is tests/cluster/test_cluster_txn_fence.py."""
from __future__ import annotations

import types
import uuid

from codec.kafka import records
from gateway.cluster.txn_layout import _marker_due
from interop.inner_batch import INNER_BATCH_FLAG
from interop.txn_visibility import VISIBLE

PID = 7


def _entry(body: bytes):
    return types.SimpleNamespace(sys_flag=INNER_BATCH_FLAG, body=body)


def _data(pid: int = PID):
    return _entry(records.build_batch([(1000, None, b"x", [])], producer_id=pid, producer_epoch=0,
                                      base_sequence=0, transactional=True))


def _marker(number: int, pid: int = PID):
    return _entry(records.control_batch(True, pid, 0, 1000, coordinator_epoch=number))


def _queue(*entries):
    """A fresh queue holding `entries` at offsets 0.., derived; (topic, its store)."""
    topic = f"fence-{uuid.uuid4().hex[:8]}"
    for offset, m in enumerate(entries):
        VISIBLE.appended(topic, 0, offset, m)
    store = types.SimpleNamespace(read=lambda _t, _q, o, _n: types.SimpleNamespace(entries=[(o, entries[o])]))
    return topic, store


def test_an_end_at_or_below_the_last_marker_number_appends_nothing_to_the_next_transaction():
    topic, store = _queue(_data(), _marker(3), _data())  # transaction 1 ended by end 3; transaction 2 open
    try:
        assert VISIBLE.last_mark(topic, 0, PID) == 3
        assert not _marker_due(store, topic, 0, PID, 0, 3)  # end 3's copy: before, it committed transaction 2
        assert not _marker_due(store, topic, 0, PID, 0, 2)  # an older end's
        assert _marker_due(store, topic, 0, PID, 0, 4)  # transaction 2's own end
    finally:
        VISIBLE.forget_topic(topic)


def test_every_numbered_record_less_end_gets_one_marker():
    topic, store = _queue(_marker(5, pid=8))  # a partition added without a record, marked by end 5
    try:
        assert not _marker_due(store, topic, 0, 8, 0, 5)
        assert _marker_due(store, topic, 0, 8, 0, 6)  # the next v1 transaction (same epoch): before, none
    finally:
        VISIBLE.forget_topic(topic)


def test_a_cut_marker_no_longer_fences():
    topic, store = _queue(_data(), _marker(3))
    try:
        VISIBLE.truncate(topic, 0, 1)  # the marker cut (a follower's diverged suffix): the transaction is open
        assert VISIBLE.last_mark(topic, 0, PID) is None
        assert _marker_due(store, topic, 0, PID, 0, 3)
    finally:
        VISIBLE.forget_topic(topic)


def test_a_cut_across_the_last_marker_leaves_the_one_before():
    topic, _store = _queue(_data(), _marker(3), _data(), _marker(4))
    try:
        VISIBLE.truncate(topic, 0, 3)  # end 4's marker cut: end 3's number fences again, as a replay derives
        assert VISIBLE.last_mark(topic, 0, PID) == 3
    finally:
        VISIBLE.forget_topic(topic)
