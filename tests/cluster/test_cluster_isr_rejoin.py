"""A follower that catches up while it is not a live member rejoins etcd's in-sync set once it is
one again (issue 26, finding 8). Gateway 1 reaches etcd through a TCP proxy the test cuts; it is
paused until the leader of another partition shrinks the in-sync set without it and its lease is
gone, then resumed while still cut from etcd: it fetches from the leader and catches up, but the
leader writes only live members to etcd (KIP-841), so etcd's set stays without it. Before the fix
the leader kept gateway 1 in its own set, so no later fetch counted as catching up again and the
set in etcd (what Metadata reports and elections use) never got it back after the cut healed."""
from __future__ import annotations

import os
import signal

from confluent_kafka.admin import AdminClient

from raw_kafka import KafkaRaw, batch
from test_cluster_clients import wait_for
from test_cluster_fencing import TOPIC, _partition_led_by_gateway_1, _partitions, partitionable  # noqa: F401 (a fixture)


def _members(gw) -> set[int]:
    return set(AdminClient({"bootstrap.servers": gw.kafka_bootstrap}).list_topics(timeout=10).brokers)


def test_a_follower_caught_up_while_not_a_member_rejoins_the_in_sync_set(partitionable):  # noqa: F811
    _etcd, proxy, gws = partitionable
    _partition_led_by_gateway_1(gws)
    theirs = next(p.id for p in _partitions(gws[2]).values() if p.leader == 2)
    raw = KafkaRaw("127.0.0.1", gws[2].kafka_port, timeout=30)
    try:
        assert raw.produce(TOPIC, batch([b"before"]), -1, theirs)[0] == 0
        proxy.cut()
        os.kill(gws[1].proc.pid, signal.SIGSTOP)
        try:
            wait_for(lambda: 1 not in _partitions(gws[2])[theirs].isrs, 60, what="the in-sync set shrunk without 1")
            wait_for(lambda: 1 not in _members(gws[2]), 60, what="gateway 1's lease gone")
            assert raw.produce(TOPIC, batch([b"while-out"]), -1, theirs)[0] == 0
            caught_up = f"{TOPIC}/{theirs}: ISR "
            seen = gws[2].log().count(caught_up)
        finally:
            os.kill(gws[1].proc.pid, signal.SIGCONT)
        # gateway 1, still cut from etcd, fetches from the leader and is taken back into its own set
        wait_for(lambda: gws[2].log().count(caught_up) > seen, 60, what="the leader taking gateway 1 back")
        assert 1 not in _members(gws[2])  # it caught up while not a member: etcd's set stayed without it
    finally:
        raw.close()
    proxy.restore()
    wait_for(lambda: 1 in _members(gws[2]), 60, what="gateway 1 a member again")
    wait_for(lambda: 1 in _partitions(gws[2])[theirs].isrs, 30, what="gateway 1 back in etcd's in-sync set")
