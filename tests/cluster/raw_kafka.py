"""Tiny blocking Kafka and remoting clients for the cluster tests: one request per call."""
from __future__ import annotations

import socket
import struct

from codec.kafka import protocol, records
from codec.remoting import RemotingCommand, encode
from codec.remoting.command import FrameReader


def remoting_call(port: int, code: int, fields: dict, body: bytes = b"") -> dict | RemotingCommand:
    """One remoting request; its JSON body as a dict when it has one, else the response."""
    import json
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode(RemotingCommand(code=code, ext_fields=fields, body=body, opaque=1)))
        reader = FrameReader()
        while (resp := reader.next_command()) is None:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            reader.feed(data)
    return json.loads(resp.body) if resp.body else resp


class KafkaRaw:
    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
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

    def produce_error(self, topic: str, partition: int, value: bytes) -> int:
        batch = records.build_batch([(0, None, value, [])], base_timestamp=1000)
        resp = self.call(0, 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        return resp["responses"][0]["partition_responses"][0]["error_code"]

    def list_offsets_error(self, topic: str, partition: int) -> int:
        resp = self.call(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
        return resp["topics"][0]["partitions"][0]["error_code"]

    def fetch_error(self, topic: str, partition: int) -> int:
        resp = self.call(1, 11, {"max_wait_ms": 0, "min_bytes": 0, "isolation_level": 0, "session_id": 0,
                                 "topics": [{"topic": topic, "partitions": [
                                     {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
                                 "forgotten_topics_data": [], "rack_id": ""})
        return resp["responses"][0]["partitions"][0]["error_code"]

    def init_producer_id(self) -> int:
        resp = self.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert resp["error_code"] == 0
        return resp["producer_id"]

    def find_coordinator(self, key: str) -> int:
        resp = self.call(10, 4, {"key_type": 0, "coordinator_keys": [key]})
        return resp["coordinators"][0]["node_id"]
