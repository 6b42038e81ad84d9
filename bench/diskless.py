"""Diskless vs plain topic, interleaved: `python -m bench.diskless` starts SeaweedFS
(bench/objstore_server.py) and one gateway on it, then alternates rounds of the same acks=all
confluent-kafka workload on a diskless topic and on a plain (local CommitLog) topic: produce p50/p99
latency (send -> delivery report), throughput, and for the diskless topic the objects written (WAL
objects and index entries, counted in the bucket) per GB. Then a cold and a warm read of the diskless
topic from a second gateway on its own data dir. `--write-doc` puts the table into docs/diskless.md.
Default work: 3 rounds x 4000 records of 512 B per topic, under a minute after SeaweedFS starts."""
from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.brokers import ROOT
from bench.objstore_server import bench_workdir
from bench.report import write_marked

DOC = os.path.join(ROOT, "docs", "diskless.md")


def produce_round(bootstrap: str, topic: str, count: int, size: int) -> tuple[list[float], float]:
    """(latencies in ms, seconds) of `count` acks=all records."""
    from confluent_kafka import Producer
    latencies: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": False})
    value = os.urandom(size)
    began = time.perf_counter()
    for _ in range(count):
        sent = time.perf_counter()

        def report(err, _msg, sent=sent):
            assert err is None, err
            latencies.append((time.perf_counter() - sent) * 1000)
        producer.produce(topic, value=value, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    return latencies, time.perf_counter() - began


def read_all(bootstrap: str, topic: str) -> tuple[int, float]:
    from acked_records import read_topic
    began = time.perf_counter()
    n = len(read_topic(bootstrap, topic, timeout=120))
    return n, time.perf_counter() - began


def create_topic(bootstrap: str, name: str, partitions: int, diskless: bool) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1,
                                      topic_configs={"diskless.enable": "true"} if diskless else {})])
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--records", type=int, default=4000)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--wal-ms", type=int, default=250, help="--diskless-wal-max-ms of the gateway")
    p.add_argument("--write-doc", action="store_true")
    args = p.parse_args(argv)
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from gateway_process import GatewayProcess
    with bench_workdir("bench-diskless-", "bench") as (work, server, gateways):
        for name in ("g1", "g2"):
            os.makedirs(os.path.join(work, name))
        wal_args = ["--diskless-wal-max-ms", str(args.wal_ms)]
        g = GatewayProcess(os.path.join(work, "g1", "data"), extra_args=server.tier_args("bench") + wal_args)
        gateways.append(g.start())
        create_topic(g.kafka_bootstrap, "diskless", 4, True)
        create_topic(g.kafka_bootstrap, "plain", 4, False)
        results = {"diskless": ([], 0.0), "plain": ([], 0.0)}
        for _ in range(args.rounds):
            for topic in ("diskless", "plain"):
                lat, secs = produce_round(g.kafka_bootstrap, topic, args.records, args.size)
                results[topic] = (results[topic][0] + lat, results[topic][1] + secs)
        keys = server.keys("bench")
        wal = sum("/diskless/wal/" in k for k in keys)
        index = sum("/diskless/index/" in k for k in keys)
        total = args.rounds * args.records
        gb = total * args.size / 1e9
        g2 = GatewayProcess(os.path.join(work, "g2", "data"), extra_args=server.tier_args("bench"))
        gateways.append(g2.start())
        cold_n, cold_s = read_all(g2.kafka_bootstrap, "diskless")
        warm_n, warm_s = read_all(g2.kafka_bootstrap, "diskless")
        plain_n, plain_s = read_all(g.kafka_bootstrap, "plain")
        assert cold_n == warm_n == plain_n == total, (cold_n, warm_n, plain_n, total)
        rows = ["| topic | produce p50 ms | p99 ms | records/s | MB/s | PUTs (WAL + index) per GB | read records/s |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for topic in ("diskless", "plain"):
            lat, secs = results[topic]
            q = statistics.quantiles(lat, n=100)
            puts = f"{(wal + index) / gb:,.0f} ({wal} WAL + {index} index)" if topic == "diskless" else "—"
            read = (f"cold {cold_n / cold_s:,.0f}, cached {warm_n / warm_s:,.0f} (other gateway)"
                    if topic == "diskless" else f"{plain_n / plain_s:,.0f}")
            rows.append(f"| {topic} | {q[49]:.1f} | {q[98]:.1f} | {total / secs:,.0f} | "
                        f"{total * args.size / secs / 1e6:.2f} | {puts} | {read} |")
        text = "\n".join(rows) + (f"\n\n{args.rounds} interleaved rounds × {args.records} records of {args.size} B "
                                  "per topic, 4 partitions, acks=all, confluent-kafka linger 5 ms; one gateway, "
                                  f"WAL 4 MiB / {args.wal_ms} ms; SeaweedFS on the same 2-core shared machine. "
                                  "Bytes moved between gateways for data: none (the second gateway reads the bucket).")
        print(text)
        if args.write_doc:
            write_marked(DOC, f"diskless-bench-{args.wal_ms}ms", text, f"### WAL closed at {args.wal_ms} ms")


if __name__ == "__main__":
    main()
