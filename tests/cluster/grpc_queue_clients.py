"""gRPC clients that key queues as a RocketMQ 5 client does, by (broker name, queue id) of the
route, for the queue-identity tests (test_cluster_grpc_queue_ids.py, tests/shards): a pull
consumer that keeps its own offset per queue key and re-reads the route when a queue's endpoint
refuses it, a FIFO sender that outlasts a stale route, and a way to ask which partition each stored
message is in."""
from __future__ import annotations

import collections
import time

import grpc
from confluent_kafka import Consumer, Producer as KafkaProducer, TopicPartition

from gateway.grpc.common import Code, d, s

SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "queue-ids-test"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2"))


def call(endpoint: str, method: str, request, response_class, stream: bool = False):
    with grpc.insecure_channel(endpoint) as channel:
        kind = channel.unary_stream if stream else channel.unary_unary
        rpc = kind(SERVICE + method, request_serializer=lambda m: m.SerializeToString(),
                   response_deserializer=response_class.FromString)
        answer = rpc(request, timeout=10, metadata=METADATA)
        return list(answer) if stream else answer


def address(endpoints) -> str:
    a = endpoints.addresses[0]
    return f"{a.host}:{a.port}"


def query_route(endpoint: str, topic: str) -> list:
    """The route's MessageQueues, as answered."""
    got = call(endpoint, "QueryRoute", s.QueryRouteRequest(topic=d.Resource(name=topic)), s.QueryRouteResponse)
    assert got.status.code == Code.OK, got.status
    return list(got.message_queues)


class PullConsumer:
    """Reads every queue of `topic` with PullMessage from the endpoint its route names, keeping the
    next offset per (broker name, queue id) in memory, as a pull consumer does; `got[key]` is the
    bodies read under that key, in order."""

    def __init__(self, access: list[str], topic: str, group: str) -> None:
        self.access, self.topic, self.group = access, topic, group
        self.offsets: dict[tuple[str, int], int] = {}
        self.got: dict[tuple[str, int], list[bytes]] = {}
        self.refused: list[tuple] = []

    def route(self) -> list:
        for endpoint in self.access:  # the first that answers
            try:
                return query_route(endpoint, self.topic)
            except (grpc.RpcError, AssertionError):
                continue
        return []

    def poll(self) -> int:
        """One pass over the queues of a fresh route; how many messages it read."""
        read = 0
        for mq in self.route():
            key = (mq.broker.name, mq.id)
            offset = self.offsets.setdefault(key, 0)
            request = s.PullMessageRequest(group=d.Resource(name=self.group), message_queue=mq, offset=offset,
                                           batch_size=32,
                                           filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"))
            try:
                answers = call(address(mq.broker.endpoints), "PullMessage", request, s.PullMessageResponse, stream=True)
            except grpc.RpcError as exc:  # a stopped gateway: the next route names the new leader
                self.refused.append((key, exc.code()))
                continue
            codes = [a.status.code for a in answers if a.HasField("status")]
            if codes != [Code.OK]:
                if codes != [Code.MESSAGE_NOT_FOUND]:
                    self.refused.append((key, codes))
                continue
            bodies = [a.message.body for a in answers if a.HasField("message")]
            self.got.setdefault(key, []).extend(bodies)
            self.offsets[key] = next(a.next_offset for a in answers if a.HasField("next_offset"))
            read += len(bodies)
        return read

    def bodies(self) -> list[bytes]:
        return [b for got in self.got.values() for b in got]


def produce(bootstrap: str, topic: str, counts: dict[int, int], first: dict[int, int]) -> list[bytes]:
    """`counts[p]` bodies "p<p>-<i>" into partition p (idempotent acks=all, so a retried batch is
    not stored twice), numbered on from `first[p]`; the bodies sent."""
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    sent = []
    for p, n in counts.items():
        for i in range(first.get(p, 0), first.get(p, 0) + n):
            producer.produce(topic, b"p%d-%03d" % (p, i), partition=p)
            sent.append(b"p%d-%03d" % (p, i))
    assert producer.flush(60) == 0
    return sent


def consume_until(consumer: PullConsumer, want: list[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not set(want) <= set(consumer.bodies()):
        if not consumer.poll():
            time.sleep(0.2)


def check_one_partition_per_key(consumer: PullConsumer, sent: list[bytes]) -> None:
    """Each key read one partition's bodies of `sent` in order, none skipped or twice (other
    messages in the topic aside); all of them were read."""
    wanted = set(sent)
    for key, got in consumer.got.items():
        bodies = [b for b in got if b in wanted]
        partitions = {b.split(b"-")[0] for b in bodies}
        assert len(partitions) == 1, (key, bodies)
        [partition] = partitions
        assert bodies == [b"%s-%03d" % (partition, i) for i in range(len(bodies))], (key, bodies)
    read = [b for b in consumer.bodies() if b in wanted]
    assert sorted(read) == sorted(sent), (len(read), len(sent), consumer.refused)


def partitions_of(bootstrap: str, topic: str, partitions: int) -> dict[bytes, int]:
    """body -> the partition it is stored in (read over Kafka from the beginning)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "where-" + topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, deadline, idle = {}, time.monotonic() + 30, 0
    try:
        while time.monotonic() < deadline and idle < 5:
            m = c.poll(1)
            if m is None or m.error():
                idle += m is None
                continue
            idle = 0
            out[m.value()] = m.partition()
    finally:
        c.close()
    return out


def send_groups(producer, message, topic: str, groups: list[str], first: int, count: int) -> list[bytes]:
    """`count` messages of each group with a stock SDK producer (`message` builds one); a send that
    fails (its route names a stopped gateway until the SDK re-reads it, every 30 s) is sent again,
    for up to 45 s."""
    bodies = []
    for i in range(first, first + count):
        for g in groups:
            msg = message(topic, b"%s-%03d" % (g.encode(), i), group=g)
            deadline = time.monotonic() + 45
            while True:
                try:
                    producer.send(msg)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            bodies.append(msg.body)
    return bodies


def groups_partitions(where: dict[bytes, int], sent: list[bytes]) -> dict[bytes, set[int]]:
    """message group -> the partitions its messages are stored in."""
    out = collections.defaultdict(set)
    for body in sent:
        out[body.rsplit(b"-", 1)[0]].add(where[body])
    return dict(out)
