"""A tiny blocking Kafka client over a raw socket, for the protocol-level tests."""
from __future__ import annotations

import socket
import struct

from codec.kafka import protocol


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exact(4))[0]
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            out += chunk
        return bytes(out)

    def call(self, api_key: int, version: int, body: dict) -> dict:
        self.correlation += 1
        self.sock.sendall(protocol.request_frame(api_key, version, self.correlation, body))
        correlation, resp = protocol.decode_response(api_key, version, self.recv_frame())
        assert correlation == self.correlation
        return resp

    def is_closed(self) -> bool:
        """True once the peer has closed the connection (reads EOF or reset)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True


def produce_body(topic: str, partition: int, batch: bytes, acks: int = -1) -> dict:
    return {"acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}


def produce_error(resp: dict) -> tuple[int, int]:
    p = resp["responses"][0]["partition_responses"][0]
    return p["error_code"], p["base_offset"]
