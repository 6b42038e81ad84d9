"""Shared pieces of the gRPC methods: the protobuf modules, the method table, status helpers and
the per-app state of gRPC clients (their Settings and Telemetry streams).

The `apache.rocketmq.v2` message classes come from the PyPI package `rocketmq-python-client`
(module `rocketmq.grpc_protocol`), which ships them generated from the official .proto files.
"""
from __future__ import annotations

import dataclasses

import trio
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


@dataclasses.dataclass
class ClientSession:
    """A client known by its x-mq-client-id: its last Settings and, while its Telemetry stream is
    open, the channel of commands (RecoverOrphanedTransactionCommand, ...) to write to it."""
    client_id: str
    settings: object = None  # apache.rocketmq.v2.Settings
    commands: trio.MemorySendChannel | None = None
    group: str = ""  # the consumer or producer group of its heartbeats
    lite_topics: set = dataclasses.field(default_factory=set)  # a lite push consumer's subscriptions

    @property
    def is_lite_consumer(self) -> bool:
        return self.settings is not None and self.settings.client_type == d.ClientType.LITE_PUSH_CONSUMER

    @property
    def publishing_topics(self) -> set[str]:
        if self.settings is None or not self.settings.HasField("publishing"):
            return set()
        return {t.name for t in self.settings.publishing.topics}

    @property
    def is_producer(self) -> bool:
        return self.settings is not None and self.settings.client_type == d.ClientType.PRODUCER


@dataclasses.dataclass
class GrpcState:
    """The gRPC side's state of one process (App.grpc)."""
    clients: dict = dataclasses.field(default_factory=dict)  # client id -> ClientSession
    # (group, topic, queue) -> receipts of the FIFO messages last delivered from it (gateway.grpc.receive)
    fifo_in_flight: dict = dataclasses.field(default_factory=dict)

    def session(self, client_id: str) -> ClientSession:
        found = self.clients.get(client_id)
        if found is None:
            found = self.clients[client_id] = ClientSession(client_id)
        return found
