"""The transactional workload: a librdkafka transactional producer writes one value to each partition
of its own topic per transaction and commits or aborts it (a seeded choice), each transaction logged as
invoke then ok / fail / info. Checker (final read with isolation.level=read_committed): every value of
an acknowledged commit is read exactly once (lost, duplicated); no value of an acknowledged abort or a
refused transaction is read (aborted_read); an indeterminate transaction is read whole or not at all
(torn: read in part, e.g. seed 74045's txn 305, whose commit the client never asked for)."""
from __future__ import annotations

import random
import threading
import time
from collections import Counter

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

TXN_TOPIC, TXN_PARTITIONS = "faults-txn", 3


class TxnWorkload:
    label = "transactional producer (librdkafka), commit or abort, read_committed final read"

    def __init__(self, bootstrap: str, now, seed: int) -> None:
        self.bootstrap, self.now, self.rng = bootstrap, now, random.Random(seed)
        self.history: list[dict] = []
        self.producer: Producer | None = None
        self.restarts = 0

    def _new_producer(self) -> None:
        """A fresh producer with the same transactional.id (fences a stuck predecessor)."""
        self.producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "faults-txn",
                                  "transaction.timeout.ms": 30000, "message.timeout.ms": 20000,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.producer.init_transactions(30)

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(stop,), daemon=True)
        thread.start()
        return thread

    def _run(self, stop: threading.Event) -> None:
        txn = 0
        while not stop.is_set():
            try:
                if self.producer is None:
                    self._new_producer()
            except KafkaException:
                self.producer = None
                time.sleep(1)
                continue
            values = [txn * TXN_PARTITIONS + p for p in range(TXN_PARTITIONS)]
            f = "commit" if self.rng.random() < 0.7 else "abort"
            self.history.append({"type": "invoke", "f": f, "value": txn, "values": values, "time": self.now()})
            self.history.append({**self._one(f, values), "f": f, "value": txn, "values": values, "time": self.now()})
            txn += 1
            time.sleep(0.05)

    def _one(self, f: str, values: list[int]) -> dict:
        p = self.producer
        try:
            p.begin_transaction()
            for v in values:
                p.produce(TXN_TOPIC, str(v).encode(), partition=v % TXN_PARTITIONS)
            if f == "commit":
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
            return {"type": "ok"}
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(30)
                    return {"type": "fail", "error": str(err)}
                except KafkaException:
                    pass
            self.producer, self.restarts = None, self.restarts + 1  # unknown outcome: start over, fenced
            return {"type": "info", "error": str(err)}

    def finish(self) -> None:
        if self.producer is not None:
            self.producer.flush(10)


def read_committed(bootstrap: str, timeout: float = 120, idle_s: float = 15) -> tuple[list[dict], dict]:
    """Every committed record of the topic: read_committed up to each partition's end offset, or until
    the position has not moved for `idle_s` (a transaction left open holds the last stable offset
    back). (records, {partition: (position, end)} of the partitions not read to their end)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-txn-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "topic.metadata.refresh.interval.ms": 1000})
    try:
        deadline = time.monotonic() + timeout
        tps = [TopicPartition(TXN_TOPIC, p) for p in range(TXN_PARTITIONS)]
        while True:
            try:
                ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        consumer.assign([TopicPartition(TXN_TOPIC, p, OFFSET_BEGINNING) for p in ends])
        records, last_progress, positions = [], time.monotonic(), {}
        while time.monotonic() < deadline and time.monotonic() - last_progress < idle_s:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                records.append({"partition": msg.partition(), "offset": msg.offset(), "value": int(msg.value())})
            now_at = {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())}
            if now_at != positions:
                positions, last_progress = now_at, time.monotonic()
            if msg is None and all(positions.get(p, -1) >= end or end == 0 for p, end in ends.items()):
                break
        stuck = {p: (positions.get(p), end) for p, end in ends.items() if end and positions.get(p, -1) < end}
        return records, stuck
    finally:
        consumer.close()


def check_txns(history: list[dict], read: tuple[list[dict], dict]) -> dict:
    final, stuck = read
    outcome = {op["value"]: op for op in history if op["type"] != "invoke"}
    read = Counter(r["value"] for r in final)
    lost, duplicated, aborted_read, torn = [], [], [], []
    for txn, op in outcome.items():
        seen = [v for v in op["values"] if read[v]]
        if any(read[v] > 1 for v in op["values"]):
            duplicated.append(txn)
        committed = op["type"] == "ok" and op["f"] == "commit"
        if committed and len(seen) < len(op["values"]):
            lost.append(txn)
        elif not committed and seen and op["type"] != "info":
            aborted_read.append(txn)
        elif op["type"] == "info" and seen and len(seen) < len(op["values"]):
            torn.append(txn)
    known = {v for op in outcome.values() for v in op["values"]}
    where = {r["value"]: (r["partition"], r["offset"]) for r in final}
    seen_of = {txn: {v: where.get(v) for v in outcome[txn]["values"]} for txn in set(lost + aborted_read + torn)}
    counts = Counter(op["type"] for op in history)
    return {"ops": counts["invoke"], "ok": counts["ok"], "fail": counts["fail"], "info": counts["info"],
            "committed": sum(1 for op in outcome.values() if op["type"] == "ok" and op["f"] == "commit"),
            "aborted": sum(1 for op in outcome.values() if op["type"] == "ok" and op["f"] == "abort"),
            "read": len(final), "not_read_to_end": stuck, "lost": lost, "duplicated": duplicated, "aborted_read": aborted_read,
            "torn": torn,
            "unexpected": sorted(set(read) - known),
            "anomalous_reads": {str(t): {str(v): at for v, at in vs.items()} for t, vs in seen_of.items()},
            "valid": not (lost or duplicated or aborted_read or torn or set(read) - known)}
