"""Kafka's transaction layout in a cluster (`--cluster-txn-layout kafka`; docs/cluster-txn-layout.md):
through three gateways, a transaction's records take their produce-time offsets in a replicated
partition, each end writes a marker taking one offset, read_committed consumers skip aborted records
and move past markers, and every replica derives the open transactions and the aborted index from its
log, so after the partition leader is `kill -9`ed the promoted follower holds its last stable offset at
the open transaction until the end arrives, and serves the aborted records to no reader (Kafka
read_committed, RocketMQ pull and POP); a partition added to a transaction without a record gets the
end's marker too (as Kafka marks every partition of a transaction). Each case runs first against three Apache Kafka 4.3.1 KRaft
nodes (CLUSTER_REFERENCE=1, as tests/cluster/reference_sides.py)."""
from __future__ import annotations

import os
import re
import time
import uuid

import pytest
from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from cluster.model import coordinator_of
from clusters import NODES, KraftNode, require_etcd, start_cluster, wait_for
from raw_kafka import KafkaRaw
from reference_sides import REFERENCE

SIDES = ["gateway", "kafka"] if REFERENCE else ["gateway"]


class Side:
    def __init__(self, nodes: dict, bootstrap_of, kill, start_all) -> None:
        self.nodes, self.bootstrap_of, self.kill, self.start_all = nodes, bootstrap_of, kill, start_all
        self.alive = set(nodes)

    @property
    def bootstrap(self) -> str:
        return ",".join(self.bootstrap_of(self.nodes[n]) for n in sorted(self.alive))

    def kill9(self, n: int) -> None:
        self.alive.discard(n)
        self.kill(self.nodes[n])


def _sides(kind: str, base):
    """The three nodes of `kind` under `base`, yielded as a Side and stopped after."""
    if kind == "kafka":
        from bench.brokers import java_classpath
        from clusters import kraft_nodes, start_kraft
        nodes = kraft_nodes(java_classpath("kafka"), str(base / "kafka"), 3, {
            "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 1000,
            "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 1,
            "offsets.topic.replication.factor": 3, "min.insync.replicas": 1,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
        try:
            start_kraft(nodes)
            yield Side(nodes, lambda n: n.kafka_bootstrap, lambda n: n.kill9(), lambda: start_kraft(nodes))
        finally:
            for node in nodes.values():
                node.stop()
        return
    require_etcd()
    cluster = start_cluster(base, NODES, extra_args=["--cluster-txn-layout", "kafka", "--cluster-txn-snapshot-s", "1"])
    try:
        yield Side(cluster.gateways, lambda g: g.kafka_bootstrap, lambda g: g.kill9(),
                   lambda: _start_when_let_go(cluster.gateways.values()))
    finally:
        cluster.stop()


@pytest.fixture(params=SIDES)
def side(request, tmp_path):
    """Three nodes of their own (a test that kills them)."""
    yield from _sides(request.param, tmp_path)


@pytest.fixture(scope="module", params=SIDES)
def shared(request, tmp_path_factory):
    """Three nodes the tests that kill none share (one start less)."""
    yield from _sides(request.param, tmp_path_factory.mktemp("shared"))


def _start_when_let_go(gateways) -> None:
    """Start `kill -9`ed gateways again once etcd let their node ids go (their 3 s leases expired)."""
    for g in gateways:
        wait_for(lambda: _started(g), 30, what="the node id free again")


def _started(g) -> bool:
    try:
        g.start()
        return True
    except RuntimeError as exc:  # "node id N is held by a live gateway": its lease has not expired yet
        assert "held by a live gateway" in str(exc), exc
        time.sleep(0.5)
        return False


def _topic(side: Side) -> tuple[str, int]:
    """A topic of one partition on all three nodes; (name, its leader) once every replica is in sync."""
    name = f"ctl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=3)])[name].result(30)

    def ready():
        p = admin.list_topics(name, timeout=10).topics[name].partitions.get(0)
        return p is not None and p.leader in side.alive and len(p.isrs) == 3 and p.leader
    return name, wait_for(ready, 60, what="a leader with its replicas in sync")


def _producer(side: Side, avoid: int | None = None) -> Producer:
    """A transactional producer (acks=all); with `avoid`, an id the gateway node `avoid` does not coordinate."""
    tid = f"ctl-{uuid.uuid4().hex[:8]}"
    while avoid is not None and coordinator_of(tid, list(NODES)) == avoid:
        tid = f"ctl-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": side.bootstrap, "transactional.id": tid, "linger.ms": 0,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    return p


def _transaction(p: Producer, topic: str, values: list[str], commit: bool | None) -> None:
    p.begin_transaction()
    for v in values:
        p.produce(topic, value=v.encode(), partition=0)
    assert p.flush(30) == 0
    if commit is True:
        p.commit_transaction(60)
    elif commit is False:
        p.abort_transaction(60)


def _read(bootstrap: str, topic: str, isolation: str, want: int, wait: float = 30.0):
    """([(offset, value)] read from offset 0 (polled 2 s past `want`), the position after them)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": isolation})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline, settle = [], time.monotonic() + wait, None
    try:
        while time.monotonic() < (settle or deadline):
            m = c.poll(0.3)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.value().decode()))
            if len(got) >= want and settle is None:
                settle = time.monotonic() + 2  # anything else (an aborted record) would come meanwhile
        return got, c.position([TopicPartition(topic, 0)])[0].offset
    finally:
        c.close()


def _latest(bootstrap: str, topic: str, isolation) -> int:
    """ListOffsets latest; retried while a new leader answers OFFSET_NOT_AVAILABLE (its high
    watermark not caught up yet, as Kafka answers right after a failover) or is not known yet."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)

    def answer():
        try:
            return (admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=isolation)[tp].result(30).offset,)
        except KafkaException as exc:
            print("ListOffsets:", exc)
            return None
    return wait_for(answer, 60, what="a ListOffsets answer")[0]


def test_markers_take_offsets_through_a_cluster(shared):
    side = shared
    topic, _leader = _topic(side)
    p = _producer(side)
    _transaction(p, topic, ["c0", "c1", "c2"], True)  # 0-2, commit marker 3
    _transaction(p, topic, ["a0", "a1"], False)  # 4-5, abort marker 6
    _transaction(p, topic, ["c3"], True)  # 7, commit marker 8
    committed, position = _read(side.bootstrap, topic, "read_committed", 4)
    assert committed == [(0, "c0"), (1, "c1"), (2, "c2"), (7, "c3")]
    assert position == 9  # past the last marker (librdkafka's 0061 lag and 0137 committed offsets)
    assert _read(side.bootstrap, topic, "read_uncommitted", 6)[0] == \
        [(0, "c0"), (1, "c1"), (2, "c2"), (4, "a0"), (5, "a1"), (7, "c3")]
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_COMMITTED) == 9


def test_the_promoted_follower_holds_an_open_transaction_and_hides_its_abort(side):
    topic, leader = _topic(side)
    p = _producer(side, avoid=leader)
    _transaction(p, topic, ["t0", "t1"], None)  # open: 0-1, in every in-sync replica (acks=all)
    plain = Producer({"bootstrap.servers": side.bootstrap, "acks": "all"})
    plain.produce(topic, value=b"p0", partition=0)  # 2, behind the open transaction
    assert plain.flush(30) == 0
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_COMMITTED) == 0
    side.kill9(leader)
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    wait_for(lambda: admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader in side.alive, 60,
             what="a new leader")
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 3
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_COMMITTED) == 0  # still held by the transaction
    assert _read(side.bootstrap, topic, "read_committed", 1, wait=3)[0] == []
    p.abort_transaction(60)  # marker 3, by the new leader
    got, position = _read(side.bootstrap, topic, "read_committed", 1)
    assert got == [(2, "p0")] and position == 4
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_COMMITTED) == 4
    if side.nodes[1].__class__.__name__ != "KraftNode":
        _rocketmq_sees_only(side, topic, [(2, "p0")])


def _rocketmq_sees_only(side: Side, topic: str, expected: list) -> None:
    """RocketMQ pull and POP readers (through a live gateway) get `expected` and nothing else."""
    from client import ConsumeFrom, LitePullConsumer, MessageQueue, SimpleConsumer
    namesrv = side.nodes[min(side.alive)].namesrv
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    pull = LitePullConsumer(f"pull-{uuid.uuid4().hex[:8]}", namesrv, auto_commit=False,
                            consume_from=ConsumeFrom.FIRST_OFFSET)
    pull.start()
    try:
        pull.assign([MessageQueue(topic, f"broker-{leader}", 0)])
        got, deadline = [], time.monotonic() + 20
        while len(got) < len(expected) and time.monotonic() < deadline:
            got += [(m.queue_offset, m.body.decode()) for m in pull.poll(1.0)]
        got += [(m.queue_offset, m.body.decode()) for m in pull.poll(1.0)]  # nothing more comes
    finally:
        pull.shutdown()
    assert got == expected
    popped = []
    with SimpleConsumer(f"pop-{uuid.uuid4().hex[:8]}", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={topic: "*"}, await_duration=1) as c:
        deadline = time.monotonic() + 20
        while len(popped) < len(expected) and time.monotonic() < deadline:
            for m in c.receive(max_messages=32, invisible_duration=60):
                popped.append((m.queue_offset, m.body.decode()))
                c.ack(m)
        popped += [(m.queue_offset, m.body.decode()) for m in c.receive(max_messages=32, invisible_duration=60)]
    assert sorted(popped) == expected


def test_a_transaction_past_its_timeout_is_aborted_by_the_coordinator(shared):
    """The producer goes silent with its transaction open: the coordinator aborts it once past
    transaction.timeout.ms (a marker: the last stable offset moves on, its records stay hidden)."""
    side = shared
    topic, _leader = _topic(side)
    p = Producer({"bootstrap.servers": side.bootstrap, "transactional.id": f"ctl-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 0, "transaction.timeout.ms": 2000})
    p.init_transactions(60)
    _transaction(p, topic, ["t0", "t1"], None)  # open: 0-1, then nothing more from this producer
    plain = Producer({"bootstrap.servers": side.bootstrap, "acks": "all"})
    plain.produce(topic, value=b"p0", partition=0)  # 2
    assert plain.flush(30) == 0
    wait_for(lambda: _latest(side.bootstrap, topic, IsolationLevel.READ_COMMITTED) == 4, 60,
             what="the timed-out transaction aborted (its marker at 3)")
    assert _read(side.bootstrap, topic, "read_committed", 1)[0] == [(2, "p0")]


def _snapshot_taken(side: Side, topic: str, offset: int) -> None:
    """Every gateway wrote its snapshot of `topic`'s partition 0 at `offset` (gateway.cluster.txn_snapshots)."""
    from gateway.cluster.txn_snapshots import decode
    for g in side.nodes.values():
        if not isinstance(g, KraftNode):  # (Kafka has none to wait for)
            path = os.path.join(g.data_dir, "txnsnap", f"{topic}.0.snap")
            wait_for(lambda: os.path.exists(path) and (decode(open(path, "rb").read()) or {}).get("offset") == offset,
                     30, what=f"the snapshot at {offset}")


def test_a_restart_of_every_node_keeps_an_open_transaction_and_its_abort(side):
    """Every node `kill -9`ed and started again: each restores its snapshot of the queue (taken at 5,
    with the open transaction and the abort) and replays the log after it, so the leader holds the
    last stable offset at the open transaction until its abort arrives, and the aborted index survives too."""
    topic, _leader = _topic(side)
    p = _producer(side)
    _transaction(p, topic, ["a0"], False)  # 0, abort marker 1
    _transaction(p, topic, ["t0", "t1"], None)  # open: 2-3
    plain = Producer({"bootstrap.servers": side.bootstrap, "acks": "all"})
    plain.produce(topic, value=b"p0", partition=0)  # 4
    assert plain.flush(30) == 0
    _snapshot_taken(side, topic, 5)
    plain.produce(topic, value=b"p1", partition=0)  # 5: after the snapshots, replayed at the start
    assert plain.flush(30) == 0
    for n in list(side.alive):
        side.kill9(n)
    side.alive = set(side.nodes)
    side.start_all()
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 6
    assert _latest(side.bootstrap, topic, IsolationLevel.READ_COMMITTED) == 2
    for g in side.nodes.values():  # each restored the queue from its snapshot, not from its whole log
        if not isinstance(g, KraftNode):
            with open(g.log_path, "rb") as f:
                restored = re.findall(rb"\((\d+) from snapshots, (\d+) entries replayed\)", f.read())[-1]
            assert int(restored[0]) >= 1 and int(restored[1]) < 6, restored
    p.abort_transaction(60)  # marker 6
    got, position = _read(side.bootstrap, topic, "read_committed", 2)
    assert got == [(4, "p0"), (5, "p1")] and position == 7


FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN = 10, 22, 24, 26


def _coordinator(bootstrap: str, tid: str) -> KafkaRaw:
    """A raw connection to `tid`'s transaction coordinator."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    probe = KafkaRaw(host, int(port))
    try:
        def found():
            c = probe.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})["coordinators"][0]
            return c if c["error_code"] == 0 else None
        c = wait_for(found, 60, what="the transaction coordinator")
    finally:
        probe.close()
    return KafkaRaw(c["host"], c["port"])


def _call_ok(client: KafkaRaw, api: int, version: int, body: dict, codes) -> dict:
    """The call, retried while it answers a retriable error (a coordinator or leader still loading)."""
    deadline = time.monotonic() + 60
    while True:
        out = client.call(api, version, body)
        if codes(out) == 0 or time.monotonic() > deadline:
            assert codes(out) == 0, out
            return out
        time.sleep(0.5)


def _end_empty(client: KafkaRaw, tid: str, pid: int, epoch: int, topic: str, commit: bool, end_version: int) -> dict:
    """A transaction that adds partition 0 of `topic`, writes nothing there, and ends."""
    _call_ok(client, ADD_PARTITIONS_TO_TXN, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                                "topics": [{"name": topic, "partitions": [0]}]},
             lambda out: out["results"][0]["results"][0]["partition_error_code"])
    return _call_ok(client, END_TXN, end_version, {"transactional_id": tid, "producer_id": pid,
                                                  "producer_epoch": epoch, "committed": commit},
                    lambda out: out["error_code"])


def _marked(bootstrap: str, topic: str, want: int) -> None:
    """Both isolation levels' latest offset reach `want` (Kafka writes its markers after answering EndTxn)."""
    wait_for(lambda: [_latest(bootstrap, topic, iso) for iso in
                      (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED)] == [want, want],
             30, what=f"latest offset {want} at both isolation levels")


@pytest.mark.parametrize("end_version", [4, 5])  # EndTxn v5: transactions v2 (each end bumps the epoch)
def test_a_partition_added_without_records_gets_the_end_marker_in_a_cluster(shared, end_version):
    """A partition added to a transaction without a record of it (AddPartitionsToTxn, then the end) gets
    the end's marker, as Kafka writes WriteTxnMarkers to every partition of a transaction (one gateway:
    tests/kafka/test_txn_empty_partition.py); the producer's next transaction its own, also under
    transactions v1, whose transactions share one epoch (before: v1's second got none)."""
    topic, _leader = _topic(shared)
    tid = f"empty-{uuid.uuid4().hex[:8]}"
    client = _coordinator(shared.bootstrap, tid)
    try:
        init = _call_ok(client, INIT_PRODUCER_ID, 5, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                                      "producer_id": -1, "producer_epoch": -1},
                        lambda out: out["error_code"])
        pid, epoch = init["producer_id"], init["producer_epoch"]
        ended = _end_empty(client, tid, pid, epoch, topic, True, end_version)
        _marked(shared.bootstrap, topic, 1)
        # the next transaction (v2: the epoch the end answered) gets a marker of its own
        _end_empty(client, tid, pid, ended["producer_epoch"] if end_version == 5 else epoch, topic, False, end_version)
        _marked(shared.bootstrap, topic, 2)
        if end_version == 4:  # and the one after it
            _end_empty(client, tid, pid, epoch, topic, True, end_version)
            _marked(shared.bootstrap, topic, 3)
    finally:
        client.close()
