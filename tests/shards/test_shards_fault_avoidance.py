"""RocketMQ fault avoidance across shards (`--shards 2`, real processes): the native client's
producer (`client/`, MQFaultStrategy on, retries as RocketMQ's default) sends to a topic whose
queues both shards lead; shard 1 is killed with -9 and, before the supervisor has it serving
again, every send still succeeds on the live shard's queues (the first failed attempt marks
broker-2 unavailable, so later sends do not even try it). Every message acknowledged meanwhile is
in the live shard's queues."""
from __future__ import annotations

import collections
import os
import signal
import socket

import pytest

from client import Message
from client import Producer as NativeProducer
from sharded import Sharded, require_etcd, shard_pids, wait_for
from test_shards import create_topic
from test_shards_wrong_shard import remoting_addrs
from raw_kafka import KafkaRaw  # noqa: E402 (on the path test_shards_wrong_shard adds)

TOPIC = "avoid"


@pytest.fixture
def sharded(tmp_path):
    require_etcd()
    gw = Sharded(str(tmp_path))
    try:
        yield gw.start()
    finally:
        gw.stop()


def listening(addr: str) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def count_attempts(producer: NativeProducer) -> collections.Counter:
    """Broker name -> send attempts made from now on (each retry counts)."""
    counts, send_to = collections.Counter(), producer._impl._send_to

    async def counted(mq, *args):
        counts[mq.broker_name] += 1
        return await send_to(mq, *args)
    producer._impl._send_to = counted
    return counts


def test_sends_go_on_at_the_live_shard_while_one_is_dead(sharded):
    leaders = create_topic(sharded, TOPIC)
    dead_addr = remoting_addrs(sharded, TOPIC)["broker-2"]
    acked = []
    with NativeProducer("avoid-pg", sharded.namesrv, latency_fault_enable=True, retry_times=2) as producer:
        before = [producer.send(Message(TOPIC, b"before-%d" % i)) for i in range(20)]
        assert {r.queue.broker_name for r in before} == {"broker-1", "broker-2"}
        old = shard_pids(sharded.data_dir)[1]
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: not listening(dead_addr), what="shard 1's remoting port to close")
        attempts = count_attempts(producer)
        during = []
        for i in range(100):  # until the supervisor has shard 1 listening again, or 100 sends
            if listening(dead_addr) and during:
                break
            result = producer.send(Message(TOPIC, b"during-%d" % i))  # raises if every attempt failed
            during.append(result.queue.broker_name)
            acked.append(b"during-%d" % i)
    print(f"{len(during)} sends while shard 1 was down, on {sorted(set(during))}")
    assert during and set(during) == {"broker-1"}
    # fault avoidance: the first failed attempt marks broker-2 unavailable, later sends do not try it
    assert attempts["broker-2"] <= 1 < attempts["broker-1"], attempts
    live = KafkaRaw("127.0.0.1", sharded.kafka_port)  # shard 0, which leads broker-1's queues
    try:
        stored = [v for p, leader in leaders.items() if leader == 1 for _, v in live.fetched_values(TOPIC, p)]
    finally:
        live.close()
    assert sorted(v for v in stored if v.startswith(b"during")) == sorted(acked)
