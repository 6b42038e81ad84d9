"""Kafka's transaction state derived from the entries appended to a queue (a cluster replica's way,
docs/cluster-txn-layout.md): data batches open, markers end, a truncation undoes what it cut."""
from types import SimpleNamespace

from codec.kafka import records
from codec.remoting.message import INNER_BATCH_FLAG
from interop.txn_visibility import TxnVisibility

Q = ("t", 0)


def _entry(body: bytes):
    return SimpleNamespace(sys_flag=INNER_BATCH_FLAG, body=body)


def _data(pid: int) -> object:
    return _entry(records.build_batch([(0, b"k", b"v", [])], producer_id=pid, producer_epoch=0,
                                      base_sequence=0, transactional=True))


def _marker(pid: int, commit: bool) -> object:
    return _entry(records.control_batch(commit, pid, 0, 0))


def _plain() -> object:
    return _entry(records.build_batch([(0, b"k", b"v", [])]))


def _log(v: TxnVisibility, entries) -> None:
    for offset, m in enumerate(entries):
        v.appended(*Q, offset, m)


def test_data_opens_a_marker_ends_and_an_abort_is_indexed():
    v = TxnVisibility()
    _log(v, [_plain(), _data(7), _data(8), _data(7), _marker(7, False), _marker(8, True)])
    assert v.stable_end(*Q, 6) == 6 and not v.open
    assert v.aborted_in(*Q, 0, 6) == [(7, 1)]
    assert v.is_aborted(*Q, 7, 3) and not v.is_aborted(*Q, 8, 2)


def test_an_open_transaction_holds_the_stable_end():
    v = TxnVisibility()
    _log(v, [_plain(), _data(7), _plain(), _marker(9, True)])  # a marker of no open transaction: nothing
    assert v.stable_end(*Q, 4) == 1
    assert v.aborted_in(*Q, 0, 4) == []


def test_truncation_across_a_first_offset_drops_the_transaction():
    v = TxnVisibility()
    _log(v, [_plain(), _data(7), _data(8)])
    v.truncate(*Q, 2)
    assert v.stable_end(*Q, 2) == 1
    v.truncate(*Q, 1)
    assert v.stable_end(*Q, 1) == 1 and not v.open


def test_truncation_across_a_marker_reopens_the_transaction():
    v = TxnVisibility()
    _log(v, [_data(7), _data(8), _marker(7, False), _marker(8, True), _plain()])
    assert v.aborted_in(*Q, 0, 5) == [(7, 0)] and not v.open
    v.truncate(*Q, 3)  # the commit of 8 cut: open again
    assert v.stable_end(*Q, 3) == 1 and v.aborted_in(*Q, 0, 3) == [(7, 0)]
    v.truncate(*Q, 2)  # the abort of 7 cut: open again, no longer aborted
    assert v.stable_end(*Q, 2) == 0 and v.aborted_in(*Q, 0, 2) == []
    v.appended(*Q, 2, _marker(7, True))  # the new leader's end
    assert v.stable_end(*Q, 3) == 1 and v.aborted_in(*Q, 0, 3) == []
