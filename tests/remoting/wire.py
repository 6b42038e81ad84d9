"""A minimal blocking remoting peer for the server tests (raw frames over a real socket)."""
from __future__ import annotations

import itertools
import json
import socket

from codec.remoting import JSON, FrameReader, RemotingCommand, encode

_opaque = itertools.count(1)


class Peer:
    def __init__(self, addr: str, serialize_type: int = JSON, timeout: float = 30.0) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.reader = FrameReader()
        self.serialize_type = serialize_type

    def close(self) -> None:
        self.sock.close()

    def send(self, code: int, fields: dict | None = None, body: bytes = b"", oneway: bool = False) -> int:
        opaque = next(_opaque)
        self.sock.sendall(encode(RemotingCommand(code=code, ext_fields=fields or {}, body=body, opaque=opaque,
                                                 flag=2 if oneway else 0, serialize_type=self.serialize_type)))
        return opaque

    def receive(self) -> RemotingCommand | None:
        """The next frame, or None when the server closed the connection."""
        while True:
            cmd = self.reader.next_command()
            if cmd is not None:
                return cmd
            data = self.sock.recv(65536)
            if not data:
                return None
            self.reader.feed(data)

    def call(self, code: int, fields: dict | None = None, body: bytes = b"") -> RemotingCommand:
        opaque = self.send(code, fields, body)
        while True:
            resp = self.receive()
            assert resp is not None, "connection closed"
            if resp.is_response and resp.opaque == opaque:
                return resp

    def json_call(self, code: int, fields: dict | None = None, body: bytes = b""):
        resp = self.call(code, fields, body)
        assert resp.code == 0, (resp.code, resp.remark)
        return json.loads(resp.body)
