"""The transactional-id table's journal (store.txn_id_journal): one appended line per change, a
compaction that folds the journal into the snapshot, and a recovery that survives every crash point
(a torn last line, a rotation whose snapshot never came, the flat table of older gateways)."""
import json
import os

import store.txn_id_journal as tij
from store.txn_id_journal import JOURNAL, SNAPSHOT, TxnIdJournal, read_table


def _rec(epoch: int) -> dict:
    return {"pid": 1000, "epoch": epoch, "timeout": 60000, "last": None}


def test_a_change_is_one_appended_line_and_a_reopen_reads_it(tmp_path):
    j = TxnIdJournal(str(tmp_path))
    j.put("a", _rec(0))
    size = os.path.getsize(tmp_path / JOURNAL)
    j.put("a", _rec(1))
    j.put("b", _rec(0))
    assert os.path.getsize(tmp_path / JOURNAL) == 3 * size  # three lines appended, no rewrite of the table
    assert not (tmp_path / SNAPSHOT).exists()
    j.close()
    assert TxnIdJournal(str(tmp_path)).table == {"a": _rec(1), "b": _rec(0)}
    assert json.loads((tmp_path / SNAPSHOT).read_text())["transactionalIds"] == {"a": _rec(1), "b": _rec(0)}
    assert os.path.getsize(tmp_path / JOURNAL) == 0  # folded at the start


def test_compaction_folds_the_journal_into_the_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(tij, "COMPACT_RECORDS", 5)
    j = TxnIdJournal(str(tmp_path))
    for epoch in range(8):
        j.put("a", _rec(epoch))
    j.write()
    assert json.loads((tmp_path / SNAPSHOT).read_text()) == {"version": 8, "transactionalIds": {"a": _rec(7)}}
    assert os.path.getsize(tmp_path / JOURNAL) == 0 and not (tmp_path / (JOURNAL + ".old")).exists()
    j.put("a", _rec(8))
    j.write()
    assert read_table(str(tmp_path))[:2] == ({"a": _rec(8)}, 9)


def test_a_torn_last_line_is_cut_and_the_lines_before_it_kept(tmp_path):
    j = TxnIdJournal(str(tmp_path))
    j.put("a", _rec(0))
    j.put("a", _rec(1))
    j.close()
    with open(tmp_path / JOURNAL, "ab") as f:
        f.write(b'0badc0de {"v": 3, "id": "a", "rec": {"pid"')  # a kill -9 in the middle of an append
    j = TxnIdJournal(str(tmp_path))
    assert j.table == {"a": _rec(1)}
    j.put("a", _rec(2))
    j.close()
    assert TxnIdJournal(str(tmp_path)).table == {"a": _rec(2)}


def test_a_rotation_whose_snapshot_never_came_is_replayed(tmp_path):
    """A crash after the rename to .old and before the snapshot: the old journal, then the new one."""
    j = TxnIdJournal(str(tmp_path))
    j.put("a", _rec(0))
    j.put("b", _rec(0))
    j.close()
    os.rename(tmp_path / JOURNAL, tmp_path / (JOURNAL + ".old"))
    j = TxnIdJournal(str(tmp_path))  # (folds .old into the snapshot)
    j.put("a", _rec(1))
    j.close()
    assert TxnIdJournal(str(tmp_path)).table == {"a": _rec(1), "b": _rec(0)}
    assert not (tmp_path / (JOURNAL + ".old")).exists()


def test_the_flat_table_of_older_gateways_is_read(tmp_path):
    (tmp_path / SNAPSHOT).write_text(json.dumps({"old": _rec(4)}))
    j = TxnIdJournal(str(tmp_path))
    assert j.table == {"old": _rec(4)}
    j.put("old", _rec(5))
    j.close()
    assert TxnIdJournal(str(tmp_path)).table == {"old": _rec(5)}
