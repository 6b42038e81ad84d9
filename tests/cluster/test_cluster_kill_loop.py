"""Twenty failovers through the cluster path (make cluster-long, CLUSTER_LONG=1): three gateways and a
real etcd, one partition with replication factor 3, an idempotent acks=all librdkafka producer. Each
round kills (-9) the current leader, waits for the election (etcd lease expiry, epoch + 1), restarts
the killed gateway and waits until it is back in the in-sync set. At the end every acknowledged
record is read back: none lost, none twice. Prints the figures docs/replication-figures.md quotes."""
from __future__ import annotations

import os
import statistics
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from raw_kafka import KafkaRaw
from test_cluster_clients import wait_for
from test_cluster_failover import NODES, three  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(not os.environ.get("CLUSTER_LONG"), reason="long: make cluster-long")
TOPIC = "failover"
ROUNDS = int(os.environ.get("CLUSTER_KILLS", "20"))


class Load:
    """The producer and what it was told: acknowledged values, failures, delivery times."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 120000})
        self.sent, self.acked, self.failed = 0, [], []
        self.timed: list[tuple[float, float]] = []  # (sent, acknowledged) of every acknowledged record

    def _delivered(self, err, msg, sent: float) -> None:
        if err:
            self.failed.append((msg.value(), str(err)))
        else:
            self.acked.append(msg.value())
            self.timed.append((sent, time.monotonic()))

    def first_ack_of_sent_after(self, moment: float) -> float | None:
        return min((acked for sent, acked in self.timed if sent > moment), default=None)

    def pump_until(self, condition, timeout: float, what: str):
        """Produce a record every few milliseconds until `condition()` is true."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.producer.produce(TOPIC, b"v%07d" % self.sent, partition=0,
                                  on_delivery=lambda err, msg, sent=time.monotonic(): self._delivered(err, msg, sent))
            self.sent += 1
            self.producer.poll(0.005)
            value = condition()
            if value:
                return value
        raise AssertionError(f"timed out waiting for {what}")


def _partition(gws, exclude=()):
    admin = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for n, g in gws.items() if n not in exclude)})
    return admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]


@pytest.mark.timeout(1800)
def test_twenty_leader_kills_lose_and_duplicate_nothing(three):  # noqa: F811
    gws = three
    bootstrap = ",".join(g.kafka_bootstrap for g in gws.values())
    for g in gws.values():  # every gateway has heard of the others
        wait_for(lambda: len(AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics(timeout=10).brokers) == 3,
                 30, what="three members")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=3)])[TOPIC].result(10)
    wait_for(lambda: (p := _partition(gws)).leader in NODES and len(p.isrs) == 3, 30, what="a leader, all in sync")
    load = Load(bootstrap)
    elections, resumed = [], []
    for round_ in range(ROUNDS):
        before = len(load.acked)
        load.pump_until(lambda: len(load.acked) >= before + 100, 60, "records acknowledged")
        leader = _partition(gws).leader
        gws[leader].kill9()
        killed_at = time.monotonic()
        new = load.pump_until(lambda: (p := _partition(gws, exclude=(leader,))).leader not in (-1, leader) and p,
                              60, "a new leader")
        elections.append(time.monotonic() - killed_at)
        first = load.pump_until(lambda: load.first_ack_of_sent_after(killed_at), 60,
                                "a record sent after the kill acknowledged")
        resumed.append(first - killed_at)
        gws[leader].start()
        load.pump_until(lambda: len(_partition(gws).isrs) == 3, 120, "the killed gateway back in sync")
        print(f"round {round_ + 1}: killed {leader}, new leader {new.leader} after {elections[-1]:.2f} s, "
              f"first record sent after the kill acknowledged {resumed[-1]:.2f} s after it")
    assert load.producer.flush(120) == 0
    assert not load.failed, f"{len(load.failed)} records failed: {load.failed[:3]}"
    leader = _partition(gws).leader
    raw = KafkaRaw("127.0.0.1", gws[leader].kafka_port)
    try:
        got = [v for _, v in raw.fetched_values(TOPIC)]
    finally:
        raw.close()
    acked = set(load.acked)
    lost = len(acked - set(got))
    duplicated = len(got) - len(set(got))
    print(f"{ROUNDS} kill -9 of the leader: {len(load.acked)} records acknowledged, {lost} lost, "
          f"{duplicated} duplicated; election {min(elections):.2f}-{max(elections):.2f} s "
          f"(median {statistics.median(elections):.2f}), first record sent after the kill acknowledged "
          f"{min(resumed):.2f}-{max(resumed):.2f} s (median {statistics.median(resumed):.2f}) after the kill")
    assert lost == 0 and duplicated == 0
    assert len(got) == len(acked)
