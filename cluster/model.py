"""The cluster model, as stored in etcd (docs/cluster.md): live members, topics, and one assignment
per queue {leader, replicas, isr, leader epoch}; placement of new queues across live members;
stable (rendezvous) hashing of group and transactional ids onto members. Pure data and functions:
the etcd side is `cluster.coordination`, the watched snapshot `cluster.view`.

Keys (under PREFIX):
  members/<node id>          one live gateway, put with its lease (gone when the lease expires)
  topics/<topic>             {"queues": n, "perm": p, "attributes": {...}}
  queues/<topic>/<queue id>  {"leader": id, "replicas": [ids], "isr": [ids], "epoch": e}
  producer-ids               {"next": n}: the next unallocated Kafka producer id
  offsets/["group","topic",q]  {"offset": o, "metadata": m, "epoch": e}: the cluster's one offset table
  txns/<transactional id>    a Kafka transactional id's coordinator state (gateway.cluster.txns)
  group-configs/<group>      a Kafka group's share.* / streams.* configs (gateway.cluster.group_configs)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json

PREFIX = b"/rocketgate/"
MEMBERS = PREFIX + b"members/"
TOPICS = PREFIX + b"topics/"
QUEUES = PREFIX + b"queues/"
PRODUCER_IDS = PREFIX + b"producer-ids"
OFFSETS = PREFIX + b"offsets/"
TXNS = PREFIX + b"txns/"
FIRST_PRODUCER_ID = 1000


@dataclasses.dataclass(frozen=True, slots=True)
class Member:
    """One live gateway: where clients reach it."""
    node_id: int
    host: str
    kafka_port: int
    remoting_port: int
    grpc_port: int = 0  # RocketMQ 5 gRPC (--grpc-port); 0 when off
    schema_registry_port: int = 0  # the registry's REST API (--schema-registry-port); 0 when off

    @property
    def remoting_addr(self) -> str:
        return f"{self.host}:{self.remoting_port}"

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "Member":
        d = json.loads(raw)
        return cls(int(d["node_id"]), d["host"], int(d["kafka_port"]), int(d["remoting_port"]),
                   int(d.get("grpc_port") or 0), int(d.get("schema_registry_port") or 0))


@dataclasses.dataclass(frozen=True, slots=True)
class QueueAssignment:
    """Who serves one queue: the leader takes writes and reads; replicas copy it; `isr` are the
    replicas caught up (the leader included); `epoch` grows with every leader change (fencing)."""
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    epoch: int = 0

    def to_json(self) -> bytes:
        return json.dumps({"leader": self.leader, "replicas": list(self.replicas), "isr": list(self.isr),
                           "epoch": self.epoch}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "QueueAssignment":
        d = json.loads(raw)
        return cls(int(d["leader"]), tuple(d["replicas"]), tuple(d["isr"]), int(d.get("epoch", 0)))


@dataclasses.dataclass(frozen=True, slots=True)
class TopicRecord:
    queues: int
    perm: int = 6
    attributes: dict = dataclasses.field(default_factory=dict)
    topic_id: str = ""  # the creator's topic id (KIP-516) as UUID text, which every gateway takes; "" before ids

    def to_json(self) -> bytes:
        return json.dumps({"queues": self.queues, "perm": self.perm, "attributes": self.attributes,
                           "topicId": self.topic_id}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> "TopicRecord":
        d = json.loads(raw)
        tid = d.get("topicId")
        return cls(int(d["queues"]), int(d.get("perm", 6)), dict(d.get("attributes") or {}),
                   tid if isinstance(tid, str) else "")


def member_key(node_id: int) -> bytes:
    return MEMBERS + str(node_id).encode()


def topic_key(topic: str) -> bytes:
    return TOPICS + topic.encode()


def queue_key(topic: str, queue_id: int) -> bytes:
    return QUEUES + topic.encode() + b"/" + str(queue_id).encode()


def parse_queue_key(key: bytes) -> tuple[str, int]:
    topic, _, qid = key[len(QUEUES):].rpartition(b"/")
    return topic.decode(), int(qid)


def offset_key(group: str, topic: str, queue_id: int) -> bytes:
    return OFFSETS + json.dumps([group, topic, queue_id]).encode()


def txn_key(transactional_id: str) -> bytes:
    return TXNS + transactional_id.encode()


def group_offsets_prefix(group: str) -> bytes:
    return OFFSETS + json.dumps([group]).encode()[:-1] + b","


def parse_offset_key(key: bytes) -> tuple[str, str, int]:
    group, topic, qid = json.loads(key[len(OFFSETS):])
    return group, topic, int(qid)


def _hash(*parts) -> int:
    return int.from_bytes(hashlib.sha256("\0".join(map(str, parts)).encode()).digest()[:8], "big")


def place(topic: str, queues: int, members: list[int], replication_factor: int,
          leader: int | None = None) -> list[QueueAssignment]:
    """Assignments for a new topic: leaders round-robin over the live members (starting at a
    member picked by the topic's hash, so small topics do not all land on the first node), each
    queue's replicas the next members in order. `replication_factor` is capped by the member count.
    With `leader` (a live member) every queue is led by it: a topic whose semantics span all its
    queues (a lite topic's queue is a hash over all of them, priority is an order across them)."""
    nodes = sorted(members)
    if not nodes:
        raise ValueError("no live member to place queues on")
    rf = max(1, min(replication_factor, len(nodes)))
    whole = leader in nodes
    start = nodes.index(leader) if whole else _hash(topic) % len(nodes)
    out = []
    for q in range(queues):
        first = start if whole else (start + q) % len(nodes)
        replicas = tuple(nodes[(first + r) % len(nodes)] for r in range(rf))
        out.append(QueueAssignment(replicas[0], replicas, replicas, 0))
    return out


def coordinator_of(key: str, members: list[int]) -> int | None:
    """The member that coordinates a consumer group or transactional id: rendezvous hashing, so a
    member joining or leaving moves only the keys it wins or held."""
    return max(members, key=lambda node: (_hash(key, node), node), default=None)


def elect(assignment: QueueAssignment, live: set[int]) -> QueueAssignment | None:
    """The assignment after its leader is gone: the first live in-sync replica leads, the epoch is
    bumped; None when no in-sync replica is alive (the queue stays unavailable)."""
    candidates = [n for n in assignment.isr if n in live and n != assignment.leader]
    if not candidates:
        return None
    leader = candidates[0]
    return QueueAssignment(leader, assignment.replicas, tuple(n for n in assignment.isr if n in live),
                           assignment.epoch + 1)
