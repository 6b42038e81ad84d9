"""Micro-benchmark of `interop.inner_batch.index_info` (what Kafka produce runs on every batch) on
real batches: kafka-python and librdkafka produce to a gateway, the stored batches are fetched
back verbatim, then index_info runs on each of them many times, for this tree and another one
(`--before`, its interop/inner_batch.py loaded from that tree). Prints µs per batch.

    python -m bench.inner_batch_index [--before /work/main] [--records 20000]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time

from bench.brokers import ROOT, Gateway
from codec.kafka import records
from tests.kafka.kafka_raw import RawClient

FETCH = 1
CASES = (  # (client, compression, headers on each record)
    ("kafka-python", "none", False), ("kafka-python", "gzip", False),
    ("librdkafka", "none", False), ("librdkafka", "lz4", False), ("librdkafka", "zstd", False),
    ("librdkafka", "none", True),
)


def produce(bootstrap: str, topic: str, client: str, compression: str, headers: bool, count: int) -> None:
    value = b"v" * 100
    hdrs = [("trace-id", b"0123456789abcdef")] if headers else None
    if client == "kafka-python":
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if compression == "none" else compression,
                          linger_ms=5, batch_size=256 * 1024)
        for i in range(count):
            p.send(topic, value, key=None, headers=hdrs or [], partition=0)
        p.flush()
        p.close()
    else:
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5})
        for i in range(count):
            while True:
                try:
                    p.produce(topic, value, partition=0, headers=hdrs)
                    break
                except BufferError:
                    p.poll(0.05)
        p.flush(60)


def stored_batches(bootstrap: str, topic: str) -> list:
    client = RawClient(bootstrap, timeout=60)
    out, offset = [], 0
    while True:
        resp = client.call(FETCH, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 8 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 8 << 20}]}]})
        data = resp["responses"][0]["partitions"][0]["records"]
        batches = records.parse_batches(data) if data else []
        if not batches:
            break
        out.extend(batches)
        offset = batches[-1].base_offset + batches[-1].record_count
    client.close()
    return out


def load_index_info(tree: str):
    spec = importlib.util.spec_from_file_location(f"inner_batch_{abs(hash(tree))}",
                                                  os.path.join(tree, "interop", "inner_batch.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.index_info


def _fields(index) -> tuple:
    return index.tags_codes, index.keys, index.routing


def time_per_batch(index_info, batches: list, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        for b in batches:
            index_info(b)
        best = min(best, (time.perf_counter() - began) / len(batches))
    return best * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.inner_batch_index")
    ap.add_argument("--before", default="/work/main")
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    before, after = load_index_info(os.path.abspath(args.before)), load_index_info(ROOT)
    with tempfile.TemporaryDirectory(prefix="rocketgate-index-") as tmp:
        g = Gateway(tmp).start()
        try:
            print("| client | compression | headers | batches | mean batch bytes | before µs/batch | after µs/batch |")
            print("|---|---|---|---|---|---|---|")
            for n, (client, compression, headers) in enumerate(CASES):
                topic = f"idx-{n}"
                produce(g.bootstrap, topic, client, compression, headers, args.records)
                batches = stored_batches(g.bootstrap, topic)
                assert [_fields(before(b)) for b in batches] == [_fields(after(b)) for b in batches], "results differ"
                mean = sum(len(b.data) for b in batches) / len(batches)
                t_before = time_per_batch(before, batches, args.repeat)
                t_after = time_per_batch(after, batches, args.repeat)
                print(f"| {client} | {compression} | {'yes' if headers else 'no'} | {len(batches)} | {mean:,.0f} | "
                      f"{t_before:.1f} | {t_after:.1f} |", flush=True)
        finally:
            g.kill9()
    return 0


if __name__ == "__main__":
    sys.exit(main())
