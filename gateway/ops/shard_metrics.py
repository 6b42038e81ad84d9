"""/metrics of every shard on shard 0's HTTP port (`--shards N`, docs/shards.md): shard 0 scrapes the
other shards' /metrics (their HTTP ports, which the supervisor passes as --shard-metrics) and answers
one exposition in which every sample carries a `shard` label ("0" for its own), plus
`rocketgate_shard_up{shard}`: 1 when that shard answered this scrape, 0 when not (its samples are
then missing). A Prometheus server needs one target for the whole machine; `sum by (...)` adds shards."""
from __future__ import annotations

import httpx
import trio
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

SCRAPE_TIMEOUT_S = 2.0
SHARD_LABEL = "shard"


async def ask_each(peers: tuple[str, ...], path: str, read=lambda answer: answer.text) -> list:
    """`read(answer)` of each peer's GET `path` (index i: shard i + 1), None for one that did not
    answer in time, answered another status than 200, or whose answer `read` could not use (ValueError)."""
    found: list = [None] * len(peers)

    async def one(i: int, client: httpx.AsyncClient) -> None:
        try:
            answer = await client.get(f"http://{peers[i]}{path}")
            if answer.status_code == 200:
                found[i] = read(answer)
        except (httpx.HTTPError, ValueError):
            pass

    async with httpx.AsyncClient(timeout=SCRAPE_TIMEOUT_S) as client, trio.open_nursery() as nursery:
        for i in range(len(peers)):
            nursery.start_soon(one, i, client)
    return found


async def scrape(peers: tuple[str, ...]) -> list[str | None]:
    """Each peer's /metrics text (index i: shard i + 1), None for one that did not answer in time."""
    return await ask_each(peers, "/metrics")


def merge(own: list[Metric], peer_texts: list[str | None]) -> list[Metric]:
    """One family per name holding the samples of every shard, each labelled with its shard; a
    shard whose text is missing or does not parse is left out (rocketgate_shard_up 0)."""
    merged: dict[str, Metric] = {}
    sources, up = [("0", own)], [1]
    for i, text in enumerate(peer_texts, start=1):
        try:
            if text is None:  # no answer
                raise ValueError(text)
            sources.append((str(i), list(text_string_to_metric_families(text))))
            up.append(1)
        except (TypeError, ValueError, IndexError):  # or not the text format
            up.append(0)
    for shard, families in sources:
        for family in families:
            into = merged.get(family.name)
            if into is None:
                into = merged[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
            into.samples += [s._replace(labels={**s.labels, SHARD_LABEL: shard}) for s in family.samples]
    shard_up = GaugeMetricFamily("rocketgate_shard_up", "1: this shard's metrics are in this scrape (--shards)",
                                 labels=[SHARD_LABEL])
    for i, value in enumerate(up):
        shard_up.add_metric([str(i)], value)
    return [*merged.values(), shard_up]
