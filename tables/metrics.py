"""The table topics' Prometheus metrics (docs/metrics.md), collected from the writers' counters when
/metrics is scraped; the gateway's HTTP app registers `TablesCollector` beside its own."""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

NS = "rocketgate_table"


class TablesCollector:
    def __init__(self, service) -> None:
        self.service = service

    def collect(self):
        writers = [(topic, w.stats) for topic, (_, _, w) in list(self.service.writers.items())]

        def family(kind, name, doc, value):
            fam = kind(f"{NS}_{name}", doc, labels=["topic"])
            for topic, stats in writers:
                fam.add_metric([topic], value(stats))
            return fam
        yield family(CounterMetricFamily, "rows", "Rows committed to a table topic's table.", lambda s: s.rows)
        yield family(CounterMetricFamily, "commits", "Snapshots committed to a table topic's table.",
                     lambda s: s.commits)
        yield family(CounterMetricFamily, "dlq_rows", "Records written to the <topic>~dlq table.", lambda s: s.dlq_rows)
        yield family(CounterMetricFamily, "dropped_records", "Undecodable records dropped "
                     "(iceberg.invalid.record.action=drop).", lambda s: s.dropped)
        yield family(CounterMetricFamily, "lost_offsets", "Offsets that left the log (retention, DeleteRecords) "
                     "before they were converted.", lambda s: s.lost_offsets)
        yield family(CounterMetricFamily, "commit_errors", "Failed table commits (retried from the same offsets).",
                     lambda s: s.errors)
        yield family(GaugeMetricFamily, "visible_lag_ms", "Produce (log append) to visible in the table, for the "
                     "oldest record of the last commit, in ms.", lambda s: s.last_lag_ms)
        yield family(GaugeMetricFamily, "visible_lag_max_ms", "The largest visible_lag_ms since the start.",
                     lambda s: s.max_lag_ms)
