"""store.delete_records: a queue's log start offset (Kafka DeleteRecords) moves up, persists, and
goes with its topic."""
import store
from store import Message, StoreConfig


def _open(path):
    return store.open(str(path), StoreConfig(commitlog_file_size=64 * 1024, cq_units_per_file=100, index_slots=64,
                                             index_entries=256))


def test_delete_records_moves_min_offset_and_survives_reopen(tmp_path):
    s = _open(tmp_path)
    s.topics.create("T", 1, 1)
    for i in range(5):
        s.append(Message("T", 0, b"m%d" % i, {}))
    assert s.delete_records("T", 0, 3) == 3
    assert s.delete_records("T", 0, 1) == 3  # never moves back
    assert s.min_offset("T", 0) == 3 and s.max_offset("T", 0) == 5
    assert [q for q, _ in s.iterate("T", 0)] == [3, 4]
    assert s.read("T", 0, 1).next_offset == 3
    assert s.delete_records("T", 0, 99) == 5  # at most the end
    s.append(Message("T", 0, b"m5", {}))
    s.close()
    s = _open(tmp_path)
    assert (s.min_offset("T", 0), s.max_offset("T", 0)) == (5, 6)
    assert [m.body for _, m in s.iterate("T", 0)] == [b"m5"]
    s.topics.delete("T")
    s.topics.create("T", 1, 1)
    s.append(Message("T", 0, b"again", {}))
    s.close()
    s = _open(tmp_path)
    assert s.min_offset("T", 0) == 0  # a re-created topic starts from scratch
    s.close()
