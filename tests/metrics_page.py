"""A gateway's Prometheus /metrics page as {(sample name, sorted labels): value}, for the tests that
check its metrics."""
from __future__ import annotations

import json
import os
import re
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def parse(text: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a /metrics page's text."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(http: str) -> dict[tuple[str, tuple], float]:
    """The samples of http://`http`/metrics (`http`: host:port)."""
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as resp:
        return parse(resp.read().decode())


def sample(samples: dict, name: str, **labels) -> float:
    """One sample's value; 0.0 when the page does not have it (a counter nothing has counted yet).
    On shard 0 of `--shards N` (make test-shards) every sample carries a `shard` label: the sum over
    the shards, unless a `shard` is asked for (docs/metrics.md)."""
    wanted = tuple(sorted(labels.items()))
    if (name, wanted) in samples or "shard" in labels:
        return samples.get((name, wanted), 0.0)
    return sum(value for (n, got), value in samples.items()
               if n == name and any(k == "shard" for k, _ in got) and tuple(kv for kv in got if kv[0] != "shard") == wanted)


def dashboard_metrics(prefix: str = "") -> set[str]:
    """The metric names the Grafana dashboard (docs/grafana/rocketgate.json) queries, those starting
    with `prefix`."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "grafana", "rocketgate.json")
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)
    return {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in re.findall(r"\b(?:rocketgate|process)_[a-z_]+", target["expr"]) if name.startswith(prefix)}
