"""RocketMQ 5 gRPC over three gateways (each with --grpc-port): QueryRoute names each queue p of a
cluster topic by its own broker `queue-<p>` (id p) at the gRPC endpoint its leader registered in
etcd, so the name and id keep their meaning when leaders move; a send or receive at a gateway
leading no queue of the topic is refused FORBIDDEN (the SDK retries another queue of its route),
while a receive naming another broker is served from the queues the gateway leads, as the RocketMQ
proxy serves one naming a broker it does not know (checked against the 5.x proxy: "no new message",
not a refusal); a FIFO message goes to its group's queue whichever gateway took it; the stock Python
SDK's producer spreads its sends over every gateway and one SimpleConsumer receives them all.
PullMessage / UpdateOffset / GetOffset / QueryOffset name (queue-<p>, p) at p's leader, or the
(broker-<n>, broker-local queue) of older routes: each broker's local queue i is the i-th partition
its gateway leads, and the offsets a group commits so are the Kafka group's offsets of those
partitions.
The route, assignment and SDK checks also run (CLUSTER_REFERENCE=1, `make cluster-reference`) against
a real RocketMQ 5.5 cluster of two brokers behind its 5.5 proxy in cluster mode (reference_sides.py),
which names every broker at the proxy's own endpoint."""
from __future__ import annotations

import collections
import os
import sys

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import NODES, require_etcd, start_cluster
from grpc_queue_clients import call
from reference_sides import gateway_brokers, reference_only, rocketmq_brokers
from test_cluster_clients import led_by, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grpc"))
from grpc_sdk import GrpcGateway, config, message, receive_all  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402

from gateway.grpc.common import Code, d, s  # noqa: E402

TOPIC, SINGLE, PULLED, LOGIC = "grpc-spread", "grpc-one", "grpc-pulled", "grpc-logic"


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    require_etcd()
    cluster = start_cluster(tmp_path_factory.mktemp("grpc-cluster"), NODES, gateway=GrpcGateway)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for topic, count in ((TOPIC, 6), (SINGLE, 1), (PULLED, 6), (LOGIC, 6)):
            admin.create_topics([NewTopic(topic, num_partitions=count, replication_factor=1)])[topic].result(10)
        for topic in (TOPIC, PULLED, LOGIC):
            wait_for(lambda: sorted(led_by(cluster.gateways, topic)) == list(NODES), 20, what="every gateway leading")
        yield cluster.gateways
    finally:
        cluster.stop()


@pytest.fixture(scope="module", params=["gateways", pytest.param("rocketmq-proxy", marks=reference_only)])
def system(request, tmp_path_factory):
    """Brokers behind gRPC endpoints: the three gateways, or two real brokers behind the proxy."""
    if request.param == "gateways":
        yield gateway_brokers(request.getfixturevalue("three"))
    else:
        with rocketmq_brokers(tmp_path_factory.mktemp("grpc-reference"), {TOPIC: (2, None), SINGLE: (1, ("broker-1",))},
                              groups=("grpc-spread-g", "assign-g"), proxy=True) as side:
            yield side


def access(endpoint: str):
    """The access point a client names in QueryRoute / QueryAssignment (the proxy answers with it)."""
    host, port = endpoint.rsplit(":", 1)
    return d.Endpoints(scheme=d.AddressScheme.IPv4, addresses=[d.Address(host=host, port=int(port))])


def port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def route(endpoint: str, topic: str) -> dict[str, tuple[set, set]]:
    """broker name -> (its queue ids, its endpoints' ports)."""
    got = call(endpoint, "QueryRoute", s.QueryRouteRequest(topic=d.Resource(name=topic), endpoints=access(endpoint)),
               s.QueryRouteResponse)
    assert got.status.code == Code.OK, got.status
    out = collections.defaultdict(lambda: (set(), set()))
    for q in got.message_queues:
        assert q.broker.id == 0
        out[q.broker.name][0].add(q.id)
        out[q.broker.name][1].update(a.port for a in q.broker.endpoints.addresses)
    return dict(out)


def route_brokers(system, topic: str) -> dict[str, str]:
    """gRPC route broker name -> the broker (gateway) serving it: the proxy names the real brokers;
    the gateways name each cluster queue p `queue-<p>`, at its leader (the remoting route's
    static-topic mapping says which)."""
    if system.kind != "gateways":
        return {name: name for name in system.owners(topic)}
    mapping = system.route(topic)["topicQueueMappingByBroker"]
    return {f"queue-{q}": name for name, info in mapping.items() for q in info["currIdMap"]}


def test_query_route_names_each_owner_at_its_grpc_endpoint(system):
    if system.kind == "gateways":  # every queue by its own logic broker, at its leader
        want = {b: ({int(b[6:])}, {port(system.grpc[n])}) for b, n in route_brokers(system, TOPIC).items()}
        assert sorted(want) == [f"queue-{q}" for q in range(6)] and len(set(route_brokers(system, TOPIC).values())) == 3
    else:
        want = {name: ({0, 1}, {port(system.grpc[name])}) for name in system.names}  # 2 queues on each broker
    for endpoint in system.access:  # every gateway answers the same
        assert route(endpoint, TOPIC) == want
    [owner] = system.owners(SINGLE)
    [single] = route_brokers(system, SINGLE)
    assert route(system.access[0], SINGLE) == {single: ({0}, {port(system.grpc[owner])})}
    assignment = call(system.access[-1], "QueryAssignment", s.QueryAssignmentRequest(
        topic=d.Resource(name=TOPIC), group=d.Resource(name="assign-g"), endpoints=access(system.access[-1])),
        s.QueryAssignmentResponse)
    assert sorted((a.message_queue.broker.name, a.message_queue.id) for a in assignment.assignments) == [
        (name, -1) for name in system.names]


def test_a_gateway_refuses_a_topic_it_leads_no_queue_of(three):
    gws = three
    owner = next(iter(led_by(gws, SINGLE)))
    other = next(n for n in NODES if n != owner)
    sent = d.Message(topic=d.Resource(name=SINGLE), body=b"x", system_properties=d.SystemProperties(
        message_id="0100000000000000000000000A", message_type=d.MessageType.NORMAL,
        body_encoding=d.Encoding.IDENTITY))
    refused = call(gws[other].endpoints, "SendMessage", s.SendMessageRequest(messages=[sent]), s.SendMessageResponse)
    assert refused.status.code == Code.FORBIDDEN, refused.status
    taken = call(gws[owner].endpoints, "SendMessage", s.SendMessageRequest(messages=[sent]), s.SendMessageResponse)
    assert taken.status.code == Code.OK, taken.status
    assert [a.status.code for a in receive(gws[other], SINGLE, f"broker-{owner}")] == [Code.FORBIDDEN]
    served = receive(gws[owner], SINGLE, f"broker-{other}")
    assert [a.message.body for a in served if a.HasField("message")] == [b"x"]
    assert [a.status.code for a in served if a.HasField("status")] == [Code.OK]


def receive(gw, topic: str, broker: str) -> list:
    """The answers of one ReceiveMessage (no long polling) naming `broker`."""
    request = s.ReceiveMessageRequest(
        group=d.Resource(name="refused-g"), batch_size=1, auto_renew=False,
        message_queue=d.MessageQueue(topic=d.Resource(name=topic), id=0, broker=d.Broker(name=broker)),
        filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"))
    request.invisible_duration.seconds = 30
    return call(gw.endpoints, "ReceiveMessage", request, s.ReceiveMessageResponse, stream=True)


def test_python_sdk_sends_over_every_broker_and_one_simple_consumer_receives_all(system):
    producer = Producer(config(system.access[0]), (TOPIC,))
    consumer = SimpleConsumer(config(system.access[-1]), "grpc-spread-g", {TOPIC: FilterExpression("*")},
                              await_duration=1)
    producer.startup()
    consumer.startup()
    try:
        bodies = [b"g%03d" % i for i in range(60)]
        receipts = [producer.send(message(TOPIC, body)) for body in bodies]
        names = route_brokers(system, TOPIC)
        brokers = collections.Counter(names[str(r.message_queue).split(".")[0]] for r in receipts)
        assert sorted(brokers) == system.names, brokers
        got = receive_all(consumer, len(bodies), timeout=60)
        assert sorted(m.body for m in got) == bodies
    finally:
        consumer.shutdown()
        producer.shutdown()


def queue(topic: str, broker: str, local: int):
    return d.MessageQueue(topic=d.Resource(name=topic), id=local, broker=d.Broker(name=broker))


def pull(gw, broker: str, local: int, offset: int = 0) -> tuple[list, list, int]:
    """(status codes, (queue id, offset, body) of each message, next offset) of one PullMessage."""
    answers = call(gw.endpoints, "PullMessage", s.PullMessageRequest(
        group=d.Resource(name="pull-g"), message_queue=queue(PULLED, broker, local), offset=offset,
        batch_size=32, filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*")),
        s.PullMessageResponse, stream=True)
    codes = [a.status.code for a in answers if a.HasField("status")]
    got = [(a.message.system_properties.queue_id, a.message.system_properties.queue_offset, a.message.body)
           for a in answers if a.HasField("message")]
    return codes, got, next((a.next_offset for a in answers if a.HasField("next_offset")), -1)


def test_pull_and_offsets_name_the_routes_broker_local_queues(three):
    """The (broker-<n>, broker-local id) names routes gave before `queue-<p>` (a client that read
    one then) still name the queues: local queue i of broker-<n> is the i-th partition n leads."""
    gws = three
    producer = KafkaProducer({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values())})
    for partition in range(6):
        for i in range(partition + 1):  # partition p holds p+1 messages
            producer.produce(PULLED, b"p%d-%d" % (partition, i), partition=partition)
    assert producer.flush(20) == 0
    led = led_by(gws, PULLED)
    for n, g in gws.items():
        broker = f"broker-{n}"
        for local, partition in enumerate(led[n]):
            codes, got, next_offset = pull(g, broker, local)
            assert codes == [Code.OK]
            assert got == [(local, i, b"p%d-%d" % (partition, i)) for i in range(partition + 1)]
            assert next_offset == partition + 1
            end = call(g.endpoints, "QueryOffset", s.QueryOffsetRequest(message_queue=queue(PULLED, broker, local),
                       query_offset_policy=d.QueryOffsetPolicy.END), s.QueryOffsetResponse)
            assert (end.status.code, end.offset) == (Code.OK, partition + 1)
            update = call(g.endpoints, "UpdateOffset", s.UpdateOffsetRequest(
                group=d.Resource(name="pull-g"), message_queue=queue(PULLED, broker, local), offset=partition),
                s.UpdateOffsetResponse)
            assert update.status.code == Code.OK, update.status
            got_offset = call(g.endpoints, "GetOffset", s.GetOffsetRequest(
                group=d.Resource(name="pull-g"), message_queue=queue(PULLED, broker, local)), s.GetOffsetResponse)
            assert (got_offset.status.code, got_offset.offset) == (Code.OK, partition)
    # the commits are the Kafka group's offsets of the partitions each broker leads
    c = Consumer({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values()), "group.id": "pull-g"})
    try:
        want = {p: p for p in range(6)}
        assert wait_for(lambda: {tp.partition: tp.offset for tp in c.committed(
            [TopicPartition(PULLED, p) for p in range(6)], timeout=10)} == want or None, what="group offsets")
    finally:
        c.close()


def test_pull_naming_another_or_an_unknown_broker_or_queue_is_refused(three):
    gws = three
    for broker, local, code in (("broker-2", 0, Code.FORBIDDEN), ("broker-9", 0, Code.BAD_REQUEST),
                                ("broker-1", 2, Code.BAD_REQUEST)):
        assert pull(gws[1], broker, local)[0] == [code]
        for method, request, answer in (
                ("GetOffset", s.GetOffsetRequest(group=d.Resource(name="pull-g"),
                                                 message_queue=queue(PULLED, broker, local)), s.GetOffsetResponse),
                ("QueryOffset", s.QueryOffsetRequest(message_queue=queue(PULLED, broker, local),
                                                     query_offset_policy=d.QueryOffsetPolicy.END),
                 s.QueryOffsetResponse),
                ("UpdateOffset", s.UpdateOffsetRequest(group=d.Resource(name="pull-g"), offset=1,
                                                       message_queue=queue(PULLED, broker, local)),
                 s.UpdateOffsetResponse)):
            assert call(gws[1].endpoints, method, request, answer).status.code == code, (method, broker, local)


def logic_pull(gw, topic: str, broker: str, qid: int, group: str = "logic-g") -> tuple[list, list]:
    """(status codes, (queue id, body) of each message) of one PullMessage of (broker, qid) from 0."""
    answers = call(gw.endpoints, "PullMessage", s.PullMessageRequest(
        group=d.Resource(name=group), message_queue=queue(topic, broker, qid), offset=0, batch_size=32,
        filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*")), s.PullMessageResponse, stream=True)
    return ([a.status.code for a in answers if a.HasField("status")],
            [(a.message.system_properties.queue_id, a.message.body) for a in answers if a.HasField("message")])


def test_pull_names_each_cluster_queue_by_its_own_broker_at_its_leader(three):
    """Queue p of the route is (queue-<p>, p) at p's leader (as the remoting side's mock broker
    `__syslo__global__` with id p): its partition's messages; at another gateway FORBIDDEN (the
    client re-reads the route), a mismatched id BAD_REQUEST."""
    gws = three
    producer = KafkaProducer({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values())})
    for p in range(6):
        producer.produce(LOGIC, b"l%d" % p, partition=p)
    assert producer.flush(20) == 0
    leader = {p: n for n, ps in led_by(gws, LOGIC).items() for p in ps}
    mqs = {q.id: q for q in call(gws[1].endpoints, "QueryRoute", s.QueryRouteRequest(
        topic=d.Resource(name=LOGIC)), s.QueryRouteResponse).message_queues}
    assert sorted(mqs) == list(range(6))
    for p, n in leader.items():
        assert mqs[p].broker.name == f"queue-{p}" and mqs[p].broker.endpoints.addresses[0].port == gws[n].grpc_port
        assert logic_pull(gws[n], LOGIC, f"queue-{p}", p) == ([Code.OK], [(p, b"l%d" % p)])
        assert logic_pull(gws[n], LOGIC, "__syslo__global__", p) == ([Code.OK], [(p, b"l%d" % p)])
        other = next(m for m in gws if m != n)
        assert logic_pull(gws[other], LOGIC, f"queue-{p}", p)[0] == [Code.FORBIDDEN]
        assert logic_pull(gws[n], LOGIC, f"queue-{p}", (p + 1) % 6)[0] == [Code.BAD_REQUEST]


def test_a_message_group_goes_to_its_own_queue_at_whichever_gateway_took_it(three):
    """A FIFO message's queue is fixed by its group (the Java SDK's SipHash pick over the route's
    queues), whichever gateway the client sent it to: one not leading that queue forwards it."""
    from gateway.grpc.fifo_queue import group_queue
    gws = three
    leader = {p: n for n, ps in led_by(gws, LOGIC).items() for p in ps}
    sent = collections.defaultdict(list)
    for i, group in enumerate(["g-a", "g-b", "g-c", "g-d"]):
        for n, g in gws.items():  # each gateway takes one message of each group
            body = b"%s-%d" % (group.encode(), n)
            m = d.Message(topic=d.Resource(name=LOGIC), body=body, system_properties=d.SystemProperties(
                message_id="01%024X" % (i * 10 + n), message_type=d.MessageType.FIFO, message_group=group,
                queue_id=n, body_encoding=d.Encoding.IDENTITY))
            answer = call(g.endpoints, "SendMessage", s.SendMessageRequest(messages=[m]), s.SendMessageResponse)
            assert answer.status.code == Code.OK, answer.status
            sent[group_queue(group, 6)].append((body, answer.entries[0].offset))
    for p, bodies in sent.items():
        codes, got = logic_pull(gws[leader[p]], LOGIC, f"queue-{p}", p)
        stored = {body: offset for offset, (_, body) in enumerate(got)}
        assert all(stored.get(body) == offset for body, offset in bodies), (p, got, bodies)
