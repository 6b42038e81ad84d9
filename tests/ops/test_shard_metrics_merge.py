"""gateway.ops.shard_metrics.merge without processes: every sample of every shard gets its `shard`
label under one family per name (one TYPE line each in the exposition), and a shard that did not
answer or answered something that is not the text format is `rocketgate_shard_up 0`, not an error."""
from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from gateway.ops.shard_metrics import merge

class _Families:
    def __init__(self, families):
        self.families = families

    def collect(self):
        return iter(self.families)


def appended(value: float) -> CounterMetricFamily:
    family = CounterMetricFamily("rocketgate_messages_appended", "Logical messages.", labels=["topic"])
    family.add_metric(["t"], value)
    return family


def test_every_shard_labelled_and_a_bad_peer_is_down():
    peer = generate_latest(_Families([appended(5)])).decode()  # what shard 1's /metrics answers
    text = generate_latest(_Families(merge([appended(3)], [peer, None, "not {metrics"]))).decode()
    assert text.count("# TYPE rocketgate_messages_appended_total counter") == 1
    samples = {f.name: f.samples for f in text_string_to_metric_families(text)}
    assert {(s.labels["shard"], s.value) for s in samples["rocketgate_messages_appended"]} == {("0", 3.0), ("1", 5.0)}
    assert {s.labels["shard"]: s.value for s in samples["rocketgate_shard_up"]} == {"0": 1, "1": 1, "2": 0, "3": 0}
