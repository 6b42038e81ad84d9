"""What a test sees of the gateway's brokers, whether it is one process or, under `make test-shards`
(ROCKETGATE_TEST_SHARDS=N), `--shards N`: one process is Kafka node 0 and RocketMQ broker `broker-a`
with queue ids equal to partitions; shards are nodes 1..N named `broker-<node>`, each numbering the
queues it leads from 0 in partition order (docs/cluster.md "RocketMQ queue ids"). Expectations read
from Metadata through these instead of constants."""
from __future__ import annotations

from gateway_process import TEST_SHARDS


def broker_ids() -> list[int]:
    """The Kafka node ids Metadata lists."""
    return list(range(1, TEST_SHARDS + 1)) if TEST_SHARDS > 1 else [0]


def partition_leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """Kafka partition -> leader node id, from Metadata."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    return {p: m.leader for p, m in md.partitions.items()}


def leader_address(bootstrap: str, topic: str, partition: int) -> str:
    """host:port of the broker leading `partition` of `topic` (the bootstrap's own with one process):
    a raw request about a partition goes to its leader, as a Kafka client sends it."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    broker = md.brokers[md.topics[topic].partitions[partition].leader]
    return f"{broker.host}:{broker.port}"


def raw_leader(bootstrap: str, topic: str, partition: int = 0, timeout: float = 30.0) -> str:
    """host:port of the leader of `partition`, the topic auto-created by this Metadata request when
    missing and waited for until it has a leader (a cluster shows a new topic once etcd has it)."""
    import time

    from kafka_raw import RawClient

    client = RawClient(bootstrap, timeout=timeout)
    deadline = time.monotonic() + timeout
    try:
        while True:
            md = client.call(3, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                                     "allow_auto_topic_creation": True,
                                     "include_topic_authorized_operations": False})
            parts = {p["partition_index"]: p for p in md["topics"][0]["partitions"]}
            leader = parts[partition]["leader_id"] if partition in parts else -1
            if leader >= 0:
                broker = next(b for b in md["brokers"] if b["node_id"] == leader)
                return f"{broker['host']}:{broker['port']}"
            assert time.monotonic() < deadline, f"no leader for {topic}/{partition}: {md['topics'][0]}"
            time.sleep(0.1)
    finally:
        client.close()


def rocketmq_queue(leaders: dict[int, int], partition: int, cluster_ids: bool = False) -> tuple[str, int]:
    """(brokerName, broker-local queue id) a RocketMQ client knows Kafka partition `partition` by;
    with `cluster_ids` (a RocketMQ 5 Java client, which reads the route's static-topic mapping, as a
    send result names it: the leader's broker and the topic's own id, docs/cluster.md) the partition."""
    if TEST_SHARDS == 1:
        return "broker-a", partition
    leader = leaders[partition]
    if cluster_ids:
        return f"broker-{leader}", partition
    led = sorted(p for p, node in leaders.items() if node == leader)
    return f"broker-{leader}", led.index(partition)


def kafka_partition(leaders: dict[int, int], broker: str, queue: int) -> int:
    """The Kafka partition of a RocketMQ (brokerName, broker-local queue id)."""
    if TEST_SHARDS == 1:
        return queue
    node = int(broker.removeprefix("broker-"))
    return sorted(p for p, leader in leaders.items() if leader == node)[queue]


def broker_address(namesrv: str, topic: str, broker: str) -> str:
    """The master address of `broker` in `topic`'s route, as the name server at `namesrv` answers it."""
    from codec.remoting import RequestCode
    from codec.remoting.bodies import loads
    from remoting.wire import Peer

    peer = Peer(namesrv)
    try:
        route = loads(peer.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).body)
    finally:
        peer.close()
    (data,) = [b for b in route["brokerDatas"] if b["brokerName"] == broker]
    return data["brokerAddrs"].get(0) or data["brokerAddrs"]["0"]


def store_dirs(data_dir: str) -> list[str]:
    """The store directories of a gateway's data dir: the dir itself, or each shard's `shard-<i>`."""
    import os

    from gateway.shard_data import shard_dirs

    return [os.path.join(data_dir, d) for d in shard_dirs(data_dir)] or [data_dir]


def broker_names() -> list[str]:
    """The RocketMQ broker names the route lists; the first is the bootstrap's (shard 0's)."""
    return [f"broker-{n}" for n in broker_ids()] if TEST_SHARDS > 1 else ["broker-a"]


def one_queue_each() -> int:
    """Queues for a topic whose queue 0 every broker, the bootstrap's included, has: one per broker
    (the cluster places a topic's queues round-robin over its members)."""
    return len(broker_ids())



def leader_pid(gw, topic: str, partition: int = 0) -> int:
    """The process whose store holds `partition` of `topic`: the gateway, or the shard leading it."""
    return serving_pid(gw.proc.pid, gw.data_dir, partition_leaders(gw.kafka_bootstrap, topic)[partition] - 1)


def serving_pid(proc_pid: int, data_dir: str, shard: int = 0) -> int:
    """The process serving a gateway's bootstrap ports: the gateway itself, or under `--shards` its
    shard 0 (the supervisor, `proc_pid`, only starts and watches the shards), or shard `shard`."""
    if TEST_SHARDS == 1:
        return proc_pid
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "shards"))
    from sharded import shard_pids

    return shard_pids(data_dir)[shard]
