"""The measurements. Each function takes a started system and returns one repetition's metrics
(a dict) or raises `Unavailable` with the reason (a gateway feature not there yet, a client error).
Load generators run as separate processes: librdkafka via bench.kafka_client, the Kafka perf tools and
the RocketMQ benchmark class (bench/java) on the JVM."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid

from bench.brokers import ROOT, java_classpath


# Key of the payload bytes a run moved: not a metric of its own; bench.interleave turns it into the
# broker's CPU seconds per GB of the run.
BYTES = "_bytes"


class Unavailable(Exception):
    """This measurement cannot be made on this system now; the message says why."""


def _tail(text: str, n: int = 400) -> str:
    text = " ".join(text.strip().split())
    return text[-n:]


def _run(cmd: list[str], timeout: float) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise Unavailable(f"timed out after {timeout:.0f}s: {_tail(err)}")
    if r.returncode != 0:
        raise Unavailable(f"exit {r.returncode}: {_tail(r.stdout + r.stderr)}")
    return r.stdout


def _json_line(out: str) -> dict:
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            data = json.loads(line)
            if "error" in data:
                raise Unavailable(data["error"])
            return data
    raise Unavailable(f"no result: {_tail(out)}")


def run_json(cmd: list[str], timeout: float) -> dict:
    """Run a bench client process; its result is the last JSON line it prints (an "error" key fails)."""
    return _json_line(_run(cmd, timeout))


def kafka_client(limit: float, **args) -> dict:
    """Run one bench.kafka_client command in its own process, at most `limit` seconds."""
    return run_json([sys.executable, "-m", "bench.kafka_client", json.dumps(args)], limit)


def _java(system: str, main: str, args: list[str], timeout: float, heap: str = "1g") -> str:
    return _run(["java", f"-Xmx{heap}", "-XX:+UseG1GC", "-cp", java_classpath(system), main, *args], timeout)


def new_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- Kafka protocol ------------------------------------------------------------------------------

def create_topics(bootstrap: str, topics: list[str], partitions: int, timeout: float = 600) -> float:
    return kafka_client(timeout + 30, cmd="create", bootstrap=bootstrap, topics=topics,
                        partitions=partitions, timeout=timeout)["seconds"]


def librdkafka_produce(bootstrap: str, size: int, acks: str, seconds: float, partitions: int = 4) -> dict:
    r = kafka_client(seconds + 150, cmd="produce", bootstrap=bootstrap, topic=new_topic("p"), size=size,
                     acks=acks, seconds=seconds, create=partitions)
    if r["failed"]:
        raise Unavailable(f"{r['failed']} records failed: {r['errors']}")
    return {"rec/s": r["rps"], "MB/s": r["mbps"], BYTES: r["records"] * size}


def librdkafka_produce_slices(bootstraps: dict[str, str], size: int, acks: str, slices: int,
                              seconds: float = 0.25) -> dict[str, list[float]]:
    """Per-slice rec/s of each system, from one client process that alternates between them."""
    names = list(bootstraps)
    r = kafka_client(slices * len(names) * (seconds + 60) + 120, cmd="produce_slices",
                     bootstraps=[bootstraps[n] for n in names], size=size, acks=acks, slices=slices, seconds=seconds)
    if r["errors"]:
        raise Unavailable(f"delivery errors: {r['errors']}")
    return dict(zip(names, r["rps"]))


_PERF = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                   r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def java_produce(bootstrap: str, size: int, acks: str, records: int, timeout: float, partitions: int = 4,
                 rate: int = -1) -> dict:
    """org.apache.kafka.tools.ProducerPerformance, count-bound (it has no duration option). Unbounded
    (`rate` -1) it measures throughput; its latencies then are queueing time, so percentiles are
    reported only for a fixed `rate`."""
    summary = java_produce_summary(bootstrap, size, acks, records, timeout, partitions, rate)
    if rate > 0:
        return {"p50 ms": summary["p50 ms"], "p99 ms": summary["p99 ms"]}
    return {"rec/s": summary["rec/s"], "MB/s": summary["MB/s"]}


def java_produce_summary(bootstrap: str, size: int, acks: str, records: int, timeout: float,
                         partitions: int = 4, rate: int = -1) -> dict:
    """ProducerPerformance's final summary line (a new topic of `partitions`): rec/s, MB/s and the
    avg/max/p50/p95/p99/p99.9 latencies in ms."""
    topic = new_topic("jp")
    create_topics(bootstrap, [topic], partitions)
    out = _java("kafka", "org.apache.kafka.tools.ProducerPerformance",
                ["--topic", topic, "--num-records", str(records), "--record-size", str(size),
                 "--throughput", str(rate), "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}",
                 "linger.ms=5", "batch.size=262144", "buffer.memory=134217728", "enable.idempotence=false",
                 "compression.type=none", "delivery.timeout.ms=60000", "request.timeout.ms=30000"], timeout)
    m = None
    for m in _PERF.finditer(out):
        pass
    if m is None:
        raise Unavailable(f"no summary: {_tail(out)}")
    names = ("records", "rec/s", "MB/s", "avg ms", "max ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms")
    return {name: float(value) for name, value in zip(names, m.groups())}


def prefill(bootstrap: str, records: int, size: int, partitions: int = 4) -> str:
    topic = new_topic("c")
    r = kafka_client(300, cmd="produce", bootstrap=bootstrap, topic=topic, size=size, acks="1",
                     seconds=120, max_records=records, create=partitions)
    if r["records"] < records:
        raise Unavailable(f"pre-fill wrote {r['records']} of {records}: {r['errors']}")
    return topic


def librdkafka_consume(bootstrap: str, topic: str, records: int) -> dict:
    r = kafka_client(150, cmd="consume", bootstrap=bootstrap, topic=topic, records=records, timeout=120)
    if not r["complete"]:
        raise Unavailable(f"read {r['records']} of {records}")
    return {"rec/s": r["rps"], "MB/s": r["mbps"], BYTES: r["mbps"] * r["seconds"] * 1e6}


def java_consume(bootstrap: str, topic: str, records: int) -> dict:
    """org.apache.kafka.tools.ConsumerPerformance (a consumer group); fetch rate excludes the join."""
    out = _java("kafka", "org.apache.kafka.tools.ConsumerPerformance",
                ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
                 "--group", new_topic("g"), "--timeout", "30000", "--hide-header",
                 "--command-property", "auto.offset.reset=earliest"], 180)
    fields = [f.strip() for f in out.strip().splitlines()[-1].split(",")]
    try:
        consumed = float(fields[4])
        mbps, rps = float(fields[8]), float(fields[9])
    except (IndexError, ValueError):
        raise Unavailable(f"unexpected output: {_tail(out)}")
    if consumed < records:
        raise Unavailable(f"read {consumed:.0f} of {records}")
    return {"rec/s": rps, "MB/s": mbps}


def e2e_latency(bootstrap: str, rate: float, seconds: float) -> dict:
    topic = new_topic("l")
    create_topics(bootstrap, [topic], 1)
    r = kafka_client(seconds + 90, cmd="latency", bootstrap=bootstrap, topic=topic, rate=rate, seconds=seconds)
    if r["records"] < r["sent"]:
        raise Unavailable(f"{r['records']} of {r['sent']} records came back")
    return {"p50 ms": r["p50_ms"], "p99 ms": r["p99_ms"], "p99.9 ms": r["p999_ms"]}


def create_partitions(bootstrap: str, total: int, per_topic: int = 100, timeout: float = 600) -> tuple[dict, float]:
    """`total` partitions in topics of <=100 each: (spread for partition_produce, seconds to create)."""
    prefix = new_topic("s")
    per = min(per_topic, total)
    topics = [f"{prefix}-{i}" for i in range((total + per - 1) // per)]
    seconds = create_topics(bootstrap, topics, per, timeout)
    return {"spread_topics": topics, "spread_per": per}, seconds


def partition_produce(bootstrap: str, spread: dict, seconds: float) -> dict:
    """Produce 100 B records round-robin over every partition of the spread."""
    r = kafka_client(seconds + 200, cmd="produce", bootstrap=bootstrap, topic=spread["spread_topics"][0],
                     size=100, acks="1", seconds=seconds, **spread)
    if r["failed"]:
        raise Unavailable(f"{r['failed']} records failed: {r['errors']}")
    return {"rec/s": r["rps"]}


def partition_metadata(bootstrap: str, total: int) -> dict:
    """A Metadata request for every topic, with at least `total` partitions in the cluster."""
    r = kafka_client(600, cmd="metadata", bootstrap=bootstrap)
    if r["partitions"] < total:
        raise Unavailable(f"metadata lists {r['partitions']} partitions, fewer than {total}")
    return {"ms": r["ms"]}


def partition_fetch(bootstrap: str, spread: dict, timeout: float = 300.0) -> dict:
    """Read every partition of the spread (filled by partition_produce) from its start to its end."""
    r = kafka_client(timeout + 60, cmd="fetch_spread", bootstrap=bootstrap, timeout=timeout, **spread)
    if r["ended"] < r["partitions"]:
        raise Unavailable(f"{r['partitions'] - r['ended']} of {r['partitions']} partitions not read to the end "
                          f"in {timeout:.0f}s ({r['records']} records)")
    return {"rec/s": r["rps"], BYTES: r["bytes"]}


# -- RocketMQ remoting ---------------------------------------------------------------------------

RMQ_BENCH = "rocketgate.bench.RmqBench"


def rmq_produce_reps(namesrv: str, topic: str, seconds: float, reps: int, threads: int = 16, size: int = 128,
                     warmup: float = 0.0) -> list[dict]:
    """`reps` consecutive windows in one JVM (its start-up is not measured and costs seconds here)."""
    out = _java("rocketmq", RMQ_BENCH, ["produce", namesrv, topic, str(seconds), str(threads), str(size),
                                        str(warmup), str(reps)], (seconds + 10) * reps + warmup + 60)
    windows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if not windows:
        raise Unavailable(f"no result: {_tail(out)}")
    if any(w["sent"] == 0 for w in windows):
        raise Unavailable(f"no send succeeded in a window ({windows[-1]['failed']} failed)")
    # BYTES: the payload the broker took during the whole JVM run (its CPU is read around it), so the
    # uncounted warm-up's sends are added at the window's rate (RmqBench reports only the window's).
    return [{"TPS": w["tps"], "MB/s": w["tps"] * size / 1e6, "p99 ms": w["p99_ms"], "sent": w["sent"],
             BYTES: (w["sent"] + (warmup * w["tps"] if i == 0 else 0)) * size} for i, w in enumerate(windows)]


def rmq_produce(namesrv: str, topic: str, seconds: float, threads: int = 16, size: int = 128,
                warmup: float = 0.0) -> dict:
    return rmq_produce_reps(namesrv, topic, seconds, 1, threads, size, warmup)[0]


def rmq_consume_reps(namesrv: str, topic: str, expected: int, reps: int, size: int = 128) -> list[dict]:
    """`reps` push consumers in turn (new group each, one JVM), each reading the whole topic."""
    out = _java("rocketmq", RMQ_BENCH, ["consume", namesrv, topic, new_topic("cg"), str(expected), "60",
                                        str(reps)], 70 * reps + 60)
    runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if not runs:
        raise Unavailable(f"no result: {_tail(out)}")
    short = [r for r in runs if r["received"] < expected]
    if short:
        raise Unavailable(f"received {short[0]['received']} of {expected}")
    return [{"TPS": r["tps"], "MB/s": r["tps"] * size / 1e6, BYTES: r["received"] * size} for r in runs]


def python_native_reps(namesrv: str, seconds: float, reps: int, size: int = 128) -> tuple[list[dict], list[dict]]:
    """Send TPS rows and the raw consume windows (see python_consume_tps) with the project's own
    RocketMQ client (client/): `reps` send windows, then `reps` reads of everything sent, in one process."""
    out = _run([sys.executable, "-m", "bench.native_client", namesrv, new_topic("py"), str(seconds), str(size),
                "16", str(reps)], (seconds + 10) * reps + (seconds * reps + 40) * reps + 60)
    runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if not runs or "error" in runs[-1]:
        raise Unavailable(runs[-1]["error"] if runs else f"no result: {_tail(out)}")
    return [{"TPS": r["tps"]} for r in runs if "tps" in r], [r for r in runs if "consume_tps" in r]


def python_consume_tps(reads: list[dict]) -> list[dict]:
    """The consume windows of python_native_reps as rows; a read that came back short fails the row."""
    short = [r for r in reads if r["consumed"] < r["expected"]]
    if short:
        raise Unavailable(f"the Python consumer read {short[0]['consumed']} of {short[0]['expected']}")
    return [{"TPS": r["consume_tps"]} for r in reads]


# -- process-level -------------------------------------------------------------------------------

def dir_bytes(path: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return total


def fill_kafka(bootstrap: str, topic: str, nbytes: int, limit: float = 800) -> None:
    """Write about `nbytes` in 16 KiB records, within `limit` seconds."""
    size = 16 << 10
    records = nbytes // size
    if records <= 0:
        return
    r = kafka_client(limit + 100, cmd="produce", bootstrap=bootstrap, topic=topic, size=size, acks="1",
                     seconds=limit, max_records=records)
    if r["records"] < records:
        raise Unavailable(f"wrote {r['records']} of {records} records within {limit:.0f}s {r['errors']}")


def fill_rocketmq(namesrv: str, topic: str, nbytes: int, limit: float = 800) -> None:
    """Send 128 KiB bodies from 16 threads until about `nbytes` are stored, within `limit` seconds
    (RmqBench is time-bound: run it until the volume is reached)."""
    body = 128 << 10
    sent = 0
    deadline = time.monotonic() + limit
    while sent * body < nbytes:
        left = deadline - time.monotonic()
        if left < 5:
            raise Unavailable(f"wrote {sent * body >> 20} of {nbytes >> 20} MiB within {limit:.0f}s")
        seconds = min(left - 3, max(3.0, (nbytes - sent * body) / 150e6))
        sent += rmq_produce(namesrv, topic, seconds=seconds, threads=16, size=body)["sent"]


def timed_restart(system, probe) -> float:
    """kill -9, then the time until the system passes its start health check again; `probe()` (one
    acknowledged write) must then succeed, but is not timed: its client start-up (a JVM for RocketMQ)
    would be measured too."""
    system.kill9()
    t0 = time.perf_counter()
    system.start()
    elapsed = time.perf_counter() - t0
    deadline = time.monotonic() + 120
    while True:
        try:
            probe()
            return elapsed
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
