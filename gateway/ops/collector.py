"""The gateway's Prometheus registry: a collector that builds every metric family at scrape time
from the App (`gateway.ops.inspect`) and its hot-path statistics (`gateway.ops.stats`), plus the
process collector (CPU, memory, open files). A registry of our own, not prometheus_client's global
one, so two Apps in one process (tests) never share metrics."""
from __future__ import annotations

import time
import uuid

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

import gateway.ops.inspect as inspect
from gateway.tier_service import tier_metrics

NS = "rocketgate"


def make_registry(app) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AppCollector(app))
    ProcessCollector(registry=registry)
    return registry


def _gauge(name: str, doc: str, labels=(), samples=()) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{NS}_{name}", doc, labels=list(labels))
    for label_values, value in samples:
        family.add_metric(list(label_values), value)
    return family


def _counter(name: str, doc: str, labels=(), samples=()) -> CounterMetricFamily:
    family = CounterMetricFamily(f"{NS}_{name}", doc, labels=list(labels))
    for label_values, value in samples:
        family.add_metric(list(label_values), value)
    return family


def _histogram(name: str, doc: str, labels, samples) -> HistogramMetricFamily:
    family = HistogramMetricFamily(f"{NS}_{name}", doc, labels=list(labels))
    for label_values, hist in samples:
        family.add_metric(list(label_values), hist.cumulative(), hist.total)
    return family


class AppCollector:
    def __init__(self, app) -> None:
        self.app = app

    def collect(self):
        yield from self._traffic()
        yield from self._store()
        yield from self._consumers()
        yield from self._semantics()
        yield from self._client_telemetry()

    def _traffic(self):
        stats = self.app.stats
        req = stats.requests
        labels = ("protocol", "request")
        yield _counter("requests", "Requests handled, by protocol and API / request code.", labels,
                       ((k, h.count) for k, h in req.latency.items()))
        yield _counter("request_errors", "Requests that failed: a Kafka request that closed the connection, "
                       "a remoting answer other than SUCCESS.", labels, req.errors.items())
        yield _histogram("request_duration_seconds", "Time from reading a request to its answer.", labels,
                         req.latency.items())
        yield _counter("received_bytes", "Bytes read from client connections.", ("protocol",),
                       (((p,), n) for p, n in stats.bytes_in.items()))
        yield _counter("sent_bytes", "Bytes written to client connections.", ("protocol",),
                       (((p,), n) for p, n in stats.bytes_out.items()))
        yield _gauge("connections", "Open client connections per listener.", ("protocol",),
                     (((p,), n) for p, n in stats.connections.items()))
        yield _counter("connections_accepted", "Client connections accepted per listener.", ("protocol",),
                       (((p,), n) for p, n in stats.connections_accepted.items()))
        if stats.request_bytes is not None:
            budget = stats.request_bytes
            yield _gauge("buffered_request_bytes", "Request bytes read and not yet handled (all connections).",
                         samples=[((), budget.total)])
            yield _gauge("buffered_request_bytes_peak", "The most request bytes buffered at once since the start.",
                         samples=[((), budget.peak)])
            yield _counter("read_pauses", "Reads that waited for --max-buffered-request-bytes room.",
                           samples=[((), budget.pauses)])
        yield _counter("messages_appended", "Logical messages stored per topic (both protocols; a Kafka "
                       "record counts once).", ("topic",), (((t,), n) for t, n in stats.appended.items()))
        yield _counter("fetched_bytes", "Message bytes served to consumers per topic (Kafka Fetch and "
                       "ShareFetch partitions, RocketMQ pulls and POPs over remoting and gRPC).", ("protocol", "topic"), stats.fetched_bytes.items())
        yield _counter("fetches", "Fetch answers that carried messages per topic (a Kafka partition in a Fetch "
                       "or ShareFetch response, a RocketMQ pull or POP).", ("protocol", "topic"), stats.fetches.items())
        yield _counter("schema_refused_records", "Records (Kafka) and messages (RocketMQ) refused by their topic's "
                       "schema validation, per protocol, topic and side (key or value).", ("protocol", "topic", "side"),
                       self.app.schema_validation.refused.items())
        yield _counter("principal_requests", "Requests per authenticated principal (User:ANONYMOUS without "
                       "authentication).", ("protocol", "principal"), stats.principal_requests.items())
        yield _gauge("up_seconds", "Seconds since the gateway started.", samples=[((), time.time() - stats.started)])
        yield _gauge("ready", "1 when the store is recovered and the listeners accept connections.",
                     samples=[((), 1.0 if stats.ready() else 0.0)])

    def _store(self):
        app, stats = self.app, self.app.stats
        st = app.store
        yield _histogram("store_write_duration_seconds", "How long each CommitLog write held the store.",
                         (), [((), stats.store_writes)])
        yield _histogram("store_flush_duration_seconds", "Duration of each CommitLog fdatasync.",
                         (), [((), stats.store_flushes)])
        yield _gauge("commitlog_max_offset_bytes", "CommitLog end offset.", samples=[((), st.max_physical_offset)])
        yield _gauge("commitlog_min_offset_bytes", "First CommitLog offset still stored.",
                     samples=[((), st.min_physical_offset)])
        yield _gauge("commitlog_unflushed_bytes", "CommitLog bytes written but not yet flushed to disk.",
                     samples=[((), max(0, st.max_physical_offset - st.flushed_offset))])
        yield _gauge("commitlog_files", "CommitLog segment files.", samples=[((), inspect.commitlog_files(app))])
        yield _gauge("store_disk_bytes", "Bytes on disk per store directory.", ("directory",),
                     (((d,), n) for d, n in inspect.disk_usage(app).items()))
        yield _gauge("topics", "Topics (including system, retry and DLQ topics).",
                     samples=[((), len(st.topics.names()))])
        yield from tier_metrics(app, _gauge, _counter)

    def _consumers(self):
        app = self.app
        lag = _gauge("consumer_lag_messages", "End offset minus committed offset per group, topic and queue "
                     "(both protocols: one offset table).", ("group", "topic", "queue"))
        committed = _gauge("consumer_committed_offset", "Committed offset per group, topic and queue.",
                           ("group", "topic", "queue"))
        for group, rows in inspect.all_lag(app).items():
            for row in rows:
                labels = [group, row["topic"], str(row["queue"])]
                lag.add_metric(labels, row["lag"])
                committed.add_metric(labels, row["committed"])
        yield lag
        yield committed
        yield _gauge("retry_depth_messages", "Messages in %RETRY%<group> not consumed yet.", ("group",),
                     (((g,), n) for g, n in inspect.retry_depth(app).items()))
        yield _gauge("dlq_messages", "Messages in %DLQ%<group>.", ("group",),
                     (((g,), n) for g, n in inspect.dead_letters(app).items()))
        registry = app.rocketmq_clients
        yield _gauge("rocketmq_clients", "Registered RocketMQ clients by role.", ("role",), [
            (("consumer",), sum(len(g.clients) for g in registry.consumers.values())),
            (("producer",), sum(len(p) for p in registry.producers.values()))])
        yield _gauge("kafka_group_members", "Members of Kafka consumer groups.", ("group",),
                     (((name,), len(g.members)) for name, g in app.kafka.coordinator.groups.items()))

    def _semantics(self):
        app = self.app
        rows = inspect.delay_queues(app)
        yield _gauge("delay_queue_depth_messages", "Delayed messages waiting per level ('timer': an exact "
                     "deliver time).", ("level",), (((r["level"],), r["depth"]) for r in rows))
        yield _gauge("delay_queue_next_due_timestamp_seconds", "Deliver time of the head of each non-empty "
                     "delay level (Unix seconds).", ("level",),
                     (((r["level"],), r["next_due_ms"] / 1000) for r in rows if r["next_due_ms"] is not None))
        yield _counter("delay_delivered", "Delayed messages delivered since start.",
                       samples=[((), app.delay.delivered)])
        yield _gauge("transaction_pending_halves", "Transactional half messages without an outcome.",
                     samples=[((), inspect.pending_transactions(app))])
        checks = app.transactions.check_times
        yield _gauge("transaction_check_pending", "Half messages checked back at least once and still undecided.",
                     samples=[((), len(checks))])
        yield _gauge("transaction_checks", "Check-backs sent for the halves still undecided.",
                     samples=[((), sum(checks.values()))])

    def _client_telemetry(self):
        telemetry = self.app.kafka.telemetry
        yield _gauge("kafka_client_metric", "The latest value Kafka clients pushed (KIP-714) per client instance, "
                     "metric and metric attributes (bounded: docs/metrics.md).",
                     ("client_instance_id", "client_id", "metric", "attributes"),
                     (((uuid.UUID(bytes=key).hex, c.client_id, name, attrs), value)
                      for key, c in list(telemetry.clients.items()) for (name, attrs), value in list(c.series.items())))
        yield _gauge("kafka_telemetry_clients", "Kafka client instances that asked for a telemetry subscription.",
                     samples=[((), len(telemetry.clients))])
        yield _counter("kafka_telemetry_dropped_series", "Pushed data points not kept: their client instance "
                       "had reached the series cap.", samples=[((), telemetry.dropped_series)])
        yield _counter("kafka_telemetry_undecodable_pushes", "Telemetry pushes whose payload was not OTLP.",
                       samples=[((), telemetry.undecodable)])
