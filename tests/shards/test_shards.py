"""`python -m gateway --shards 2`, real: each shard is a Kafka broker in Metadata and leads its own
partitions; Kafka clients (confluent-kafka, kafka-python) produce and consume every record once
across both shards, a consumer group's offsets commit across them, the native RocketMQ client sends
and pulls through the bootstrap name server port with both shards in the route, kill -9 of a shard
is repaired by the supervisor with the acknowledged records kept, and SIGTERM stops the tree with 0."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from acked_records import read_topic
from client import ConsumeFrom, LitePullConsumer, Message
from client import Producer as NativeProducer
from sharded import Sharded, require_etcd, shard_pids, wait_for

TOPIC, PARTITIONS, RECORDS = "sharded-orders", 4, 200


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    require_etcd()
    gw = Sharded(str(tmp_path_factory.mktemp("shards")))
    try:
        gw.start()
        yield gw
    finally:
        gw.stop()


def create_topic(gw: Sharded, topic: str) -> dict[int, int]:
    """Partition -> leader, once every partition has one."""
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)

    def leaders():
        md = admin.list_topics(topic, timeout=5).topics[topic]
        found = {p: m.leader for p, m in md.partitions.items()}
        return len(found) == PARTITIONS and all(v > 0 for v in found.values()) and found
    return wait_for(leaders, what="every partition to have a leader")


def produce(gw: Sharded, topic: str, values: list[bytes]) -> None:
    """Every value acknowledged (acks=all) or the test fails."""
    producer = Producer({"bootstrap.servers": gw.kafka_bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % PARTITIONS,
                         on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(30) == 0 and errors == []


def consume(gw: Sharded, topic: str, group: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=gw.kafka_bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(1000).values():
                got += [r.value for r in records]
        consumer.poll(500)  # nothing more comes
        consumer.commit()
        return got
    finally:
        consumer.close()


def test_every_shard_is_a_broker_and_every_record_comes_back_once(sharded):
    leaders = create_topic(sharded, TOPIC)
    assert set(leaders.values()) == {1, 2}  # each shard leads its own partitions
    values = [b"r%03d" % i for i in range(RECORDS)]
    produce(sharded, TOPIC, values)
    got = consume(sharded, TOPIC, "sharded-g1", RECORDS)
    assert sorted(got) == values


def test_a_group_commits_offsets_across_shards(sharded):
    """The group's offsets are committed for partitions of both shards: a new member of the group
    gets only what was produced after the commit."""
    consume(sharded, TOPIC, "sharded-g2", RECORDS)
    check = KafkaConsumer(bootstrap_servers=sharded.kafka_bootstrap, group_id="sharded-g2",
                          enable_auto_commit=False)
    try:
        committed = {p: check.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)}
    finally:
        check.close()
    assert committed == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
    later = [b"later%d" % i for i in range(8)]
    produce(sharded, TOPIC, later)
    assert sorted(consume(sharded, TOPIC, "sharded-g2", len(later))) == later


def test_native_client_sends_and_pulls_through_the_bootstrap_name_server(sharded):
    topic = "sharded-native"
    create_topic(sharded, topic)
    with NativeProducer("sharded-native-pg", sharded.namesrv) as producer:
        assert {q.broker_name for q in producer.queues(topic)} == {"broker-1", "broker-2"}
        results = [producer.send(Message(topic, b"n%02d" % i)) for i in range(20)]
    assert {r.queue.broker_name for r in results} == {"broker-1", "broker-2"}
    consumer = LitePullConsumer("sharded-native-cg", sharded.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    consumer.subscribe(topic)
    consumer.start()
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < 20 and time.monotonic() < deadline:
            got += consumer.poll(1.0)
    finally:
        consumer.shutdown()
    assert sorted(m.body for m in got) == [b"n%02d" % i for i in range(20)]
    # each pulled message names the queue it was sent to and pulled from, by the broker-local id (its
    # stored QUEUEID is the cluster's: a Java 4.9 consumer handed out queue 3 for its queue 1 before)
    sent = {r.msg_id: (r.queue.broker_name, r.queue.queue_id, r.queue_offset) for r in results}
    assert {m.msg_id: (m.broker_name, m.queue_id, m.queue_offset) for m in got} == sent


def test_topic_and_consume_stats_name_each_shards_own_queues(sharded):
    """GET_TOPIC_STATS_INFO and GET_CONSUME_STATS (mqadmin topicStatus / consumerProgress) answer, on
    each shard, only the queues it leads under its own broker name and broker-local ids, as each
    broker of a RocketMQ cluster does; before, every shard answered every queue as broker-a, so the
    merged table kept only one shard's figures."""
    from client import Admin
    topic, group = "sharded-native", "sharded-native-cg"  # what the test above sent and pulled
    with NativeProducer("sharded-stats-pg", sharded.namesrv) as producer:
        route = {(q.broker_name, q.queue_id) for q in producer.queues(topic)}
    admin = Admin(sharded.namesrv).start()
    try:
        stats = admin.topic_stats(topic)
        progress = admin.consumer_progress(group, topic)
    finally:
        admin.shutdown()
    assert {(q.broker_name, q.queue_id) for q in stats} == route
    assert sum(v["maxOffset"] for v in stats.values()) == 20
    assert {(q.broker_name, q.queue_id) for q in progress} == route


def test_route_of_a_topic_of_one_shard_lists_that_broker_only(sharded):
    """A topic whose one queue one shard leads: the name server's route has that broker's BrokerData
    and QueueData only, as RocketMQ's name server answers; before, every shard's BrokerData was
    listed and mqadmin's resetOffsetByTimeOld hit a NullPointerException on the broker without
    QueueData (tests/compat/test_kafka_reset_offsets.py with --shards 2)."""
    from codec.remoting import RequestCode
    from remoting.wire import Peer

    topic = "sharded-one-queue"
    admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    peer = Peer(sharded.namesrv)
    try:
        route = wait_for(lambda: (r := peer.json_call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
                         .get("queueDatas") and r, what="the topic's route")
    finally:
        peer.close()
    assert len(route["queueDatas"]) == 1
    assert [b["brokerName"] for b in route["brokerDatas"]] == [route["queueDatas"][0]["brokerName"]]


def test_a_topic_config_altered_at_one_shard_is_every_shards(sharded):
    """IncrementalAlterConfigs of a topic answered by one shard: every shard describes the new
    value (each leads queues of the topic and applies its retention). Before, the change stayed in
    the store of the shard that took it (tests/kafka/test_kafka_admin_cli.py with --shards 2 never
    saw it described)."""
    topic = "sharded-configured"
    assert set(create_topic(sharded, topic).values()) == {1, 2}
    altered_at_shard_2_described_by_both(sharded, "topic", 2, topic, "retention.ms", "12345")


def altered_at_shard_2_described_by_both(sharded, rtype: str, rtype_code: int, name: str, key: str, value: str):
    """IncrementalAlterConfigs of `key` at shard 1 (node 2), then DescribeConfigs at both shards
    until each answers `value`."""
    import sys
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
    from kafka_raw import RawClient

    brokers = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap}).list_topics(timeout=10).brokers
    port = {b.id: b.port for b in brokers.values()}
    alter = AdminClient({"bootstrap.servers": f"127.0.0.1:{port[2]}"})  # the shard that is not the bootstrap
    resource = ConfigResource(rtype, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    alter.incremental_alter_configs([resource])[resource].result(20)

    def described(node: int) -> str | None:
        raw = RawClient(f"127.0.0.1:{port[node]}")
        try:
            resp = raw.call(32, 4, {"resources": [{"resource_type": rtype_code, "resource_name": name,
                                                   "configuration_keys": [key]}],
                                    "include_synonyms": False, "include_documentation": False})
        finally:
            raw.close()
        return {c["name"]: c["value"] for c in resp["results"][0]["configs"]}.get(key)
    wait_for(lambda: described(1) == described(2) == value, timeout=20, what=f"{key}={value} on both shards")


def test_a_group_config_altered_at_one_shard_is_every_shards(sharded):
    """A share group's `share.auto.offset.reset` set through one shard is what every shard applies
    (each leads some of the partitions the group reads). Before, it stayed in the store of the shard
    that took it: a share consumer of a partition the other shard led started at the end and got
    nothing (tests/kafka/test_share_librdkafka.py with --shards 2)."""
    altered_at_shard_2_described_by_both(sharded, "group", 32, "sharded-share-group", "share.auto.offset.reset",
                                         "earliest")


def test_share_group_offsets_are_the_leaders_whichever_shard_is_asked(sharded):
    """AlterShareGroupOffsets at one shard, DescribeShareGroupOffsets at the other: every partition
    starts where it was set, on both shards' partitions (a share partition's state is its leader's;
    the admin requests go to the group's coordinator). Before, the shard asked reset its own empty
    copy of the other's partitions (clamped to 0) and described that: start offsets 2 and 0."""
    import sys
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
    from kafka_raw import RawClient

    topic, group = "sharded-share-offsets", "sharded-share-offsets-group"
    leaders = create_topic(sharded, topic)
    assert set(leaders.values()) == {1, 2}
    produce(sharded, topic, [b"v%d" % i for i in range(3 * PARTITIONS)])  # 3 records in each partition
    brokers = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap}).list_topics(timeout=10).brokers
    port = {b.id: b.port for b in brokers.values()}
    partitions = list(range(PARTITIONS))

    def call(node: int, api: int, body: dict, version: int = 0) -> dict:
        raw = RawClient(f"127.0.0.1:{port[node]}")
        try:
            return raw.call(api, version, body)
        finally:
            raw.close()
    altered = call(1, 91, {"group_id": group, "topics": [{"topic_name": topic, "partitions": [
        {"partition_index": p, "start_offset": 2} for p in partitions]}]})
    assert altered["error_code"] == 0 and all(p["error_code"] == 0 for p in altered["responses"][0]["partitions"])
    for node in (2, 1):
        described = call(node, 90, {"groups": [{"group_id": group, "topics": [
            {"topic_name": topic, "partitions": partitions}]}]}, 1)["groups"][0]["topics"][0]["partitions"]
        assert [(p["partition_index"], p["start_offset"], p["lag"]) for p in described] == \
            [(p, 2, 1) for p in partitions], (node, described)


def test_each_group_is_listed_by_its_coordinator_only(sharded):
    """A KIP-848 group (librdkafka, group.protocol=consumer) is listed by exactly one shard, its
    coordinator, with its type, as a Kafka broker lists the groups it coordinates (the admin client
    asks every broker and merges). Before, the other shard listed it too, from the one offset table,
    as an offsets-only `classic` group (tests/kafka/test_kafka_consumer_protocol.py's Java case)."""
    import sys
    from confluent_kafka import Consumer
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
    from kafka_raw import RawClient

    topic, group = "sharded-kip848", "sharded-kip848-listed"
    create_topic(sharded, topic)
    produce(sharded, topic, [b"r%d" % i for i in range(PARTITIONS)])
    c = Consumer({"bootstrap.servers": sharded.kafka_bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        wait_for(lambda: c.poll(0.2) is not None and c.assignment(), what="the consumer to get records")
        c.commit(asynchronous=False)
        brokers = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap}).list_topics(timeout=10).brokers

        def listed(port: int) -> list[str]:
            raw = RawClient(f"127.0.0.1:{port}")
            try:
                groups = raw.call(16, 5, {"states_filter": [], "types_filter": []})["groups"]
            finally:
                raw.close()
            return [g["group_type"] for g in groups if g["group_id"] == group]
        assert sorted(t for b in brokers.values() for t in listed(b.port)) == ["consumer"]
    finally:
        c.close()


def test_a_topic_made_again_takes_a_producers_records_from_sequence_0(sharded):
    """An idempotent producer writes sequences 0-2 to every partition (both shards lead some); the
    topic is deleted and made again; the same producer's sequences 0-2 are stored again on every
    partition, as Kafka forgets a deleted partition's producer state. Before, the shard that was
    not asked to delete kept that state and took the new records for duplicates: nothing stored."""
    import sys
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
    from kafka_raw import RawClient, produce_body
    from codec.kafka import records

    topic = "sharded-made-again"
    leaders = create_topic(sharded, topic)
    raw = RawClient(sharded.kafka_bootstrap)
    try:
        init = raw.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    finally:
        raw.close()
    batch = records.build_batch([(1000 + i, None, b"x%d" % i, []) for i in range(3)], base_timestamp=1000,
                                producer_id=init["producer_id"], producer_epoch=init["producer_epoch"], base_sequence=0)
    admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
    address = {b.id: f"{b.host}:{b.port}" for b in admin.list_topics(timeout=10).brokers.values()}

    def produce_everywhere(leaders: dict[int, int]) -> list[int]:
        """Each partition's latest offset after the batch went to its leader."""
        ends = []
        for p in range(PARTITIONS):
            c = RawClient(address[leaders[p]])
            try:
                c.call(0, 9, produce_body(topic, p, batch))
                resp = c.call(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
                    {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1}]}]})
            finally:
                c.close()
            ends.append(resp["topics"][0]["partitions"][0]["offset"])
        return ends
    assert produce_everywhere(leaders) == [3] * PARTITIONS
    admin.delete_topics([topic])[topic].result(20)

    def made_again() -> dict[int, int] | None:
        try:
            return create_topic(sharded, topic)
        except Exception:  # noqa: BLE001 - the deletion is not everywhere yet
            return None
    leaders = wait_for(made_again, what="the topic made again")
    assert set(leaders.values()) == {1, 2}
    assert produce_everywhere(leaders) == [3] * PARTITIONS


def test_a_filtered_view_of_a_topic_of_both_shards_holds_every_match(sharded):
    """A filtered view (CreateTopics with filter.* configs) of a topic led by both shards: its
    queues are placed where the base's are and the shard that did not create it maintains it too,
    so it holds every matching record, those stored before (backfill) and after. Before, the view's
    queues were placed on their own (a view queue led by a shard that stores no base queue of it
    stays empty) and only the creating shard filled its view queues."""
    base, view = "sharded-tagged", "sharded-tagged-a"
    assert set(create_topic(sharded, base).values()) == {1, 2}

    def send(prefix: str, count: int) -> None:
        producer = Producer({"bootstrap.servers": sharded.kafka_bootstrap, "acks": "all"})
        for i in range(count):
            producer.produce(base, b"%s%02d" % (prefix.encode(), i), partition=i % PARTITIONS,
                             headers=[("TAGS", b"A" if i % 2 == 0 else b"B")])
        assert producer.flush(30) == 0

    send("before", 16)
    admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
    admin.create_topics([NewTopic(view, PARTITIONS, 1, config={"filter.source.topic": base,
                                                               "filter.tag.expression": "A"})])[view].result(20)
    wait_for(lambda: len(admin.list_topics(view, timeout=5).topics[view].partitions) == PARTITIONS,
             what="the view's partitions")
    send("after", 16)
    expected = sorted(b"%s%02d" % (p, i) for p in (b"before", b"after") for i in range(0, 16, 2))
    assert sorted(read_topic(sharded.kafka_bootstrap, view)) == expected


def test_a_killed_shard_is_started_again_with_its_acknowledged_records(sharded):
    before = shard_pids(sharded.data_dir)
    assert sorted(before) == [0, 1]
    os.kill(before[1], signal.SIGKILL)
    killed = time.monotonic()
    wait_for(lambda: (pid := shard_pids(sharded.data_dir).get(1)) and pid != before[1],
             what="the supervisor to start shard 1 again")
    sharded.wait_brokers()
    got = consume(sharded, TOPIC, "sharded-after-kill", RECORDS + 8)
    print(f"kill -9 to every record read back: {time.monotonic() - killed:.1f} s")
    assert sorted(got) == sorted([b"r%03d" % i for i in range(RECORDS)] + [b"later%d" % i for i in range(8)])


def test_kill9_of_a_shard_under_load_loses_no_acknowledged_record(sharded):
    """A producer (acks=all) keeps sending to partitions of both shards while shard 1 is killed and
    started again; every record it had acknowledged is in the topic afterwards."""
    topic = "sharded-under-load"
    leaders = create_topic(sharded, topic)
    assert set(leaders.values()) == {1, 2}
    acked, failed, stop = [], [], threading.Event()

    def report(err, msg):
        (failed if err is not None else acked).append(err or msg.value())

    def produce_until_stopped():
        producer = Producer({"bootstrap.servers": sharded.kafka_bootstrap, "acks": "all", "linger.ms": 5,
                             "message.timeout.ms": 30000})
        i = 0
        while not stop.is_set():
            producer.produce(topic, b"load-%d" % i, partition=i % PARTITIONS, on_delivery=report)
            i += 1
            producer.poll(0.002 if i % 50 == 0 else 0)
        producer.flush(60)

    sender = threading.Thread(target=produce_until_stopped)
    sender.start()
    try:
        wait_for(lambda: len(acked) >= 500, what="500 records acknowledged")
        old = shard_pids(sharded.data_dir)[1]
        os.kill(old, signal.SIGKILL)
        at_kill = len(acked)
        wait_for(lambda: (pid := shard_pids(sharded.data_dir).get(1)) and pid != old,
                 what="the supervisor to start shard 1 again")
        sharded.wait_brokers()
        wait_for(lambda: len(acked) >= at_kill + 500, what="500 more records acknowledged after the restart")
    finally:
        stop.set()
        sender.join(90)
    stored = set(read_topic(sharded.kafka_bootstrap, topic))
    print(f"under load: {len(acked)} acknowledged, {len(failed)} failed, {len(stored)} stored")
    assert not set(acked) - stored


def test_sigterm_stops_the_whole_tree_with_status_0(sharded):
    assert sharded.stop() == 0
    assert shard_pids(sharded.data_dir) == {}
