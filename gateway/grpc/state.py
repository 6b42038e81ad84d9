"""The gRPC side's per-process state (App.grpc): its clients' sessions. Apart from the protobuf
messages (gateway.grpc.common) so that a gateway without --grpc-port never imports the RocketMQ SDK,
grpc and opentelemetry (~0.7 s of imports)."""
from __future__ import annotations

import dataclasses

import trio


def _client_types():
    """apache.rocketmq.v2.ClientType; a session has Settings only once a gRPC client sent them, so
    the SDK's protobuf modules are loaded by then."""
    from rocketmq.grpc_protocol import definition_pb2

    return definition_pb2.ClientType


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
        return self.settings is not None and self.settings.client_type == _client_types().LITE_PUSH_CONSUMER

    @property
    def publishing_topics(self) -> set[str]:
        if self.settings is None or not self.settings.HasField("publishing"):
            return set()
        return {t.name for t in self.settings.publishing.topics}

    @property
    def is_producer(self) -> bool:
        return self.settings is not None and self.settings.client_type == _client_types().PRODUCER


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
