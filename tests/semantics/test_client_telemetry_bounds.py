"""semantics.client_telemetry keeps bounded state: client instances and series per instance are capped,
silent instances are forgotten, delta sums add up (what /metrics shows per Kafka client, KIP-714)."""
from __future__ import annotations

from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from semantics.client_telemetry import ClientTelemetry

PREFIX = "org.apache.kafka.producer."


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _sums(values: dict, delta: bool = False) -> bytes:
    data = MetricsData()
    scope = data.resource_metrics.add().scope_metrics.add()
    for name, value in values.items():
        metric = scope.metrics.add(name=name)
        metric.sum.aggregation_temporality = 1 if delta else 2
        metric.sum.data_points.add(as_int=value)
    return data.SerializeToString()


def _new(telemetry: ClientTelemetry) -> bytes:
    return telemetry.subscription(bytes(16), "c")["client_instance_id"]


def test_series_per_instance_capped():
    telemetry = ClientTelemetry([PREFIX], 1000, max_series=2)
    instance = _new(telemetry)
    telemetry.push(instance, telemetry.subscription_id, False, 0, _sums({PREFIX + n: 1 for n in "abc"}))
    assert len(telemetry.clients[instance].series) == 2 and telemetry.dropped_series == 1


def test_instances_capped_longest_silent_dropped():
    clock = Clock()
    telemetry = ClientTelemetry([PREFIX], 1000, max_clients=2, clock=clock)
    first = _new(telemetry)
    clock.now = 1
    second = _new(telemetry)
    clock.now = 2
    third = _new(telemetry)
    assert set(telemetry.clients) == {second, third} and first not in telemetry.clients


def test_silent_instances_forgotten_and_delta_sums_added():
    clock = Clock()
    telemetry = ClientTelemetry([PREFIX], 1000, clock=clock)
    instance = _new(telemetry)
    for _ in range(3):
        clock.now += 1
        telemetry.push(instance, telemetry.subscription_id, False, 0, _sums({PREFIX + "sent": 5}, delta=True))
    assert telemetry.clients[instance].series[(PREFIX + "sent", "")] == 15.0
    clock.now += 10
    _new(telemetry)
    assert instance not in telemetry.clients
