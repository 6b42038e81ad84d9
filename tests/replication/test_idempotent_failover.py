"""An idempotent retry that reaches a new (or re-instated) leader after another node stored and
replicated the batch is answered as a duplicate (its first offset), as Kafka's replicas rebuild
producer state from every batch in their log, copied ones included (docs/faults.md, finding 1).

Roles are set by hand (REPLICA_ROLE), as the cluster layer does from etcd."""
from __future__ import annotations

import os
import threading
import time
import uuid

from replicas import Kafka, batch, fetched_values, replicate, set_role, state, wait_until

NOT_LEADER_OR_FOLLOWER = 6
ARGS = ["--replica-lag-time-max-ms", "1500", "--default-partitions", "1"]


def _send(gw, topic: str, pid: int, epoch: int, seq: int) -> tuple[int, int]:
    return Kafka(gw).produce(topic, batch([b"v%d" % seq], producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def _copied_from_the_other(gateway_factory):
    """(a, b, topic, producer): A led first (it knows the producer up to sequence 0), B led next and
    stored sequence 1, which A (B's follower) copied."""
    a, b = (gateway_factory(name=n, extra_args=ARGS) for n in ("a", "b"))
    topic = "idem-" + uuid.uuid4().hex[:8]
    replicate(a, [b], topic, 1)
    producer = Kafka(a).producer_id()
    assert _send(a, topic, *producer, 0) == (0, 0)
    replicate(b, [a], topic, 2)
    assert _send(b, topic, *producer, 1) == (0, 1)
    wait_until(lambda: state(a, topic)["logEnd"] >= 2, timeout=30, what="A copied sequence 1")
    return a, b, topic, producer


def _assert_retry_is_a_duplicate(gw, topic: str, producer) -> None:
    assert _send(gw, topic, *producer, 1) == (0, 1)  # answered with the stored batch's offset
    assert [v for _, v in fetched_values(Kafka(gw), topic)] == [b"v0", b"v1"]  # not stored twice


def test_retry_of_a_copied_batch_is_a_duplicate_on_the_reinstated_leader(gateway_factory):
    a, b, topic, producer = _copied_from_the_other(gateway_factory)
    replicate(a, [b], topic, 3)
    _assert_retry_is_a_duplicate(a, topic, producer)


def test_retry_of_a_copied_batch_is_a_duplicate_once_the_queue_is_written_here_unreplicated(gateway_factory):
    """A follower whose queue stops being replicated writes it as a plain queue (REPLICA_ROLE none):
    the batches it copied count for the producer state too."""
    a, _b, topic, producer = _copied_from_the_other(gateway_factory)
    assert set_role(a, topic, "none", 2).code == 0
    _assert_retry_is_a_duplicate(a, topic, producer)


def test_a_produce_that_waited_for_a_slow_disk_is_refused_once_its_node_follows(gateway_factory, tmp_path):
    """A produce accepted while A led, queued behind a held store write until A became B's follower,
    is refused (NOT_LEADER_OR_FOLLOWER), not appended to a follower's log and acknowledged there."""
    hold = str(tmp_path / "hold")
    a = gateway_factory(name="a", extra_args=[*ARGS, "--store-write-hold-file", hold])
    b = gateway_factory(name="b", extra_args=ARGS)
    topic = "idem-" + uuid.uuid4().hex[:8]
    replicate(a, [b], topic, 1)
    producer = Kafka(a).producer_id()
    assert _send(a, topic, *producer, 0) == (0, 0)
    answers: dict[int, tuple[int, int]] = {}

    def send(seq: int) -> None:
        data = batch([b"v%d" % seq], producer_id=producer[0], producer_epoch=producer[1], base_sequence=seq)
        answers[seq] = Kafka(a).produce(topic, data, acks=1)

    open(hold, "w").close()  # A's disk stalls: its next append waits, holding the write turn
    first = threading.Thread(target=send, args=(1,), daemon=True)
    first.start()
    wait_until(lambda: "store write held" in a.log(), what="A's append held")
    queued = threading.Thread(target=send, args=(2,), daemon=True)
    queued.start()
    time.sleep(0.5)  # let it reach the write turn (ordering only: no figure is asserted)
    replicate(b, [a], topic, 2)  # B leads, A follows
    os.remove(hold)
    first.join(30)
    queued.join(30)
    assert answers[2][0] == NOT_LEADER_OR_FOLLOWER, answers
