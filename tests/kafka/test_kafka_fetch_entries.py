"""`fetch.fetch_entries` finds every stored entry of a queue, whatever mix of batch sizes it holds
(small batches grouped per unit, large ones skipped by binary search)."""
from hypothesis import given, settings, strategies as st

import store
from codec.remoting.message import Message
from gateway.kafka.fetch import fetch_entries


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40), st.data())
def test_entries_are_found_for_any_batch_sizes(tmp_path_factory, counts, data):
    s = store.open(str(tmp_path_factory.mktemp("fe")))
    try:
        starts = []
        for i, n in enumerate(counts):
            s.append(Message("T", 0, b"b%d" % i, {}, batch_count=n))
            s.append(Message("Other", 0, b"x", {}))  # another queue's entry between ours
        high = s.max_offset("T", 0)
        assert high == sum(counts)
        offset = 0
        for n in counts:
            starts.append(offset)
            offset += n
        begin = data.draw(st.integers(min_value=0, max_value=high - 1))
        found = fetch_entries(s, "T", 0, begin, high, 1 << 40)
        expected = [begin] + [o for o in starts if o > begin]
        assert [first for first, _phys, _size in found] == expected
        assert len({phys for _f, phys, _s in found}) == len(found)
    finally:
        s.close()
