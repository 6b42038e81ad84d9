"""gRPC traffic in /metrics like the other protocols: requests, errors and latency per method
(protocol "grpc"), open and accepted connections; from the stock Python SDK's calls."""
from __future__ import annotations

import time

import pytest

from gateway_process import free_port
from metrics_page import sample as value, scrape
from grpc_sdk import GATEWAY_ARGS, GrpcGateway, config, message

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import Producer  # noqa: E402


def test_grpc_requests_errors_latency_and_connections(tmp_path):
    http_port = free_port()
    http = f"127.0.0.1:{http_port}"
    gw = GrpcGateway(str(tmp_path / "data"), [*GATEWAY_ARGS, "--http-port", str(http_port),
                                              "--timer-max-delay-sec", "60"]).start()
    try:
        producer = Producer(config(gw.endpoints), ("grpc-metrics",))
        producer.startup()
        try:
            for i in range(3):
                producer.send(message("grpc-metrics", b"m%d" % i))
            with pytest.raises(Exception):  # beyond --timer-max-delay-sec: the gateway's Status refuses it
                producer.send(message("grpc-metrics", b"later", deliver_at=int(time.time() * 1000) + 3_600_000))
            during = scrape(http)
        finally:
            producer.shutdown()
    finally:
        gw.stop()
    grpc = {"protocol": "grpc"}
    sent = value(during, "rocketgate_requests_total", request="SendMessage", **grpc)
    failed = value(during, "rocketgate_request_errors_total", request="SendMessage", **grpc)
    assert sent >= 4 and failed >= 1 and sent - failed >= 3, (sent, failed)
    assert value(during, "rocketgate_request_duration_seconds_count", request="SendMessage", **grpc) == sent
    assert value(during, "rocketgate_request_duration_seconds_bucket", request="SendMessage", le="+Inf", **grpc) == sent
    assert value(during, "rocketgate_requests_total", request="QueryRoute", **grpc) >= 1
    assert value(during, "rocketgate_connections", **grpc) >= 1
    assert value(during, "rocketgate_connections_accepted_total", **grpc) >= 1
