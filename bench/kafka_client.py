"""Kafka load generators on librdkafka (confluent-kafka), run as a separate process so the client's
CPU is not the harness's:  python -m bench.kafka_client '{"cmd": "produce", ...}'  -> one JSON line.

Commands: produce (time-bounded, batching on), produce_slices (two brokers in turn, short slices), consume (assign all partitions from the beginning
until N records), latency (fixed-rate produce + consume, end-to-end percentiles), create (topics).
"""
from __future__ import annotations

import json
import struct
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

_TS = struct.Struct(">d")
# Merged into every client's config: a command's "client_conf" (security.protocol, sasl.*, ssl.*).
CLIENT_CONF: dict = {}


def _producer(bootstrap: str, acks: str, extra: dict | None = None) -> Producer:
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": 5,
        "batch.size": 1 << 20,
        "batch.num.messages": 10000,
        "queue.buffering.max.messages": 500000,
        "queue.buffering.max.kbytes": 1 << 20,
        "message.timeout.ms": 60000,
        "enable.idempotence": False,
        "compression.type": "none",
    }
    conf.update(extra or {})
    return Producer({**conf, **CLIENT_CONF})


def produce(bootstrap: str, topic: str, size: int, acks: str = "1", seconds: float = 3.0,
            partitions: list[tuple[str, int]] | None = None, max_records: int = 0, create: int = 0,
            spread_topics: list[str] | None = None, spread_per: int = 0) -> dict:
    """Produce `size`-byte records for `seconds` (or until max_records), then wait for every delivery.
    `partitions` spreads records round-robin over explicit (topic, partition) pairs (`spread_topics`
    x range(`spread_per`) says the same in less argv); `create` > 0 first creates `topic` with that
    many partitions."""
    if spread_topics:
        partitions = [(t, p) for t in spread_topics for p in range(spread_per)]
    if create:
        globals()["create"](bootstrap, [topic], create)
    errors = []
    p = _producer(bootstrap, acks, {"delivery.report.only.error": True,
                                    "error_cb": lambda e: errors.append(str(e))})

    def on_error(err, msg):
        errors.append(str(err))

    value = b"x" * size
    # Warm-up: metadata and connections before the clock starts.
    p.produce(topic if partitions is None else partitions[0][0], value, on_delivery=on_error)
    if p.flush(30) != 0:
        raise SystemExit(json.dumps({"error": f"warm-up not delivered: {errors[:3]}"}))
    errors.clear()
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    np_ = len(partitions) if partitions else 0
    while True:
        if (n & 1023) == 0:
            if time.perf_counter() >= deadline:
                break
            p.poll(0)
        if max_records and n >= max_records:
            break
        try:
            if np_:
                t, part = partitions[n % np_]
                p.produce(t, value, partition=part, on_delivery=on_error)
            else:
                p.produce(topic, value, on_delivery=on_error)
            n += 1
        except BufferError:
            p.poll(0.01)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    failed = len(errors) + left
    ok = n - failed
    return {"records": ok, "failed": failed, "seconds": elapsed, "rps": ok / elapsed,
            "mbps": ok * size / elapsed / 1e6, "errors": errors[:3]}


def _all_partitions(bootstrap: str, topic: str) -> list[TopicPartition]:
    md = AdminClient({"bootstrap.servers": bootstrap, **CLIENT_CONF}).list_topics(topic, timeout=10)
    return [TopicPartition(topic, pid, -2) for pid in md.topics[topic].partitions]  # -2: beginning


def _drain(c: Consumer, done, timeout: float) -> tuple[int, int, float, set[tuple[str, int]]]:
    """Consume until done(records, partitions at their end) or `timeout`, then close: (records, bytes,
    seconds from the first record to the end, (topic, partition)s that reported their end). An error
    other than a partition's end stops the benchmark."""
    ended: set[tuple[str, int]] = set()
    n = nbytes = 0
    first = None
    deadline = time.perf_counter() + timeout
    while not done(n, ended) and time.perf_counter() < deadline:
        for m in c.consume(num_messages=10000, timeout=0.5):
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise SystemExit(json.dumps({"error": str(m.error())}))
                ended.add((m.topic(), m.partition()))
                continue
            if first is None:
                first = time.perf_counter()
            n += 1
            nbytes += len(m.value())
    end = time.perf_counter()
    c.close()
    return n, nbytes, (end - first if first else 0.0), ended


def consume(bootstrap: str, topic: str, records: int, timeout: float = 60.0) -> dict:
    """Read `records` from the beginning of every partition (no group: assign), as fast as possible."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False,
                  "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 8 << 20,
                  "queued.max.messages.kbytes": 256 << 10, "fetch.wait.max.ms": 100, **CLIENT_CONF})
    c.assign(_all_partitions(bootstrap, topic))
    n, nbytes, span, _ = _drain(c, lambda got, _ended: got >= records, timeout)
    return {"records": n, "seconds": span, "rps": n / span if span else 0.0,
            "mbps": nbytes / span / 1e6 if span else 0.0, "complete": n >= records}


def latency(bootstrap: str, topic: str, rate: float, seconds: float = 3.0, size: int = 100,
            acks: str = "1") -> dict:
    """Send at a fixed rate with the send time in the payload; the consumer (assigned at the end of
    the topic) computes receive - send per record."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 10, "fetch.min.bytes": 1})
    c.assign([TopicPartition(tp.topic, tp.partition, -1) for tp in _all_partitions(bootstrap, topic)])
    p = _producer(bootstrap, acks, {"linger.ms": 1})
    # Warm-up round trip (leader known, fetch loop running) before the schedule starts.
    warm_deadline = time.perf_counter() + 30
    while time.perf_counter() < warm_deadline:
        p.produce(topic, b"warm-up")
        p.flush(10)
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            break
    else:
        return {"error": "warm-up record did not come back"}
    pad = b"x" * max(0, size - _TS.size)
    total = int(rate * seconds)
    lat: list[float] = []

    def send() -> None:
        start = time.perf_counter()
        for i in range(total):
            due = start + i / rate
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            while True:
                try:
                    p.produce(topic, _TS.pack(time.time()) + pad)
                    break
                except BufferError:
                    p.poll(0.001)
            p.poll(0)
        p.flush(60)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    deadline = time.perf_counter() + seconds + 30
    while len(lat) < total and time.perf_counter() < deadline:
        m = c.poll(0.2)  # poll, not consume(): consume() waits for a full batch or its timeout
        if m is not None and m.error() is None and len(m.value()) == len(pad) + _TS.size:
            lat.append(time.time() - _TS.unpack_from(m.value())[0])
    t.join(5)
    c.close()
    lat.sort()
    if not lat:
        return {"error": "no record came back"}

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000

    return {"records": len(lat), "sent": total, "rate": rate, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
            "p999_ms": pct(0.999)}


def create(bootstrap: str, topics: list[str], partitions: int, timeout: float = 300.0) -> dict:
    """Create topics (and wait until their metadata shows every partition)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **CLIENT_CONF})
    start = time.perf_counter()
    deadline = start + timeout
    for i in range(0, len(topics), 50):
        futures = admin.create_topics([NewTopic(t, partitions, 1) for t in topics[i:i + 50]],
                                      request_timeout=timeout)
        for f in futures.values():
            f.result(max(1.0, deadline - time.perf_counter()))
    while True:
        md = admin.list_topics(timeout=10)
        if all(t in md.topics and len(md.topics[t].partitions) == partitions
               and md.topics[t].error is None for t in topics):
            break
        if time.perf_counter() > deadline:
            return {"error": f"topics not all visible after {timeout:.0f}s"}
        time.sleep(0.2)
    return {"seconds": time.perf_counter() - start}


def produce_slices(bootstraps: list[str], size: int, acks: str = "1", slices: int = 10, seconds: float = 0.25,
                   partitions: int = 4) -> dict:
    """One producer per bootstrap, used in turn for short slices (A B, B A, ...) from this one process:
    per-slice rec/s of each, so paired slices are well under a second apart (no process start between)."""
    topic = f"slices-{time.monotonic_ns()}"
    value = b"x" * size
    producers, errors = [], []

    def on_error(err, msg):
        errors.append(str(err))

    for bootstrap in bootstraps:
        globals()["create"](bootstrap, [topic], partitions)
        p = _producer(bootstrap, acks, {"delivery.report.only.error": True,
                                        "error_cb": lambda e: errors.append(str(e))})
        p.produce(topic, value)  # warm-up: metadata and connections before the clock starts
        if p.flush(30) != 0:
            return {"error": f"warm-up not delivered on {bootstrap}"}
        producers.append(p)
    rates: list[list[float]] = [[] for _ in bootstraps]
    for i in range(slices):
        for k in (range(len(bootstraps)) if i % 2 == 0 else reversed(range(len(bootstraps)))):
            p, n = producers[k], 0
            start = time.perf_counter()
            while (n & 1023) or time.perf_counter() - start < seconds:
                try:
                    p.produce(topic, value, on_delivery=on_error)
                    n += 1
                except BufferError:
                    p.poll(0.01)
            left = p.flush(60)
            rates[k].append((n - left) / (time.perf_counter() - start))
    return {"rps": rates, "errors": errors[:3]}


def metadata(bootstrap: str, reps: int = 5) -> dict:
    """The median time of a Metadata request for every topic (what a client does at start and on each
    refresh), over `reps` requests after one uncounted, on one connection."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_topics(timeout=60)
    times, partitions = [], 0
    for _ in range(reps):
        start = time.perf_counter()
        md = admin.list_topics(timeout=60)
        times.append(time.perf_counter() - start)
        partitions = sum(len(t.partitions) for t in md.topics.values())
    return {"ms": 1000 * sorted(times)[len(times) // 2], "partitions": partitions}


def fetch_spread(bootstrap: str, spread_topics: list[str], spread_per: int, timeout: float = 120.0) -> dict:
    """Read every partition of the spread from the beginning to its end (assign, no group); records/s from
    the first record to the last partition's end."""
    parts = [TopicPartition(t, p, -2) for t in spread_topics for p in range(spread_per)]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    c.assign(parts)
    n, nbytes, span, ended = _drain(c, lambda _got, ended: len(ended) >= len(parts), timeout)
    return {"records": n, "bytes": nbytes, "rps": n / span if span else 0.0, "ended": len(ended),
            "partitions": len(parts)}


COMMANDS = {"produce": produce, "consume": consume, "latency": latency, "create": create,
            "produce_slices": produce_slices, "metadata": metadata, "fetch_spread": fetch_spread}


def main() -> None:
    args = json.loads(sys.argv[1])
    CLIENT_CONF.update(args.pop("client_conf", None) or {})
    cmd = COMMANDS[args.pop("cmd")]
    print(json.dumps(cmd(**args)), flush=True)


if __name__ == "__main__":
    main()
