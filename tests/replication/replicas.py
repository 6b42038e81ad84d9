"""Helpers of the replication tests: real gateway processes given a static role assignment through
the REPLICA_ROLE request (the hook the cluster layer drives), and tiny blocking clients."""
from __future__ import annotations

import itertools
import json
import os
import socket
import sys

from codec.remoting import FrameReader, RemotingCommand, encode
from gateway.remoting.replica_fetch import REPLICA_ROLE, REPLICA_STATE

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.extend([_TESTS, os.path.join(_TESTS, "cluster")])  # gateway_process; clusters and raw_kafka
from clusters import wait_for as wait_until  # noqa: E402,F401  (the tests' one polling helper)
from raw_kafka import KafkaRaw, batch  # noqa: E402,F401  (batch: the tests' record batches)

LAG_MS = 1500  # --replica-lag-time-max-ms of the test gateways
_opaque = itertools.count(1)


def node(gw) -> str:
    return f"127.0.0.1:{gw.remoting_port}"


def remoting(gw, code: int, fields: dict | None = None, body: bytes = b"", timeout: float = 30) -> RemotingCommand:
    with socket.create_connection(("127.0.0.1", gw.remoting_port), timeout=timeout) as sock:
        opaque = next(_opaque)
        sock.sendall(encode(RemotingCommand(code=code, ext_fields=fields or {}, body=body, opaque=opaque)))
        reader = FrameReader()
        while True:
            resp = reader.next_command()
            if resp is not None and resp.opaque == opaque:
                return resp
            if resp is None:
                data = sock.recv(1 << 16)
                assert data, "connection closed"
                reader.feed(data)


def set_role(gw, topic: str, role: str, epoch: int, qid: int = 0, **spec) -> RemotingCommand:
    body = json.dumps({"topic": topic, "queueId": qid, "role": role, "epoch": epoch, **spec}).encode()
    return remoting(gw, REPLICA_ROLE, body=body)


def lead(gw, followers: list, topic: str, epoch: int, qid: int = 0, isr: list | None = None) -> None:
    resp = set_role(gw, topic, "leader", epoch, qid, replicas=[node(f) for f in followers],
                    isr=None if isr is None else [node(f) for f in isr])
    assert resp.code == 0, resp.remark


def follow(gw, leader, topic: str, epoch: int, qid: int = 0) -> None:
    resp = set_role(gw, topic, "follower", epoch, qid, leader=node(leader))
    assert resp.code == 0, resp.remark


def replicate(leader, followers: list, topic: str, epoch: int, isr: list | None = None, later: list = ()) -> None:
    """The role-setting block of the tests (what the cluster layer does from etcd): `leader` leads
    `topic` in `epoch` replicated to `followers`, which follow it now, and to `later` (replicas that
    are down: they follow once back)."""
    lead(leader, [*followers, *later], topic, epoch, isr=isr)
    for f in followers:
        follow(f, leader, topic, epoch)


def state(gw, topic: str, qid: int = 0) -> dict:
    return json.loads(remoting(gw, REPLICA_STATE, {"topic": topic, "queueId": str(qid)}).body)


class Kafka(KafkaRaw):
    """A blocking raw Kafka connection to a test gateway (one request at a time)."""

    def __init__(self, gw, timeout: float = 30.0) -> None:
        super().__init__("127.0.0.1", gw.kafka_port, timeout)


def fetched_values(kafka: Kafka, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """(offset, value) of every record readable from offset 0."""
    return kafka.fetched_values(topic, partition)


def queue_entries(gw_data_dir: str, topic: str, qid: int = 0) -> list[tuple[int, bytes, dict]]:
    """(queue offset, body, properties) of a stopped gateway's queue, read from its store files."""
    import store
    s = store.open(gw_data_dir)
    try:
        return [(q, m.body, m.properties) for q, m in s.iterate(topic, qid)]
    finally:
        s.close()
