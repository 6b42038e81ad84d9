"""`python -m bench.kafka_versions`: the gateway's CPU per GB for Produce and Fetch at older and newer
request versions, interleaved (issue 33: topic ids and Produce v12+ must cost no more than before).

One gateway (`python -m gateway`, bench.brokers) and the repo's raw client (tests/kafka/kafka_raw.py),
one request at a time on one connection, so every variant carries the same bytes in the same requests:
- produce: REQUESTS requests, each one batch of RECORDS records of SIZE bytes to one partition, acks=1,
  at Produce v9 (flexible, by name), v12 (transactions v2's version) and v13 (by topic id);
- fetch: the partition's first FETCH_RECORDS records (4 MiB) read from offset 0 in answers of up to
  FETCH_BYTES (256 KiB), at Fetch v12 (by name), v13 (by topic id) and v18 (Kafka 4.3's newest).
Each round runs every variant once, in an order rotated round by round (bench.rounds.order for two);
the gateway's CPU (/proc, every thread) around each run, divided by the payload bytes moved. Prints
each round and, per newer version, the per-round ratio to the oldest: median, spread, verdict.

`--versus-tree DIR`: instead, two gateways (the tree DIR, e.g. a `git archive` of an older commit, and
this checkout) side by side: non-transactional Produce v9 and Fetch v12 on each, interleaved, CPU per GB."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import tempfile
import time

from bench import rounds
from bench.brokers import ROOT, Gateway
from bench.procstat import cpu_used
from bench.scenarios import create_topics
from codec.kafka import apis, records
from tests.kafka.kafka_raw import RawClient

RECORDS, SIZE, REQUESTS = 16, 1024, 150  # a run is short (~1 s): many rounds, each pair close in time
FETCH_RECORDS = RECORDS * 256  # a fetch run reads 4 MiB of payload
FETCH_BYTES = 256 << 10  # answers of up to 256 KiB: the per-request costs weigh more than at 1 MiB
PRODUCE_VERSIONS, FETCH_VERSIONS = (9, 12, 13), (12, 13, 18)


def topic_id(client: RawClient, topic: str) -> bytes:
    md = client.call(apis.METADATA.key, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                                             "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False})
    return md["topics"][0]["topic_id"]


def produce(client: RawClient, topic: str, tid: bytes, version: int, batch: bytes, requests: int = REQUESTS,
            records_per_batch: int = RECORDS, size: int = SIZE) -> int:
    """`requests` produce requests of `batch` at `version`; the payload bytes written."""
    named = {"topic_id": tid} if version >= 13 else {"name": topic}
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 30000, "topic_data": [
        {**named, "partition_data": [{"index": 0, "records": batch}]}]}
    for _ in range(requests):
        resp = client.call(apis.PRODUCE.key, version, body)
        code = resp["responses"][0]["partition_responses"][0]["error_code"]
        if code:
            raise RuntimeError(f"Produce v{version}: error {code}")
    return requests * records_per_batch * size


def fetch(client: RawClient, topic: str, tid: bytes, version: int, end: int) -> int:
    """Read partition 0 from 0 to `end` at `version`; the record bytes received."""
    named = {"topic_id": tid} if version >= 13 else {"topic": topic}
    offset, got = 0, 0
    while offset < end:
        resp = client.call(apis.FETCH.key, version, {
            "max_wait_ms": 0, "min_bytes": 1, "max_bytes": FETCH_BYTES, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [{**named, "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": FETCH_BYTES}]}]})
        part = resp["responses"][0]["partitions"][0]
        if part["error_code"]:
            raise RuntimeError(f"Fetch v{version}: error {part['error_code']}")
        data = part["records"] or b""
        batches = records.parse_batches(data[:_whole(data)])
        if not batches:
            raise RuntimeError(f"Fetch v{version}: nothing at {offset}")
        got += len(batches) * RECORDS * SIZE
        offset = batches[-1].base_offset + batches[-1].last_offset_delta + 1
    return got


def _whole(data) -> int:
    """The length of the complete batches at the start of `data` (an answer may end in a partial one)."""
    pos = 0
    while pos + records.HEADER_SIZE <= len(data):
        size = int.from_bytes(data[pos + records.BATCH_LENGTH_AT:pos + records.BATCH_LENGTH_AT + 4], "big") + 12
        if pos + size > len(data):
            break
        pos += size
    return pos


def rotated(i: int, names: tuple) -> tuple:
    """Round i's order: rounds.order for two variants, a rotation by i for more."""
    if len(names) == 2:
        return rounds.order(i, names)
    k = i % len(names)
    return names[k:] + names[:k]


def interleave(label: str, variants: dict, n_rounds: int) -> dict[str, list[float]]:
    """`variants`: name -> (system, run): `run()` moves data and returns the payload bytes, `system`
    (a bench.brokers System) is the process whose CPU counts. Every variant once per round (plus an
    uncounted warm-up each); CPU s/GB per variant per round. The first variant is the baseline."""
    values: dict[str, list[float]] = {name: [] for name in variants}
    names = tuple(variants)
    for name in names:
        variants[name][1]()
    for i in range(n_rounds):
        for name in rotated(i, names):
            system, run = variants[name]
            before = system.cpu_sample()
            moved = run()
            values[name].append(cpu_used(before, system.cpu_sample()) / (moved / 1e9))
        print(f"{label} round {i}: " + ", ".join(f"{n} {values[n][-1]:.2f}" for n in names) + " CPU s/GB", flush=True)
    base = names[0]
    for name in names[1:]:
        ratios = rounds.per_round_ratios(values[name], values[base])
        v = rounds.compare(ratios, "lower", name, base)
        print(f"{label}: {name} / {base} CPU s/GB median {v.median:.3f}, spread {v.low:.2f}–{v.high:.2f} "
              f"(CI {v.ci_low:.2f}–{v.ci_high:.2f}, {v.coverage:.0%}): {v.verdict}; medians "
              f"{name} {rounds.median(values[name]):.2f}, {base} {rounds.median(values[base]):.2f}", flush=True)
    return values


def save(name: str, meta: dict, values: dict) -> str:
    """The per-round values as bench/results/<UTC stamp>-<name>.json (the project's results folder)."""
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = os.path.join(ROOT, "bench", "results", f"{stamp}-{name}.json")
    with open(path, "w") as f:
        json.dump({"meta": meta, "cpu_s_per_gb": values}, f, indent=1)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.kafka_versions", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--only", choices=["produce", "fetch"])
    p.add_argument("--versus-tree", metavar="DIR", help="compare the gateway of the tree DIR with this one")
    args = p.parse_args(argv)
    if args.versus_tree:
        return versus_tree(args.versus_tree, args.rounds, args.only)
    load, values = [os.getloadavg()], {}
    print(f"load average at start: {load[0]}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-kafka-versions-") as work:
        gw = Gateway(os.path.join(work, "gw")).start()
        try:
            topic = f"versions-{int(time.time())}"
            create_topics(gw.bootstrap, [topic], 1)
            client = RawClient(gw.bootstrap, timeout=60)
            tid = topic_id(client, topic)
            now = int(time.time() * 1000)
            batch = records.build_batch([(now, None, os.urandom(SIZE), []) for _ in range(RECORDS)], base_timestamp=now)
            if args.only != "fetch":
                values["produce"] = interleave("produce", {f"Produce v{v}": (gw, lambda v=v: produce(client, topic, tid, v, batch))
                                       for v in PRODUCE_VERSIONS}, args.rounds)
            else:  # something to read
                produce(client, topic, tid, 9, batch, FETCH_RECORDS // RECORDS)
            end = FETCH_RECORDS  # (the first runs wrote at least that)
            if args.only != "produce":
                values["fetch"] = interleave("fetch", {f"Fetch v{v}": (gw, lambda v=v: fetch(client, topic, tid, v, end))
                                     for v in FETCH_VERSIONS}, args.rounds)
            client.close()
        finally:
            gw.stop()
    load.append(os.getloadavg())
    print(f"load average at the end: {load[-1]}", flush=True)
    save("kafka-versions", {"rounds": args.rounds, "load": load}, values)
    return 0


def versus_tree(tree: str, n_rounds: int, only: str | None = None) -> int:
    """Produce v9 and Fetch v12 (no transactions) on the gateway of `tree` ("before") and of this
    checkout ("now"), interleaved; CPU s/GB of each."""
    load, values = [os.getloadavg()], {}
    with tempfile.TemporaryDirectory(prefix="bench-kafka-versions-") as work:
        gws = {"before": Gateway(os.path.join(work, "before"), tree=tree), "now": Gateway(os.path.join(work, "now"))}
        try:
            clients, tids = {}, {}
            topic = f"versus-{int(time.time())}"
            for name, gw in gws.items():
                gw.start()
                create_topics(gw.bootstrap, [topic], 1)
                clients[name] = RawClient(gw.bootstrap, timeout=60)
                tids[name] = topic_id(clients[name], topic)
            now = int(time.time() * 1000)
            batch = records.build_batch([(now, None, os.urandom(SIZE), []) for _ in range(RECORDS)], base_timestamp=now)
            if only != "fetch":
                values["produce"] = interleave("produce v9", {
                    n: (gws[n], lambda n=n: produce(clients[n], topic, tids[n], 9, batch)) for n in gws}, n_rounds)
            else:  # something to read
                for n in gws:
                    produce(clients[n], topic, tids[n], 9, batch, FETCH_RECORDS // RECORDS)
            if only != "produce":
                values["fetch"] = interleave("fetch v12", {
                    n: (gws[n], lambda n=n: fetch(clients[n], topic, tids[n], 12, FETCH_RECORDS)) for n in gws}, n_rounds)
            for client in clients.values():
                client.close()
        finally:
            for gw in gws.values():
                gw.stop()
    load.append(os.getloadavg())
    print(f"load average at start and end: {load}", flush=True)
    save("kafka-versions-versus-tree", {"rounds": n_rounds, "load": load, "tree": os.path.abspath(tree)}, values)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
