"""kill -9 under produce load, many times (issue 18; `make soak`, 50 cycles; a 3-cycle run in
tests/robustness/test_soak.py).

One gateway process, two producers that keep sending the whole time: a librdkafka producer
(idempotent, acks=all, one instance across every restart, so its retries of batches in flight at
the kill reach the restarted gateway) and a native RocketMQ producer (SYNC sends, no client retry:
a send either got SEND_OK or failed). Each cycle loads the gateway for a random 0.8-2 s, kills it
with SIGKILL and starts it again with `--verify` (every CommitLog entry's CRC checked; 0 quarantined
expected), alternating `--flush async` and `--flush sync`. At the end every message of both topics
is read back (Kafka consumer with check.crcs, native lite-pull consumer): every acknowledged
message must be there exactly once.

`python -m tests.robustness.soak [--cycles N] [--seed S] [--write-docs]` writes its report to
docs/robustness.md (between the soak markers) with --write-docs.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid

from confluent_kafka import Consumer, Producer as KafkaProducer, TopicPartition

from bench.report import write_marked
from client import ConsumeFrom, LitePullConsumer, Message, MessageQueue, Producer, SendStatus
from tests.gateway_process import ROOT, GatewayProcess

QUEUES = 4  # the gateway's default partitions / queues of an auto-created topic
VERIFIED = re.compile(r"verify: checked (\d+) CommitLog entries, (\d+) quarantined")
DOCS = os.path.join(ROOT, "docs", "robustness.md")


class KafkaLoad:
    """Idempotent acks=all producer sending k<seq> as fast as the gateway takes them (bounded queue)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: set[bytes] = set()
        self.failed: set[bytes] = set()
        self.producer = KafkaProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                       "linger.ms": 5, "message.timeout.ms": 120_000,
                                       "queue.buffering.max.messages": 20_000, "reconnect.backoff.max.ms": 200,
                                       "log_level": 2})  # the refused connects while it restarts are expected
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg) -> None:
        (self.failed if err is not None else self.acked).add(msg.value())

    def _run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            try:
                self.producer.produce(self.topic, b"k%d" % seq, on_delivery=self._delivered)
                seq += 1
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)
            if seq % 50 == 0:
                time.sleep(0.005)  # ~10 000 records/s at most: the read-back stays short
        self.producer.flush(120)


class RocketMQLoad:
    """SYNC sends of r<seq>, one at a time, no client retry."""

    def __init__(self, namesrv: str, topic: str) -> None:
        self.topic = topic
        self.acked: set[bytes] = set()
        self.failed: set[bytes] = set()
        self.producer = Producer(f"soak-pg-{uuid.uuid4().hex[:6]}", namesrv, retry_times=0, send_timeout=2.0)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            body = b"r%d" % seq
            seq += 1
            try:
                ok = self.producer.send(Message(self.topic, body)).status == SendStatus.SEND_OK
            except Exception:  # noqa: BLE001 - the gateway is down or went down: not acknowledged
                ok = False
            (self.acked if ok else self.failed).add(body)
            if not ok:
                time.sleep(0.05)


def read_kafka(bootstrap: str, topic: str) -> collections.Counter:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"soak-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "check.crcs": True})
    got: collections.Counter = collections.Counter()
    try:
        parts = [TopicPartition(topic, p, 0) for p in range(QUEUES)]
        high = {p.partition: c.get_watermark_offsets(p, timeout=15)[1] for p in parts}
        c.assign(parts)
        pos = {p: 0 for p in high}
        deadline = time.monotonic() + 300
        while any(pos[p] < high[p] for p in pos) and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                if m.error() is None:
                    got[m.value()] += 1
                    pos[m.partition()] = m.offset() + 1
    finally:
        c.close()
    return got


def read_rocketmq(namesrv: str, topic: str, want: int) -> collections.Counter:
    c = LitePullConsumer(f"soak-cg-{uuid.uuid4().hex[:6]}", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    got: collections.Counter = collections.Counter()
    try:
        c.assign([MessageQueue(topic, "broker-a", q) for q in range(QUEUES)])
        deadline = time.monotonic() + 300
        quiet_until = None
        while time.monotonic() < deadline:
            batch = c.poll(0.5)
            for m in batch:
                got[m.body] += 1
            if sum(got.values()) >= want:
                quiet_until = quiet_until or time.monotonic() + 2  # a little longer: copies would show
                if time.monotonic() > quiet_until:
                    break
    finally:
        c.shutdown()
    return got


def check(name: str, acked: set, failed: set, got: collections.Counter) -> dict:
    lost = [v for v in acked if got[v] == 0]
    duplicated = [v for v, n in got.items() if n > 1]
    return {"name": name, "acked": len(acked), "unacked": len(failed), "stored": sum(got.values()),
            "unacked_stored": sum(1 for v in failed if got[v]), "lost": len(lost), "duplicated": len(duplicated),
            "examples": sorted(lost)[:3] + sorted(duplicated)[:3]}


def run(cycles: int, seed: int, workdir: str, say=print) -> dict:
    rng = random.Random(seed)
    g = GatewayProcess(os.path.join(workdir, "data"), flush="async", extra_args=["--verify"]).start()
    kafka_topic, rmq_topic = f"soak-k-{seed}", f"soak-r-{seed}"
    kafka = KafkaLoad(g.kafka_bootstrap, kafka_topic)
    rmq = RocketMQLoad(g.namesrv, rmq_topic)
    rmq.producer.start()
    began = time.monotonic()
    restarts = []
    try:
        kafka.thread.start()
        rmq.thread.start()
        for cycle in range(cycles):
            time.sleep(rng.uniform(0.8, 2.0))
            g.kill9()
            g.flush = "sync" if cycle % 2 == 0 else "async"
            t0 = time.monotonic()
            g.start()
            restarts.append(time.monotonic() - t0)
            say(f"cycle {cycle + 1}/{cycles}: killed, restarted ({g.flush}) in {restarts[-1]:.1f} s; "
                f"acked so far kafka={len(kafka.acked)} rocketmq={len(rmq.acked)}")
        time.sleep(1.0)
        kafka.stop.set()
        rmq.stop.set()
        kafka.thread.join(180)
        rmq.thread.join(30)
        rmq.producer.shutdown()
        results = [check("Kafka idempotent acks=all", kafka.acked, kafka.failed, read_kafka(g.kafka_bootstrap,
                                                                                           kafka_topic)),
                   check("RocketMQ SYNC send", rmq.acked, rmq.failed,
                         read_rocketmq(g.namesrv, rmq_topic, len(rmq.acked)))]
        with open(g.log_path, encoding="utf-8", errors="replace") as f:
            verified = [(int(a), int(b)) for a, b in VERIFIED.findall(f.read())]
            f.seek(0)
            tracebacks = f.read().count("Traceback")
    finally:
        kafka.stop.set()
        rmq.stop.set()
        g.stop()
    return {"cycles": cycles, "seed": seed, "seconds": time.monotonic() - began, "results": results,
            "verified": verified, "tracebacks": tracebacks,
            "restart_s": (min(restarts), sorted(restarts)[len(restarts) // 2], max(restarts)) if restarts else None}


def ok(report: dict) -> bool:
    return (all(r["lost"] == 0 and r["duplicated"] == 0 for r in report["results"])
            and len(report["verified"]) == report["cycles"] + 1 and all(q == 0 for _, q in report["verified"]))


def markdown(report: dict) -> str:
    lines = [f"Latest `make soak` ({time.strftime('%Y-%m-%d', time.gmtime())}): {report['cycles']} cycles of "
             f"kill -9 under load, seed {report['seed']}, {report['seconds']:.0f} s, "
             f"{'PASSED' if ok(report) else 'FAILED'}.", "",
             "| producer | acknowledged | not acknowledged | stored | not acknowledged but stored | lost | duplicated |",
             "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['name']} | {r['acked']} | {r['unacked']} | {r['stored']} | {r['unacked_stored']} "
                     f"| {r['lost']} | {r['duplicated']} |")
    entries = [n for n, _ in report["verified"]]
    lo, mid, hi = report["restart_s"] or (0, 0, 0)
    lines += ["", f"`--verify` at each of the {len(report['verified'])} starts: "
              f"{sum(q for _, q in report['verified'])} entries quarantined (the last walk checked "
              f"{entries[-1] if entries else 0} CommitLog entries); restart to listening {lo:.1f} / {mid:.1f} / "
              f"{hi:.1f} s (min / median / max); tracebacks in the gateway log: {report['tracebacks']}."]
    return "\n".join(lines)


def write_docs(text: str) -> None:
    write_marked(DOCS, "soak", text, "## Soak: kill -9 under load (`make soak`)")


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.robustness.soak")
    ap.add_argument("--cycles", type=int, default=50)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="rocketgate-soak-")
    try:
        report = run(args.cycles, args.seed, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    text = markdown(report)
    print(text)
    for r in report["results"]:
        if r["examples"]:
            print(f"{r['name']}: lost or duplicated, e.g. {r['examples']}")
    if args.write_docs:
        write_docs(text)
    return 0 if ok(report) else 1


if __name__ == "__main__":
    sys.exit(main())
