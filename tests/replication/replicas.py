"""Helpers of the replication tests: real gateway processes given a static role assignment through
the REPLICA_ROLE request (the hook the cluster layer drives), and tiny blocking clients."""
from __future__ import annotations

import itertools
import json
import socket
import struct
import time

from codec.kafka import protocol, records
from codec.remoting import FrameReader, RemotingCommand, encode
from gateway.remoting.replica_fetch import REPLICA_ROLE, REPLICA_STATE

PRODUCE, FETCH, INIT_PID = 0, 1, 22
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


def state(gw, topic: str, qid: int = 0) -> dict:
    return json.loads(remoting(gw, REPLICA_STATE, {"topic": topic, "queueId": str(qid)}).body)


def wait_until(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Kafka:
    """A blocking raw Kafka connection (one request at a time)."""

    def __init__(self, gw, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", gw.kafka_port), timeout=timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def call(self, api_key: int, version: int, body: dict) -> dict:
        self.correlation += 1
        self.sock.sendall(protocol.request_frame(api_key, version, self.correlation, body))
        size = struct.unpack(">i", self._exact(4))[0]
        correlation, resp = protocol.decode_response(api_key, version, self._exact(size))
        assert correlation == self.correlation
        return resp

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            out += chunk
        return bytes(out)

    def produce(self, topic: str, batch: bytes, acks: int = -1, partition: int = 0,
                timeout_ms: int = 30000) -> tuple[int, int]:
        """(error code, base offset)."""
        resp = self.call(PRODUCE, 9, {"acks": acks, "timeout_ms": timeout_ms, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        p = resp["responses"][0]["partition_responses"][0]
        return p["error_code"], p["base_offset"]

    def fetch(self, topic: str, offset: int, partition: int = 0, max_wait_ms: int = 0) -> dict:
        body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                    {"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                     "partition_max_bytes": 1 << 20}]}]}
        return self.call(FETCH, 12, body)["responses"][0]["partitions"][0]

    def producer_id(self) -> tuple[int, int]:
        r = self.call(INIT_PID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        return r["producer_id"], r["producer_epoch"]


def batch(values: list[bytes], **kw) -> bytes:
    return records.build_batch([(1000 + i, None, v, []) for i, v in enumerate(values)], base_timestamp=1000, **kw)


def fetched_values(kafka: Kafka, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """(offset, value) of every record readable from offset 0."""
    out, offset = [], 0
    while True:
        part = kafka.fetch(topic, offset, partition)
        assert part["error_code"] == 0, part
        data = bytes(part["records"] or b"")
        if not data:
            return out
        for b in records.parse_batches(data):
            for i, rec in enumerate(records.decode_records(b.records_bytes(), b.record_count)):
                out.append((b.base_offset + i, rec.value))
        offset = out[-1][0] + 1


def queue_entries(gw_data_dir: str, topic: str, qid: int = 0) -> list[tuple[int, bytes, dict]]:
    """(queue offset, body, properties) of a stopped gateway's queue, read from its store files."""
    import store
    s = store.open(gw_data_dir)
    try:
        return [(q, m.body, m.properties) for q, m in s.iterate(topic, qid)]
    finally:
        s.close()
