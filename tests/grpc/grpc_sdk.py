"""Helpers of the gRPC SDK tests: a gateway with --grpc-port, and Python SDK clients on it."""
from __future__ import annotations

import logging
import os
import time

from gateway_process import GatewayProcess, free_port, wait_port

# A quick transaction check-back for the checker tests, but after a receive's long poll ends; push
# consumers long-poll 2 s (the SDKs' close() waits for the receive in flight: 30 s by default).
GATEWAY_ARGS = ["--transaction-timeout-ms", "8000", "--transaction-check-interval-ms", "1000",
                "--grpc-long-polling-ms", "2000"]


class GrpcGateway(GatewayProcess):
    def __init__(self, data_dir: str, extra_args: list[str] | None = None) -> None:
        self.grpc_port = free_port()
        super().__init__(data_dir, extra_args=["--grpc-port", str(self.grpc_port), *(extra_args or [])])

    @property
    def endpoints(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self) -> "GrpcGateway":
        super().start()
        wait_port(self.grpc_port)
        return self


def start_target(data_dir: str, topics: dict, fifo_groups=()):
    """The gateway with --grpc-port; with GRPC_TARGET=proxy, Apache RocketMQ's own proxy instead (to
    check a test against the real thing), with `topics` (name -> message type) created first."""
    if os.environ.get("GRPC_TARGET") == "proxy":
        from bench.grpc_proxy import RealProxy
        proxy = RealProxy(data_dir).start()
        proxy.create_topics(topics, fifo_groups)
        return proxy
    return GrpcGateway(data_dir, GATEWAY_ARGS).start()


def config(endpoints: str):
    from rocketmq import ClientConfiguration, Credentials
    logging.getLogger("rocketmq").setLevel(logging.WARNING)
    return ClientConfiguration(endpoints, Credentials(), request_timeout=5)


def message(topic: str, body: bytes, tag: str | None = None, keys=(), group: str | None = None,
            deliver_at: int | None = None, props: dict | None = None):
    from rocketmq import Message
    m = Message()
    m.topic, m.body = topic, body
    if tag:
        m.tag = tag
    if keys:
        m.keys = keys[0] if len(keys) == 1 else " ".join(keys)
    if group:
        m.message_group = group
    if deliver_at:
        m.delivery_timestamp = deliver_at
    for k, v in (props or {}).items():
        m.add_property(k, v)
    return m


def receive_all(consumer, want: int, invisible: int = 30, timeout: float = 30.0, ack: bool = True) -> list:
    """Receive (and ack) until `want` messages came or `timeout` passed."""
    got, deadline = [], time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for m in consumer.receive(16, invisible):
            got.append(m)
            if ack:
                consumer.ack(m)
    return got
