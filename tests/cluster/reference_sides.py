"""The systems the multi-broker tests run against, behind one shape, so that one test body checks our
gateways and the real thing (the project's rule: a Kafka- or RocketMQ-facing test is first run
against the real broker). The real systems join a test's fixture parameters only with
CLUSTER_REFERENCE=1 (`make cluster-reference`, report in docs/cluster-reference.md):

- RocketMQ: Apache RocketMQ 5.5, one name server and two master brokers broker-1 and broker-2 of one
  cluster, and for gRPC the 5.5 proxy in cluster mode in front of them (bench.brokers.RocketMQCluster);
- Kafka: Apache Kafka 4.x, three KRaft nodes with broker and controller roles (clusters.kraft_nodes)."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import socket

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import wait_for
from codec.remoting import RemotingCommand, encode
from codec.remoting.bodies import dumps, loads
from codec.remoting.codes import RequestCode as RC
from codec.remoting.command import FrameReader

REFERENCE = bool(os.environ.get("CLUSTER_REFERENCE"))
reference_only = pytest.mark.skipif(not REFERENCE, reason="a real multi-broker system: make cluster-reference")


class Remoting:
    """One blocking remoting connection. A consumer registered by HEART_BEAT lives as long as its
    connection, so a check that needs one (QUERY_ASSIGNMENT) makes its calls on one connection;
    requests the broker sends to it meanwhile (NOTIFY_CONSUMER_IDS_CHANGED) are skipped."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.reader, self.opaque = FrameReader(), 0

    def call(self, code: int, fields: dict | None = None, body: bytes = b"") -> RemotingCommand:
        self.opaque += 1
        self.sock.sendall(encode(RemotingCommand(code=code, ext_fields=fields or {}, body=body, opaque=self.opaque)))
        while True:
            resp = self.reader.next_command()
            if resp is None:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("closed")
                self.reader.feed(data)
            elif resp.is_response and resp.opaque == self.opaque:
                return resp

    def json(self, code: int, fields: dict | None = None, body: bytes = b""):
        """The (fastjson) body of a successful answer; AssertionError with the remark otherwise."""
        resp = self.call(code, fields, body)
        assert resp.code == 0, (code, resp.code, resp.remark)
        return loads(resp.body) if resp.body else {}

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Remoting":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def remoting_json(port: int, code: int, fields: dict | None = None, body: bytes = b""):
    with Remoting(port) as r:
        return r.json(code, fields, body)


@dataclasses.dataclass
class Brokers:
    """RocketMQ brokers as a client sees them: `ports` broker name -> remoting port, `namesrvs` the
    name servers (every gateway is one), `grpc` broker name -> the gRPC endpoint a route names for
    its queues (a gateway's own; the proxy's for every real broker), `access` the gRPC endpoints a
    client may start from."""
    kind: str
    ports: dict[str, int]
    namesrvs: list[str]
    grpc: dict[str, str] = dataclasses.field(default_factory=dict)
    access: list[str] = dataclasses.field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return sorted(self.ports)

    def namesrv_port(self, i: int = 0) -> int:
        return int(self.namesrvs[i].rsplit(":", 1)[1])

    def route(self, topic: str) -> dict:
        return remoting_json(self.namesrv_port(), RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})

    def owners(self, topic: str) -> list[str]:
        """The brokers holding queues of `topic`, by the name server's route."""
        return sorted(q["brokerName"] for q in self.route(topic)["queueDatas"] if q["readQueueNums"] > 0)


def gateway_brokers(gws) -> Brokers:
    """Gateways by node id (GatewayProcess or GrpcGateway): broker-<n>, each its own name server."""
    grpc = {f"broker-{n}": g.endpoints for n, g in gws.items() if hasattr(g, "endpoints")}
    return Brokers("gateways", {f"broker-{n}": g.remoting_port for n, g in gws.items()},
                   [g.namesrv for g in gws.values()], grpc, list(grpc.values()))


@contextlib.contextmanager
def rocketmq_brokers(base, topics: dict[str, tuple[int, tuple[str, ...] | None]], groups=(), proxy: bool = False):
    """A real RocketMQ 5.5 cluster (name server, broker-1, broker-2; the proxy in cluster mode with
    `proxy`) with `topics` (name -> (queues per broker, the brokers holding it or None for all),
    message.type NORMAL) and subscription `groups` created on every broker."""
    from bench.brokers import RocketMQCluster

    cluster = RocketMQCluster(str(base), proxy=proxy).start()
    try:
        side = Brokers("rocketmq", dict(cluster.broker_ports), [cluster.namesrv],
                       {name: cluster.grpc_endpoint for name in cluster.broker_ports} if proxy else {},
                       [cluster.grpc_endpoint] if proxy else [])
        for topic, (queues, on) in topics.items():
            for name in on or side.names:
                remoting_json(side.ports[name], RC.UPDATE_AND_CREATE_TOPIC, {
                    "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues),
                    "writeQueueNums": str(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                    "order": "false", "attributes": "+message.type=NORMAL"})
            wait_for(lambda: _has_route(side, topic, sorted(on or side.names)), 60, what=f"a route of {topic}")
        for group in groups:
            for port in side.ports.values():
                remoting_json(port, RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=dumps({"groupName": group}))
        yield side
    finally:
        cluster.stop()


def _has_route(side: Brokers, topic: str, names: list[str]) -> bool:
    try:
        return side.owners(topic) == names
    except AssertionError:  # TOPIC_NOT_EXIST until a broker registered it
        return False


@contextlib.contextmanager
def kraft_cluster(base, size: int = 3):
    """Apache Kafka 4.x: `size` KRaft nodes (broker + controller) by node id, with the gateways'
    3 s failure detection (as bench.cluster_bench)."""
    from bench.brokers import java_classpath
    from clusters import kraft_nodes, start_kraft

    nodes = kraft_nodes(java_classpath("kafka"), str(base), size,
                        {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 1000})
    try:
        start_kraft(nodes)
        wait_for(lambda: len(AdminClient({"bootstrap.servers": nodes[1].kafka_bootstrap})
                             .list_topics(timeout=5).brokers) == size, 120, what=f"{size} Kafka brokers")
        yield nodes
    finally:
        for node in nodes.values():
            node.stop()


def replicated_partition(nodes, topic: str, replication_factor: int):
    """Creates `topic` with one partition on `replication_factor` nodes; the partition once it has a
    leader and every replica in sync."""
    admin = AdminClient({"bootstrap.servers": ",".join(n.kafka_bootstrap for n in nodes.values())})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=replication_factor)])[topic].result(30)

    def ready():
        p = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
        return p.leader in nodes and len(p.isrs) == replication_factor and p

    return wait_for(ready, 60, what="a leader with its replicas in sync")
