"""Seed 69739 between real gateway processes (docs/faults.md, "Findings of the eighth stop, seed
69739"): a node follows a leader that cannot answer (paused here; a one-way partition there), is
elected meanwhile and takes writes; the old leader's late answer to the epoch question must not cut
them. Roles are set with REPLICA_ROLE, as the cluster layer does from etcd."""
from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
from replicas import Kafka, batch, fetched_values, follow, lead, replicate, state, wait_until

from gateway.remoting.replica_client import ANSWER_SLACK_S


@pytest.fixture
def two(gateway_factory):
    return [gateway_factory(name=f"node{i}", extra_args=["--default-partitions", "1"]) for i in range(2)]


def test_a_late_epoch_end_answer_does_not_cut_the_log_its_node_now_leads(two):
    old, new = two
    topic = "late-" + uuid.uuid4().hex[:10]
    replicate(old, [new], topic, epoch=1)
    k = Kafka(old)
    assert [k.produce(topic, batch([b"v%d" % i])) for i in range(2)] == [(0, 0), (0, 1)]
    wait_until(lambda: state(new, topic)["logEnd"] == 2, what="replicated")
    lead(old, [new], topic, 2)  # epoch 1 ends at 2 in its log
    os.kill(old.proc.pid, signal.SIGSTOP)
    asked = time.monotonic()
    try:
        follow(new, old, topic, 2)  # its task asks the paused leader where epoch 1 ended: no answer yet
        time.sleep(0.5)
        lead(new, [old], topic, 3, isr=[])  # elected meanwhile (the one in-sync replica)
        kn = Kafka(new)
        assert [kn.produce(topic, batch([b"v%d" % i])) for i in range(2, 5)] == [(0, 2), (0, 3), (0, 4)]
        assert time.monotonic() - asked < ANSWER_SLACK_S - 2  # the held question has not timed out
    finally:
        os.kill(old.proc.pid, signal.SIGCONT)  # the answer (epoch 1 ended at 2) reaches the new leader
    time.sleep(2)
    assert state(new, topic)["logEnd"] == 5
    assert [v for _, v in fetched_values(kn, topic)] == [b"v0", b"v1", b"v2", b"v3", b"v4"]
