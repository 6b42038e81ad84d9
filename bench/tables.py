"""Benchmark of Iceberg table topics (docs/tables.md), on one gateway (--http-port, --schema-registry-port):

1. Produce throughput: librdkafka produces the same records to a plain topic and to a key_value table
   topic (commit interval 1 s) in interleaved rounds (A B, B A, ...); the verdict is the median of the
   per-round ratios table / plain with its interval (target >= 0.85). The produce-to-visible lag the
   writer reports over those rounds (rocketgate_table_visible_lag_ms) is printed with it.
2. Conversion: N records already in a topic, then `iceberg.mode` switched on; rows per second from the
   switch until the table's snapshot covers them all (key_value and value_schema_id_prefix with Avro).
   The writer converts in one worker thread, so this is about one core's rate.

3. Lag: a steady produce rate to a table topic with 1 s commits; the produce-to-visible lag per commit.

    python -m bench.tables [--records 100000] [--rounds 5] [--convert 100000] [--steady-rate 5000]
                           [--warehouse s3] [--only lag]

`--warehouse s3` puts the warehouse and catalog in a SeaweedFS bucket (the object-storage tier,
bench/objstore_server.py) instead of the data dir; `--only lag` runs the third part alone.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request

from bench import rounds
from bench.brokers import Gateway, free_port
from bench.schema_validation import _wait, framed_values, produce


def _status(http_port: int) -> dict:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/tables", timeout=30).read())


def _create(bootstrap: str, topics: dict[str, dict]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, 1, 1, config=c) for t, c in topics.items()]).values():
        f.result(30)


def _alter(bootstrap: str, topic: str, configs: dict) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
    for f in admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=entries)]).values():
        f.result(30)


def _wait_rows(http_port: int, topic: str, rows: int, timeout: float = 600) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = _status(http_port).get(topic, {})
        if got.get("rows", 0) + got.get("dlq_rows", 0) >= rows:
            return time.perf_counter()
        time.sleep(0.05)
    raise TimeoutError(f"{topic}: not all {rows} rows converted: {_status(http_port).get(topic)}")


def throughput(g: Gateway, http_port: int, args) -> None:
    _create(g.bootstrap, {"plain": {}, "table": {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "1000"}})
    values = [b"v" * args.value_bytes]
    rate: dict[str, list[float]] = {"plain": [], "table": []}
    for name in rate:  # warm-up
        produce(g.bootstrap, name, values, args.records // 4)
    for i in range(args.rounds):
        for name in rounds.order(i, ("plain", "table")):
            began = time.perf_counter()
            produce(g.bootstrap, name, values, args.records)
            rate[name].append(args.records / (time.perf_counter() - began))
    total = args.records * args.rounds + args.records // 4
    _wait_rows(http_port, "table", total)
    stats = _status(http_port)["table"]
    ratios = [a / b for a, b in zip(rate["table"], rate["plain"])]
    lo, hi, _ = rounds.median_interval(ratios)
    print(f"\n{args.records} records of {args.value_bytes} bytes per run, {args.rounds} rounds\n")
    print("| topic | records/s (median) |\n|---|---|")
    for name in rate:
        print(f"| {name} | {rounds.median(rate[name]):,.0f} |")
    print(f"\nratio table / plain: {rounds.median(ratios):.3f} (90 % interval {lo:.3f}–{hi:.3f}); the table "
          f"writer caught up in {stats['commits']} commits", flush=True)


def steady_lag(g: Gateway, http_port: int, args) -> None:
    """Produce at a steady rate to a table topic with 1 s commits; the lags of the commits meanwhile."""
    from confluent_kafka import Producer
    _create(g.bootstrap, {"steady": {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "1000"}})
    time.sleep(2)  # the writer is up (topic configs are looked at every second)
    p = Producer({"bootstrap.servers": g.bootstrap, "linger.ms": 5})
    began, sent = time.perf_counter(), 0
    while time.perf_counter() - began < args.steady_seconds:
        due = int((time.perf_counter() - began) * args.steady_rate)
        for _ in range(due - sent):
            p.produce("steady", b"v" * args.value_bytes, partition=0)
        sent = due
        p.poll(0)
        time.sleep(0.01)
    p.flush(60)
    _wait_rows(http_port, "steady", sent)
    lags = _status(http_port)["steady"]["recent_lags_ms"]
    print(f"\nsteady {args.steady_rate} records/s for {args.steady_seconds} s, commits every 1 s: "
          f"produce-to-visible lag per commit median {rounds.median(lags):.0f} ms, max {max(lags)} ms "
          f"({len(lags)} commits)", flush=True)


def conversion(g: Gateway, http_port: int, registry_url: str, args) -> None:
    print(f"\n| mode | records | rows/s converted (writer thread busy time) | rows/s end to end |\n|---|---|---|---|")
    for mode in ("key_value", "value_schema_id_prefix"):
        topic = f"convert-{mode.replace('_', '-')}"
        _create(g.bootstrap, {topic: {}})
        values = framed_values(registry_url, topic, args.value_bytes) if mode != "key_value" else \
            [b"v" * args.value_bytes]
        produce(g.bootstrap, topic, values, args.convert)
        began = time.perf_counter()
        _alter(g.bootstrap, topic, {"iceberg.mode": mode, "iceberg.commit.interval.ms": "100"})
        done = _wait_rows(http_port, topic, args.convert)
        busy = _status(http_port)[topic]["busy_ms"] / 1000
        print(f"| {mode} | {args.convert} | {args.convert / busy:,.0f} | {args.convert / (done - began):,.0f} |",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tables")
    ap.add_argument("--records", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--convert", type=int, default=100000)
    ap.add_argument("--steady-rate", type=int, default=5000)
    ap.add_argument("--steady-seconds", type=float, default=10)
    ap.add_argument("--warehouse", choices=["local", "s3"], default="local")
    ap.add_argument("--only", choices=["all", "lag"], default="all")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="rocketgate-tablesbench-") as tmp, \
            tempfile.TemporaryDirectory(prefix="seaweed-", dir="/tmp") as s3dir:
        http_port, registry_port = free_port(), free_port()
        extra, server = [], None
        if args.warehouse == "s3":
            from bench.objstore_server import SeaweedS3
            server = SeaweedS3(s3dir).start()
            server.create_bucket("tables-bench")
            extra = server.tier_args("tables-bench", prefix="gw/")
        g = Gateway(tmp, extra_args=["--http-port", str(http_port), "--schema-registry-port", str(registry_port),
                                     *extra])
        g.start()
        try:
            _wait(http_port)
            _wait(registry_port)
            print(f"warehouse: {args.warehouse}", flush=True)
            if args.only == "all":
                throughput(g, http_port, args)
            steady_lag(g, http_port, args)
            if args.only == "all":
                conversion(g, http_port, f"http://127.0.0.1:{registry_port}", args)
        finally:
            g.kill9()
            if server is not None:
                server.kill9()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
