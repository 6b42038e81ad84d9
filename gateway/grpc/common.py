"""Shared pieces of the gRPC methods: the protobuf modules, the method table and status helpers
(the per-app state of gRPC clients is gateway.grpc.state).

The `apache.rocketmq.v2` message classes come from the PyPI package `rocketmq-python-client`
(module `rocketmq.grpc_protocol`), which ships them generated from the official .proto files.
"""
from __future__ import annotations

from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s  # noqa: F401  (re-exported)

SERVICE = "apache.rocketmq.v2.MessagingService"
Code = d.Code
OK_CODE = Code.OK  # the enum wrapper looks names up by __getattr__: once, not per response
RPCS: dict = {}  # method name -> (kind, handler); kind "unary", "server_stream" or "bidi"
TELEMETRY_QUEUE = 64  # server commands waiting for a client's Telemetry stream


class RpcError(Exception):
    """Ends a method with this apache.rocketmq.v2.Code in the response's Status (gRPC status OK,
    as the RocketMQ proxy answers business errors)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def rpc(name: str, kind: str = "unary"):
    def register(fn):
        RPCS[name] = (kind, fn)
        return fn
    return register


def ok(message: str = "OK"):
    return d.Status(code=OK_CODE, message=message)


def status(code: int, message: str):
    return d.Status(code=code, message=message)


def resource_name(res) -> str:
    return res.name
