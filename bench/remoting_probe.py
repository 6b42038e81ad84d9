"""Minimal RocketMQ remoting request used only to health-check a name server: it asks for the cluster
table (GET_BROKER_CLUSTER_INFO) and looks for a broker name. Self-contained so the harness does not
depend on the gateway's own codec being finished."""
from __future__ import annotations

import json
import socket
import struct

GET_BROKER_CLUSTER_INFO = 106
_LEN = struct.Struct(">II")


def request(addr: str, code: int, timeout: float = 2.0) -> bytes:
    """Send one JSON-serialized remoting command; return the response body."""
    host, port = addr.rsplit(":", 1)
    header = json.dumps({"code": code, "flag": 0, "language": "PYTHON", "opaque": 1,
                         "serializeTypeCurrentRPC": "JSON", "version": 500}).encode()
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(_LEN.pack(4 + len(header), len(header)) + header)
        total = struct.unpack(">I", _recv(s, 4))[0]
        frame = _recv(s, total)
    header_len = struct.unpack(">I", frame[:4])[0] & 0xFFFFFF
    return frame[4 + header_len:]


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def cluster_has_broker(namesrv: str, broker_name: str) -> bool:
    return f'"{broker_name}"'.encode() in request(namesrv, GET_BROKER_CLUSTER_INFO)
