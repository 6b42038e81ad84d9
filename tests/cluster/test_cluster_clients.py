"""Three real gateways + a real etcd, with real clients: topics spread across the gateways, Kafka
(kafka-python, confluent-kafka, the Java client) and RocketMQ (the Java client) producing and
consuming across queues led by different gateways, NOT_LEADER_OR_FOLLOWER from a non-leader,
FindCoordinator by stable hashing, producer ids from etcd blocks, one offset table for both
protocols. (These scenarios were first run against a real Kafka / RocketMQ single broker in
tests/compat; here the point is the spreading over brokers.)"""
from __future__ import annotations

import collections
import json
import os
import shutil
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic as KpNewTopic

from clusters import NODES, require_etcd, start_cluster, wait_for
from codec.remoting.message import parse_msg_id, properties_to_string
from codec.remoting import RemotingCommand
from raw_kafka import KafkaRaw, batch, remoting_call, send_command
from gateway_process import free_port


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    require_etcd()
    cluster = start_cluster(tmp_path_factory.mktemp("cluster"), NODES)
    yield cluster.etcd, cluster.gateways
    cluster.stop()


def bootstrap(gws) -> str:
    return ",".join(g.kafka_bootstrap for g in gws.values())


def test_metadata_lists_every_gateway_and_spreads_leaders(three):
    _, gws = three
    admin = AdminClient({"bootstrap.servers": gws[2].kafka_bootstrap})
    admin.create_topics([NewTopic("spread", num_partitions=6, replication_factor=2)])["spread"].result(10)
    for g in gws.values():  # every gateway answers the same, whichever created the topic
        md = AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics("spread", timeout=10)
        assert sorted(md.brokers) == list(NODES)
        assert {b.port for b in md.brokers.values()} == {x.kafka_port for x in gws.values()}
        parts = md.topics["spread"].partitions
        assert collections.Counter(p.leader for p in parts.values()) == {1: 2, 2: 2, 3: 2}
        for p in parts.values():
            assert len(p.replicas) == 2 and p.replicas[0] == p.leader and p.isrs == p.replicas


def test_replication_factor_above_the_member_count_is_refused(three):
    _, gws = three
    admin = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap})
    with pytest.raises(Exception, match="REPLICATION_FACTOR|replication factor"):
        admin.create_topics([NewTopic("too-many", num_partitions=1, replication_factor=4)])["too-many"].result(10)


def test_kafka_python_and_confluent_across_leaders(three):
    _, gws = three
    KafkaAdminClient(bootstrap_servers=gws[3].kafka_bootstrap).create_topics([KpNewTopic("kp", 6, 1)])
    producer = KafkaProducer(bootstrap_servers=gws[1].kafka_bootstrap, acks="all")
    for i in range(60):
        producer.send("kp", f"kp-{i}".encode(), partition=i % 6)
    producer.flush()
    producer.close()
    c = Consumer({"bootstrap.servers": gws[2].kafka_bootstrap, "group.id": "kp-g", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["kp"])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 60 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.partition(), m.value().decode()))
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition("kp", p) for p in range(6)], timeout=10)
    c.close()
    assert sorted(v for _, v in got) == sorted(f"kp-{i}" for i in range(60))
    assert all(int(v.split("-")[1]) % 6 == p for p, v in got)
    assert [tp.offset for tp in committed] == [10] * 6


def test_a_non_replica_answers_not_leader_or_follower(three):
    _, gws = three
    md = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap}).list_topics("spread", timeout=10)
    replicas = md.topics["spread"].partitions[0].replicas
    other = next(n for n in NODES if n not in replicas)  # not even a follower (Kafka serves those fetches)
    raw = KafkaRaw("127.0.0.1", gws[other].kafka_port)
    try:
        assert raw.produce_error("spread", 0, b"x") == 6  # NOT_LEADER_OR_FOLLOWER
        assert raw.list_offsets_error("spread", 0) == 6
        assert raw.fetch_error("spread", 0) == 6
    finally:
        raw.close()


def test_not_leader_answers_name_the_leader(three):
    """KIP-951 leader discovery: Produce v10+ and Fetch v16+ answered NOT_LEADER_OR_FOLLOWER carry the
    partition's current leader and epoch and that leader's endpoint, as Kafka's brokers answer."""
    _, gws = three
    md = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap}).list_topics("spread", timeout=10)
    leader = md.topics["spread"].partitions[0].leader
    other = next(n for n in NODES if n != leader)
    raw = KafkaRaw("127.0.0.1", gws[other].kafka_port)
    endpoint = [{"node_id": leader, "host": "127.0.0.1", "port": gws[leader].kafka_port, "rack": None}]
    fetch_body = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
                  "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
                  "topics": [{"topic_id": _topic_ids({leader: gws[leader]}, "spread")[leader],
                              "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    try:
        produced = raw.call(0, 10, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "spread", "partition_data": [{"index": 0, "records": batch([b"x"])}]}]})
        p = produced["responses"][0]["partition_responses"][0]
        assert p["error_code"] == 6 and p["current_leader"]["leader_id"] == leader
        assert produced["node_endpoints"] == endpoint
        fetched = raw.call(1, 16, fetch_body)
        f = fetched["responses"][0]["partitions"][0]
        assert f["error_code"] == 6 and f["current_leader"] == p["current_leader"]
        assert fetched["node_endpoints"] == endpoint
    finally:
        raw.close()
    at_leader = KafkaRaw("127.0.0.1", gws[leader].kafka_port)
    try:  # the leader's answers have no error: nothing added
        assert at_leader.produce("spread", batch([b"y"]))[0] == 0
        assert at_leader.call(1, 16, fetch_body)["responses"][0]["partitions"][0]["error_code"] == 0
    finally:
        at_leader.close()


def test_producer_ids_come_in_blocks_never_reused(three):
    _, gws = three
    seen = []
    for g in gws.values():
        for _ in range(2):
            p = Producer({"bootstrap.servers": g.kafka_bootstrap, "enable.idempotence": True})
            p.produce("kp", b"idem", partition=0)
            p.flush(10)
            seen.append(p)
    # confluent does not expose the id; the raw InitProducerId does
    ids = []
    for g in gws.values():
        raw = KafkaRaw("127.0.0.1", g.kafka_port)
        try:
            ids += [raw.init_producer_id() for _ in range(3)]
        finally:
            raw.close()
    assert len(set(ids)) == len(ids) == 9
    assert len({i // 1000 for i in ids}) == 3  # one block per gateway


def test_find_coordinator_is_the_same_answer_on_every_gateway(three):
    _, gws = three
    answers = collections.defaultdict(set)
    for g in gws.values():
        raw = KafkaRaw("127.0.0.1", g.kafka_port)
        try:
            for i in range(30):
                answers[f"grp-{i}"].add(raw.find_coordinator(f"grp-{i}"))
        finally:
            raw.close()
    assert all(len(a) == 1 for a in answers.values())
    assert {next(iter(a)) for a in answers.values()} == set(NODES)  # groups spread over the gateways


def test_rocketmq_route_has_one_broker_per_gateway(three):
    _, gws = three
    route = remoting_call(gws[1].remoting_port, 105, {"topic": "spread"})  # GET_ROUTEINFO_BY_TOPIC
    assert sorted(b["brokerName"] for b in route["brokerDatas"]) == ["broker-1", "broker-2", "broker-3"]
    assert sorted((q["brokerName"], q["writeQueueNums"]) for q in route["queueDatas"]) == [
        ("broker-1", 2), ("broker-2", 2), ("broker-3", 2)]


def led_by(gws, topic: str) -> dict[int, list[int]]:
    md = AdminClient({"bootstrap.servers": bootstrap(gws)}).list_topics(topic, timeout=10)
    out = collections.defaultdict(list)
    for p in md.topics[topic].partitions.values():
        out[p.leader].append(p.id)
    return {n: sorted(ps) for n, ps in out.items()}


def test_one_offset_table_for_both_protocols_on_every_gateway(three):
    _, gws = three
    led = led_by(gws, "kp")
    # RocketMQ commits on each broker (its local queue 0 = the first partition it leads) ...
    for n, g in gws.items():
        r = remoting_call(g.remoting_port, 15, {"consumerGroup": "x-g", "topic": "kp", "queueId": "0",
                                                "commitOffset": str(100 + n)})
        assert r.code == 0
    # ... are what a Kafka client of the group reads (from the group's coordinator)
    c = Consumer({"bootstrap.servers": bootstrap(gws), "group.id": "x-g"})
    want = {led[n][0]: 100 + n for n in gws}
    got = wait_for(lambda: {tp.partition: tp.offset for tp in c.committed(
        [TopicPartition("kp", p) for p in want], timeout=10)} == want or None, what="mirrored offsets")
    c.close()
    assert got
    # and the Kafka group's commits (10 per partition, made on its coordinator) are what every broker answers
    for n, g in gws.items():
        for local in range(len(led[n])):
            r = wait_for(lambda: (x := remoting_call(g.remoting_port, 14, {
                "consumerGroup": "kp-g", "topic": "kp", "queueId": str(local)})).ext_fields.get("offset") == "10"
                and x, what="offset on broker")
            assert r.code == 0


def test_a_delayed_message_is_delivered_once_in_the_cluster(three):
    """The schedule topic is node-local (docs/cluster.md): only the gateway that took the send
    delivers the delayed message, so the cluster holds exactly one copy once it is due."""
    _, gws = three
    admin = AdminClient({"bootstrap.servers": bootstrap(gws)})
    admin.create_topics([NewTopic("delayed", num_partitions=3, replication_factor=1)])["delayed"].result(10)
    wait_for(lambda: len(led_by(gws, "delayed")) == 3, what="delayed placed on every gateway")
    props = properties_to_string({"DELAY": "1", "UNIQ_KEY": "delayed-once"})  # level 1: 1 s
    for n, g in gws.items():
        r = remoting_call(g.remoting_port, 10, {  # SEND_MESSAGE to broker-local queue 0
            "producerGroup": "delay-pg", "topic": "delayed", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
            "queueId": "0", "sysFlag": "0", "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
            "properties": props, "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, b"due-%d" % n)
        assert r.code == 0, r.remark

    def copies():
        out = []
        for leader, partitions in led_by(gws, "delayed").items():
            raw = KafkaRaw("127.0.0.1", gws[leader].kafka_port)
            try:
                out += [v for p in partitions for _, v in raw.fetched_values("delayed", p)]
            finally:
                raw.close()
        return out
    got = wait_for(lambda: len(c := copies()) >= 3 and c, 20, what="the delayed messages delivered")
    time.sleep(2)  # long enough for a second delivery, were there one
    assert sorted(copies()) == [b"due-1", b"due-2", b"due-3"], got


def test_refuses_a_live_node_id_and_a_foreign_data_dir(three, tmp_path):
    etcd, gws = three
    import subprocess
    import sys
    from gateway_process import ROOT
    base = ["--host", "127.0.0.1", "--kafka-port", str(free_port()), "--remoting-port", str(free_port()),
            "--cluster", etcd.url]
    taken = subprocess.run([sys.executable, "-m", "gateway", "--data-dir", str(tmp_path / "x"), *base,
                            "--node-id", "2"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert taken.returncode == 2 and "node id 2 is held by a live gateway" in taken.stderr
    # a live gateway's data dir is refused by its lock first (tests/gateway/test_data_dir_lock.py) ...
    live = subprocess.run([sys.executable, "-m", "gateway", "--data-dir", gws[1].data_dir, *base,
                           "--node-id", "9"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert live.returncode == 2 and "is locked by gateway" in live.stderr
    # ... and a node's data dir that no process holds, by the node id it records
    from gateway.cluster.service import NODE_ID_FILE
    idle = tmp_path / "node1-copy"
    idle.mkdir()
    shutil.copy(os.path.join(gws[1].data_dir, NODE_ID_FILE), idle / NODE_ID_FILE)
    foreign = subprocess.run([sys.executable, "-m", "gateway", "--data-dir", str(idle), *base,
                              "--node-id", "9"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert foreign.returncode == 2 and "belongs to node id 1, not 9" in foreign.stderr


def test_admin_reassign_moves_a_partition_and_fences_the_old_leader(three):
    etcd, gws = three
    from gateway.admin.cli import main
    KafkaAdminClient(bootstrap_servers=gws[1].kafka_bootstrap).create_topics([KpNewTopic("moving", 1, 1)])
    leaders = wait_for(lambda: (led := led_by(gws, "moving")) and -1 not in led and led, what="a leader")
    old = next(iter(leaders))
    new = next(n for n in NODES if n != old)
    assert main(["cluster", "reassign", "--etcd", etcd.url, "moving", "0", "--replicas", f"{new},{old}"]) == 0
    md = wait_for(lambda: led_by(gws, "moving") == {new: [0]}, what="the new leader")
    assert md
    for n, g in gws.items():  # every gateway follows the watch
        raw = KafkaRaw("127.0.0.1", g.kafka_port)
        try:
            code = wait_for(lambda: (c := raw.produce_error("moving", 0, b"m")) == (0 if n == new else 6) or None,
                            what=f"node {n} to follow")
            assert code
        finally:
            raw.close()
    assert main(["cluster", "reassign", "--etcd", etcd.url, "moving", "0", "--replicas", "7"]) == 1  # not live


MOCK, JAVA_5_3_3 = "__syslo__global__", 479  # a static topic's broker name; MQVersion.Version.V5_3_3.ordinal()


def test_rocketmq_route_maps_cluster_queue_ids_and_they_survive_a_move(three):
    """The route maps each cluster queue id to its leader (RIP-21 static topic; shape as RocketMQ 5.5
    answers for `mqadmin updateStaticTopic`). A RocketMQ 5 Java client then names the cluster's ids:
    a send lands in that queue, offsets and locks under the mock broker mean it too, and still do at
    the queue's new leader. Before, ids were ranks among a gateway's queues (issue 26, seed 5102)."""
    etcd, gws = three
    from gateway.admin.cli import main
    admin = AdminClient({"bootstrap.servers": bootstrap(gws)})
    admin.create_topics([NewTopic("mapped", 6, 1)])["mapped"].result(10)
    led = wait_for(lambda: (x := led_by(gws, "mapped")) and -1 not in x and sum(map(len, x.values())) == 6 and x)
    route = remoting_call(gws[1].remoting_port, 105, {"topic": "mapped"})
    assert {b: (m["bname"], m["scope"], m["totalQueues"], sorted(map(int, m["currIdMap"])))
            for b, m in route["topicQueueMappingByBroker"].items()} == {
        f"broker-{n}": (f"broker-{n}", "__global__", 6, ps) for n, ps in led.items()}
    holder, q = next((n, ps[-1]) for n, ps in led.items() if ps[-1] >= len(ps))  # an id that is no rank there
    detail = remoting_call(gws[holder].remoting_port, 351, {"topic": "mapped"})["mappingDetail"]  # GET_TOPIC_CONFIG
    assert detail["hostedQueues"][str(q)][0]["queueId"] == len(led[holder]) - 1  # for tools: its broker-local id
    send = RemotingCommand(10, {"producerGroup": "pg", "topic": "mapped", "queueId": str(q), "sysFlag": "0",
                                "bornTimestamp": "0", "flag": "0", "properties": "", "bname": f"broker-{holder}"},
                           b"to-queue-%d" % q, version=JAVA_5_3_3)
    assert send_command(gws[holder].remoting_port, send).ext_fields["queueId"] == str(q)
    raw = KafkaRaw("127.0.0.1", gws[holder].kafka_port)
    assert [v for _, v in raw.fetched_values("mapped", q)] == [b"to-queue-%d" % q]
    raw.close()
    mq = {"topic": "mapped", "brokerName": MOCK, "queueId": q}
    lock = json.dumps({"consumerGroup": "mg", "clientId": "c1", "mqSet": [mq]}).encode()
    assert remoting_call(gws[holder].remoting_port, 41, {}, lock) == {"lockOKMQSet": [mq]}  # LOCK_BATCH_MQ
    fields = {"consumerGroup": "mg", "topic": "mapped", "queueId": str(q), "bname": MOCK}
    assert remoting_call(gws[holder].remoting_port, 15, {**fields, "commitOffset": "1"}).code == 0
    other = next(n for n in NODES if n != holder)
    assert remoting_call(gws[other].remoting_port, 14, fields).code == 16  # not its queue: NO_PERMISSION
    assert main(["cluster", "reassign", "--etcd", etcd.url, "mapped", str(q), "--replicas", f"{other},{holder}"]) == 0
    wait_for(lambda: q in led_by(gws, "mapped").get(other, []) and str(q) in remoting_call(
        gws[other].remoting_port, 105, {"topic": "mapped"})["topicQueueMappingByBroker"][f"broker-{other}"]["currIdMap"],
        what="the queue's new leader in the route")
    assert wait_for(lambda: remoting_call(gws[other].remoting_port, 14, fields).ext_fields.get("offset") == "1",
                    what="the offset at the new leader")


def test_a_java_5_end_at_another_gateway_decides_the_half_where_it_is(three):
    """A RocketMQ 5 Java producer ends a static topic's transaction at its name server, any gateway
    (gateway.cluster.end_forward): it is passed on to the gateway holding the half, which decides it
    only if it is the same message. Before, the end was lost and the check-back decided 30 s later."""
    _, gws = three
    admin = AdminClient({"bootstrap.servers": bootstrap(gws)})
    admin.create_topics([NewTopic("txmoved", 1, 1)])["txmoved"].result(10)
    holder = next(iter(wait_for(lambda: (x := led_by(gws, "txmoved")) and -1 not in x and x)))
    props = properties_to_string({"TRAN_MSG": "true", "PGROUP": "tpg", "UNIQ_KEY": "uniq-tx-1"})
    half = send_command(gws[holder].remoting_port, RemotingCommand(10, {
        "producerGroup": "tpg", "topic": "txmoved", "queueId": "0", "sysFlag": "4", "bornTimestamp": "0",
        "flag": "0", "properties": props, "bname": f"broker-{holder}"}, b"ended-elsewhere", version=JAVA_5_3_3))
    assert half.code == 0, half.remark
    end = {"producerGroup": "tpg", "tranStateTableOffset": half.ext_fields["queueOffset"], "commitOrRollback": "8",
           "commitLogOffset": str(parse_msg_id(half.ext_fields["msgId"])[2]), "fromTransactionCheck": "false",
           "msgId": "uniq-tx-1", "transactionId": "uniq-tx-1", "topic": "txmoved"}  # no bname: the name server's
    elsewhere = gws[next(n for n in NODES if n != holder)].remoting_port
    assert send_command(elsewhere, RemotingCommand(37, {**end, "msgId": "another"}, version=JAVA_5_3_3)).code == 1
    assert send_command(elsewhere, RemotingCommand(37, end, version=JAVA_5_3_3)).code == 0  # END_TRANSACTION
    raw = KafkaRaw("127.0.0.1", gws[holder].kafka_port)
    try:
        assert [v for _, v in raw.fetched_values("txmoved", 0)] == [b"ended-elsewhere"]
    finally:
        raw.close()


def test_grown_and_deleted_topics_follow_on_every_gateway(three):
    _, gws = three
    from confluent_kafka.admin import NewPartitions
    admin = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap})
    admin.create_topics([NewTopic("grows", num_partitions=2, replication_factor=1)])["grows"].result(10)
    admin.create_partitions([NewPartitions("grows", 6)])["grows"].result(10)
    for g in gws.values():
        md = wait_for(lambda: (m := AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics("grows", timeout=10))
                      and len(m.topics["grows"].partitions) == 6 and m, what="6 partitions")
        assert {p.leader for p in md.topics["grows"].partitions.values()} == set(NODES)
    other = AdminClient({"bootstrap.servers": gws[2].kafka_bootstrap})  # kept alive until the future is done
    other.delete_topics(["grows"])["grows"].result(10)
    for g in gws.values():
        assert wait_for(lambda: "grows" not in AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics(
            timeout=10).topics, what="the topic gone everywhere")


def test_a_killed_gateway_leaves_metadata_and_routes(three):
    """Last in this module: kill -9 node 3; its lease (3 s) expires and every view drops it. The
    partitions it led (replication factor 2) get the first live in-sync replica as leader, with the
    epoch bumped; when it comes back it follows them (no preferred-leader election, as Kafka)."""
    _, gws = three
    from client.model import Message
    from client.sync import Producer
    led = led_by(gws, "spread")
    with Producer("fault-pg", f"{gws[1].namesrv};{gws[2].namesrv}", latency_fault_enable=True) as producer:
        assert len({q.broker_name for q in producer.queues("spread")}) == 3  # the route still has broker-3
        gws[3].kill9()
        started = time.monotonic()
        # before its lease expires: sends that pick broker-3 fail and are retried on another broker
        results = [producer.send(Message("spread", f"fault-{i}".encode())) for i in range(30)]
    assert {r.queue.broker_name for r in results} <= {"broker-1", "broker-2"} and len(results) == 30
    admin = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap})
    md = wait_for(lambda: (m := admin.list_topics("spread", timeout=10)) and sorted(m.brokers) == [1, 2]
                  and all(p.leader in (1, 2) for p in m.topics["spread"].partitions.values()) and m,
                  what="broker 3 to leave and its partitions to get new leaders")
    print(f"broker 3 left Metadata and was replaced {time.monotonic() - started:.1f} s after kill -9")
    route = remoting_call(gws[2].remoting_port, 105, {"topic": "spread"})
    assert sorted(b["brokerName"] for b in route["brokerDatas"]) == ["broker-1", "broker-2"]
    assert sorted(q["brokerName"] for q in route["queueDatas"]) == ["broker-1", "broker-2"]
    gws[3].start()  # comes back with its data dir and node id: a follower of what it led
    md = wait_for(lambda: (m := admin.list_topics("spread", timeout=10)) and sorted(m.brokers) == [1, 2, 3] and m,
                  what="broker 3 to return")
    for p in md.topics["spread"].partitions.values():
        if p.id in led[3]:
            assert p.leader in (1, 2) and 3 in p.replicas


def _topic_ids(gws, topic: str) -> dict[int, bytes]:
    """Each gateway's Metadata v12 id of `topic` (absent while a gateway does not know the topic)."""
    out = {}
    for node, g in gws.items():
        c = KafkaRaw("127.0.0.1", g.kafka_port)
        try:
            t = c.call(3, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                               "allow_auto_topic_creation": False})["topics"][0]
        finally:
            c.close()
        if t["error_code"] == 0:
            out[node] = bytes(t["topic_id"])
    return out


def test_every_gateway_answers_the_creators_topic_id(three):
    """KIP-516: the id made by the creating gateway travels with the topic's record in etcd; a
    topic deleted and re-created gets a new one, again the same everywhere."""
    _, gws = three
    admin = AdminClient({"bootstrap.servers": gws[2].kafka_bootstrap})
    admin.create_topics([NewTopic("ids", num_partitions=3, replication_factor=2)])["ids"].result(10)
    first = wait_for(lambda: (lambda ids: ids if len(ids) == len(gws) and len(set(ids.values())) == 1 else None)(
        _topic_ids(gws, "ids")), what="one id on every gateway")
    admin.delete_topics(["ids"])["ids"].result(10)
    wait_for(lambda: not _topic_ids(gws, "ids"), what="deleted everywhere")
    other = AdminClient({"bootstrap.servers": gws[3].kafka_bootstrap})
    other.create_topics([NewTopic("ids", num_partitions=3, replication_factor=2)])["ids"].result(10)
    second = wait_for(lambda: (lambda ids: ids if len(ids) == len(gws) and len(set(ids.values())) == 1 else None)(
        _topic_ids(gws, "ids")), what="one new id on every gateway")
    assert set(second.values()) != set(first.values())
