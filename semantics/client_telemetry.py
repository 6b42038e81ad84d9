"""KIP-714 client telemetry: the subscription the gateway hands Kafka clients and the metrics they push.

Clients ask which metrics to send (GetTelemetrySubscriptions), then push them every interval as OTLP
`MetricsData` protobuf (PushTelemetry). We keep each client instance's latest value per series for
/metrics. Both dimensions are bounded (like every labelled metric of the gateway): at most
`max_clients` instances (the one silent longest is dropped for a new one) and `max_series` series per
instance (further series are counted, not kept); an instance that stopped pushing for three intervals,
or said it is terminating, is forgotten. A payload that is not OTLP is answered as Kafka does (no error:
Kafka hands it to its exporter plugin) and stores nothing.
"""
from __future__ import annotations

import dataclasses
import time
import uuid
import zlib

from codec.kafka.records import DecodeError, decompress

# Kafka 4.3.1's answer order: zstd, lz4, gzip, snappy (all decoded by codec.kafka.records).
ACCEPTED_COMPRESSION = (4, 3, 1, 2)
NONE_COMPRESSION = 0
TELEMETRY_MAX_BYTES = 1 << 20  # Kafka's default (telemetry.max.bytes)
MAX_CLIENTS = 1000
MAX_SERIES = 300
_DELTA = 1  # AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
_FORGET_AFTER_INTERVALS = 3


class PushError(Exception):
    """A push Kafka refuses: `code` is its error code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


THROTTLING_QUOTA_EXCEEDED = 89
UNKNOWN_SUBSCRIPTION_ID = 117
UNSUPPORTED_COMPRESSION_TYPE = 76
TELEMETRY_TOO_LARGE = 118
INVALID_REQUEST = 42


@dataclasses.dataclass(slots=True)
class ClientInstance:
    client_id: str
    last_seen: float
    last_push: float | None = None
    terminating: bool = False
    series: dict = dataclasses.field(default_factory=dict)  # (metric, attributes text) -> value


class ClientTelemetry:
    def __init__(self, prefixes: list[str], interval_ms: int, max_clients: int = MAX_CLIENTS,
                 max_series: int = MAX_SERIES, clock=time.monotonic) -> None:
        self.prefixes = [p for p in prefixes if p is not None]
        self.interval_ms = interval_ms
        self.max_clients, self.max_series, self.clock = max_clients, max_series, clock
        # One subscription for every client; its id changes when the configuration does.
        self.subscription_id = zlib.crc32(f"{self.prefixes}|{interval_ms}".encode()) - (1 << 31)
        self.clients: dict[bytes, ClientInstance] = {}
        self.dropped_series = 0  # data points not kept: an instance already had max_series series
        self.undecodable = 0  # pushes whose payload was not OTLP MetricsData

    def subscription(self, instance_id: bytes, client_id: str) -> dict:
        """GetTelemetrySubscriptions' answer; a zero instance id gets a new one. Asked again by the same
        instance sooner than the push interval: THROTTLING_QUOTA_EXCEEDED, as Kafka."""
        self._forget_silent()
        assigned = not any(instance_id)
        if assigned:
            instance_id = uuid.uuid4().bytes
        known = self.clients.get(instance_id)
        if known is not None and self._too_soon(known.last_seen):
            return {"error_code": THROTTLING_QUOTA_EXCEEDED, "client_instance_id": bytes(16), "subscription_id": 0,
                    "accepted_compression_types": [], "push_interval_ms": 0, "telemetry_max_bytes": 0,
                    "delta_temporality": False, "requested_metrics": []}
        self._instance(instance_id, client_id)
        return {"error_code": 0, "client_instance_id": instance_id,  # as Kafka: the client's own, or the new one
                "subscription_id": self.subscription_id, "accepted_compression_types": list(ACCEPTED_COMPRESSION),
                "push_interval_ms": self.interval_ms, "telemetry_max_bytes": TELEMETRY_MAX_BYTES,
                "delta_temporality": False, "requested_metrics": list(self.prefixes)}

    def push(self, instance_id: bytes, subscription_id: int, terminating: bool, compression: int,
             payload: bytes) -> None:
        """Keep a push's metrics, or raise PushError with Kafka's code (checked in Kafka's order: a push
        after the terminating one, a push sooner than the interval after the previous one, then the
        subscription, compression and size; a refused push still counts for the interval)."""
        client = self.clients.get(instance_id)
        if client is None:
            raise PushError(UNKNOWN_SUBSCRIPTION_ID)
        if client.terminating:
            raise PushError(INVALID_REQUEST)
        previous, client.last_push = client.last_push, self.clock()
        if previous is not None and not terminating and self._too_soon(previous):
            raise PushError(THROTTLING_QUOTA_EXCEEDED)
        if subscription_id != self.subscription_id:
            raise PushError(UNKNOWN_SUBSCRIPTION_ID)
        if compression != NONE_COMPRESSION and compression not in ACCEPTED_COMPRESSION:
            raise PushError(UNSUPPORTED_COMPRESSION_TYPE)
        if len(payload) > TELEMETRY_MAX_BYTES:
            raise PushError(TELEMETRY_TOO_LARGE)
        client.last_seen = self.clock()
        client.terminating = terminating
        # protobuf and the OTLP messages: imported by the first push, not by every gateway start
        from google.protobuf.message import DecodeError as ProtobufDecodeError
        from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

        try:
            data = MetricsData.FromString(decompress(compression, payload))
        except (DecodeError, ProtobufDecodeError, RuntimeWarning):
            self.undecodable += 1
            return
        self._keep(client, data)

    def _instance(self, instance_id: bytes, client_id: str) -> ClientInstance:
        client = self.clients.get(instance_id)
        if client is None:
            if len(self.clients) >= self.max_clients:
                oldest = min(self.clients, key=lambda k: self.clients[k].last_seen)
                del self.clients[oldest]
            client = self.clients[instance_id] = ClientInstance(client_id, self.clock())
        client.last_seen = self.clock()
        return client

    def _too_soon(self, since: float) -> bool:
        return self.clock() - since < self.interval_ms / 1000

    def _forget_silent(self) -> None:
        horizon = self.clock() - _FORGET_AFTER_INTERVALS * self.interval_ms / 1000
        for key in [k for k, c in self.clients.items() if c.last_seen < horizon]:
            del self.clients[key]

    def _wanted(self, name: str) -> bool:
        return any(name.startswith(p) for p in self.prefixes)

    def _keep(self, client: ClientInstance, data) -> None:  # data: OTLP MetricsData
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if self._wanted(metric.name):
                        self._keep_metric(client, metric)

    def _keep_metric(self, client: ClientInstance, metric) -> None:
        kind = metric.WhichOneof("data")
        if kind == "gauge":
            points, delta = metric.gauge.data_points, False
        elif kind == "sum":
            points, delta = metric.sum.data_points, metric.sum.aggregation_temporality == _DELTA
        else:  # histograms and summaries: Kafka clients push none of their standard metrics as such
            return
        for point in points:
            value = point.as_double if point.WhichOneof("value") == "as_double" else float(point.as_int)
            key = (metric.name, _attributes_text(point.attributes))
            if key not in client.series and len(client.series) >= self.max_series:
                self.dropped_series += 1
                continue
            client.series[key] = client.series.get(key, 0.0) + value if delta else value


def _attributes_text(attributes) -> str:
    """`k=v,k=v` in key order: one label instead of one per attribute key (the keys vary per metric)."""
    parts = []
    for kv in sorted(attributes, key=lambda a: a.key):
        kind = kv.value.WhichOneof("value")
        parts.append(f"{kv.key}={getattr(kv.value, kind) if kind else ''}")
    return ",".join(parts)
