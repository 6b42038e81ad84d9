"""POP consumption across a leader failover (issue 13; issue 14's "delivery counts and lock deadlines
survive kill -9"): three gateways on etcd, a queue with replication factor 2, `--flush sync`
(SYNC_MASTER: an ack is answered once the queue's in-sync replicas hold it). The native
SimpleConsumer pops 30 of 40 messages and acks the odd-numbered ones (so the committed offset stays
at 0); the queue's leader is killed (-9). Once the other replica is elected, the group's consumer
pops the rest there: the never-popped ones at once, the 15 in flight at the kill only after their
invisible time ran out, no acknowledged one ever again, and none lost.

Without the pop journal (`semantics.replication.pop_journal`) the new leader knows nothing of the
group's POP state: it starts the group at its committed offset (0) and hands out the acknowledged
and the in-flight messages at once."""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from client import ConsumeFrom, Message, Producer, SimpleConsumer
from clusters import NODES, require_etcd, start_cluster, wait_for
from codec.remoting import RequestCode
from raw_kafka import remoting_call
from semantics.replication.pop_journal import journal_topic
from test_cluster_failover import elected_after

TOPIC, GROUP = "pop-failover", "pop-failover-g"
INVISIBLE = 15.0  # seconds: well past the election (3 s lease) so early redeliveries would show


@pytest.fixture
def three(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, NODES, ["--flush", "sync"])
    yield cluster.gateways
    cluster.stop()


def _replicated_queue(gws):
    """Create the topic (one queue, two replicas); (leader, follower) once both hold their roles of
    the queue and of its pop journal, the follower in sync on both."""
    admin = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values())})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=2)])[TOPIC].result(10)
    p = wait_for(lambda: (p := admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]).leader in gws
                 and len(p.isrs) == 2 and p, 20, what="a leader and two in-sync replicas")
    leader, follower = p.leader, next(r for r in p.replicas if r != p.leader)
    me = f"127.0.0.1:{gws[follower].remoting_port}"

    def journal_in_sync():
        state = remoting_call(gws[leader].remoting_port, RequestCode.REPLICA_STATE,
                              {"topic": journal_topic(TOPIC), "queueId": "0"})
        return state.get("role") == "leader" and me in (state.get("isr") or ())
    wait_for(journal_in_sync, 20, what="the pop journal replicated to the follower")
    return leader, follower


def pop_and_ack_part(namesrv: str, topic: str, group: str, invisible: float, want: int = 30):
    """Pop `want` messages with a native SimpleConsumer; ack the odd-numbered ones ("mNN" bodies).
    Returns (acked bodies, {in-flight body: wall time before which it must not come back})."""
    due: dict[bytes, float] = {}
    acked: set[bytes] = set()
    with SimpleConsumer(group, namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, subscriptions={topic: "*"},
                        await_duration=1) as c:
        deadline = time.monotonic() + 30
        while len(due) + len(acked) < want and time.monotonic() < deadline:
            asked = time.time()
            for m in c.receive(max_messages=want - len(due) - len(acked), invisible_duration=invisible):
                if int(m.body[1:]) % 2:
                    c.ack(m)  # with SYNC_MASTER answered once the replica holds it
                    acked.add(m.body)
                else:
                    due[m.body] = asked + invisible - 0.01  # the broker's pop time is in whole ms
    return acked, due


def pop_rest(namesrv: str, topic: str, group: str, invisible: float, sent: set, acked: set, due: dict,
             timeout: float = 60) -> None:
    """After the failover: the group (a new client: the old one's route names the dead broker) gets
    every message not acknowledged, once, the in-flight ones not before they are due, no
    acknowledged one; then, all acknowledged, nothing more."""
    again: dict[bytes, float] = {}  # body: when the receive that returned it came back
    with SimpleConsumer(group, namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, subscriptions={topic: "*"},
                        await_duration=1) as c:
        deadline = time.monotonic() + timeout
        while set(again) != sent - acked and time.monotonic() < deadline:
            batch = c.receive(max_messages=32, invisible_duration=invisible)
            back = time.time()
            for m in batch:
                assert m.body not in acked, f"{m.body!r} was acknowledged before the failover"
                assert m.body not in again, f"{m.body!r} delivered twice after the failover"
                again[m.body] = back
                c.ack(m)
        assert set(again) == sent - acked, f"lost: {sorted(sent - acked - set(again))}"
        early = {b: round(due[b] - t, 1) for b, t in again.items() if b in due and t < due[b]}
        assert not early, f"in flight at the kill, redelivered before their invisible time ran out: {early}"
        time.sleep(invisible / 5)
        for _ in range(3):  # everything is acknowledged: nothing comes back
            assert c.receive(max_messages=32, invisible_duration=invisible) == []


def test_acked_pops_stay_acked_and_in_flight_ones_keep_their_lock_across_a_failover(three):
    gws = three
    leader, follower = _replicated_queue(gws)
    sent = {b"m%02d" % i for i in range(40)}
    with Producer("pop-failover-p", gws[leader].namesrv) as p:
        for body in sorted(sent):
            p.send(Message(TOPIC, body))
    acked, due = pop_and_ack_part(gws[follower].namesrv, TOPIC, GROUP, INVISIBLE)
    assert len(acked) == 15 and len(due) == 15 and b"m00" in due  # the committed offset stays 0
    gws[leader].kill9()
    elected_after(gws, leader, TOPIC)
    pop_rest(gws[follower].namesrv, TOPIC, GROUP, INVISIBLE, sent, acked, due)
