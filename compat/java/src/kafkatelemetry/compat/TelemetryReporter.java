package compat;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * A broker metrics reporter that accepts client telemetry (KIP-714) and drops it. Apache Kafka
 * advertises GetTelemetrySubscriptions and PushTelemetry only when a reporter like this one is
 * configured (metric.reporters), so the ApiVersions comparison test starts the reference with it.
 */
public class TelemetryReporter implements MetricsReporter, ClientTelemetryExporterProvider {
    @Override public void configure(Map<String, ?> configs) { }
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> { };
    }
}
