"""Tiny blocking Kafka and remoting clients for the cluster and replication tests: one request per
call. The Kafka one is the protocol tests' `RawClient` (tests/kafka/kafka_raw.py) with the requests
these tests make."""
from __future__ import annotations

import json
import os
import socket
import ssl
import sys

from codec.kafka import records
from codec.remoting import RemotingCommand, encode
from codec.remoting.command import FrameReader

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
from kafka_raw import RawClient, produce_body, produce_error  # noqa: E402

PRODUCE, FETCH, LIST_OFFSETS, FIND_COORDINATOR, INIT_PRODUCER_ID = 0, 1, 2, 10, 22


def send_command(port: int, cmd: RemotingCommand, tls: ssl.SSLContext | None = None,
                 timeout: float = 10) -> RemotingCommand:
    """One remoting request over its own connection to 127.0.0.1 (TLS with `tls`); the response."""
    cmd.opaque = 1
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        sock = tls.wrap_socket(raw, server_hostname="127.0.0.1") if tls else raw
        sock.sendall(encode(cmd))
        reader = FrameReader()
        while (resp := reader.next_command()) is None:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            reader.feed(data)
        return resp


def remoting_call(port: int, code: int, fields: dict, body: bytes = b"", timeout: float = 10) -> dict | RemotingCommand:
    """One remoting request; its JSON body as a dict when it has one, else the response."""
    resp = send_command(port, RemotingCommand(code=code, ext_fields=fields, body=body), timeout=timeout)
    return json.loads(resp.body) if resp.body else resp


def batch(values: list[bytes], **kw) -> bytes:
    return records.build_batch([(1000 + i, None, v, []) for i, v in enumerate(values)], base_timestamp=1000, **kw)


class KafkaRaw(RawClient):
    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        super().__init__(f"{host}:{port}", timeout)

    def produce(self, topic: str, data: bytes, acks: int = -1, partition: int = 0,
                timeout_ms: int = 30000) -> tuple[int, int]:
        """(error code, base offset) of producing the record batch `data`."""
        body = produce_body(topic, partition, data, acks)
        body["timeout_ms"] = timeout_ms
        return produce_error(self.call(PRODUCE, 9, body))

    def produce_error(self, topic: str, partition: int, value: bytes, acks: int = -1) -> int:
        return self.produce(topic, batch([value]), acks, partition, timeout_ms=5000)[0]

    def fetch(self, topic: str, offset: int, partition: int = 0, max_wait_ms: int = 0) -> dict:
        body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                    {"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                     "partition_max_bytes": 1 << 20}]}]}
        return self.call(FETCH, 12, body)["responses"][0]["partitions"][0]

    def fetch_error(self, topic: str, partition: int) -> int:
        return self.fetch(topic, 0, partition)["error_code"]

    def fetched_values(self, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
        """(offset, value) of every record readable from offset 0."""
        out, offset = [], 0
        while True:
            part = self.fetch(topic, offset, partition)
            assert part["error_code"] == 0, part
            data = bytes(part["records"] or b"")
            if not data:
                return out
            for b in records.parse_batches(data):
                for i, rec in enumerate(records.decode_records(b.records_bytes(), b.record_count)):
                    out.append((b.base_offset + i, rec.value))
            offset = out[-1][0] + 1

    def list_offsets_error(self, topic: str, partition: int) -> int:
        resp = self.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
        return resp["topics"][0]["partitions"][0]["error_code"]

    def producer_id(self) -> tuple[int, int]:
        r = self.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        return r["producer_id"], r["producer_epoch"]

    def init_producer_id(self) -> int:
        resp = self.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert resp["error_code"] == 0
        return resp["producer_id"]

    def find_coordinator(self, key: str) -> int:
        resp = self.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [key]})
        return resp["coordinators"][0]["node_id"]
