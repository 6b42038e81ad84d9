"""Producer state after `forget_topic` (this node started leading a queue of the topic): what is
rebuilt must hold every batch stored, the one whose append was in progress during the forget and
the ones waiting in the side topics included, so a retry of any of them is a duplicate
(docs/faults.md, finding 1)."""
from __future__ import annotations

import store
from codec.kafka import records
from interop.inner_batch import entry_message, index_info
from semantics.producer_state import DUPLICATE, OK, ProducerState
from semantics.routing import HALF_TOPIC, PROPERTY_REAL_QID, PROPERTY_REAL_TOPIC

PID, EPOCH, TOPIC = 4000, 0, "orders"


def _append(s, seq: int, topic: str = TOPIC, properties: dict | None = None) -> int:
    """Store a one-record idempotent batch of sequence `seq`; its queue offset."""
    data = records.build_batch([(1000, None, b"v%d" % seq, [])], base_timestamp=1000, producer_id=PID,
                               producer_epoch=EPOCH, base_sequence=seq)
    b = records.parse_batches(data)[0]
    return s.append_many([entry_message(topic, 0, b, index_info(b), properties or {}, 1000, False)])[-1].queue_offset


def test_a_batch_recorded_after_a_forget_keeps_the_batches_before_it(tmp_path):
    s = store.open(str(tmp_path))
    try:
        producers = ProducerState(s)
        for seq in (0, 1):
            assert producers.check(PID, EPOCH, TOPIC, 0, seq, 1) == (OK, None)
            offset = _append(s, seq)
            if seq == 1:
                producers.forget_topic(TOPIC)  # a become_leader while the append was in progress
            producers.record(PID, EPOCH, TOPIC, 0, seq, 1, offset)
        assert producers.check(PID, EPOCH, TOPIC, 0, 0, 1) == (DUPLICATE, 0)
        assert producers.check(PID, EPOCH, TOPIC, 0, 1, 1) == (DUPLICATE, 1)
    finally:
        s.close()


def test_side_topic_batches_count_again_after_a_forget(tmp_path):
    """A transactional batch waits in the half topic only; a forget must not lose it for good."""
    s = store.open(str(tmp_path))
    try:
        offset = _append(s, 0, HALF_TOPIC, {PROPERTY_REAL_TOPIC: TOPIC, PROPERTY_REAL_QID: "0"})
        producers = ProducerState(s)
        assert producers.check(PID, EPOCH, TOPIC, 0, 0, 1) == (DUPLICATE, offset)
        producers.forget_topic(TOPIC)
        assert producers.check(PID, EPOCH, TOPIC, 0, 0, 1) == (DUPLICATE, offset)
    finally:
        s.close()
