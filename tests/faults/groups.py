"""The consumer-group workload: a librdkafka consumer in group `faults-group` reads the queue topic
and commits its positions synchronously every `every_s`, each commit logged as invoke then ok / fail /
info with the offsets it carried. Checker: once healed, the group's committed offset of every
partition is at least the highest one an acknowledged commit carried (a committed offset is never
lost or moved back), and acknowledged commits of one partition never go backwards in time."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

GROUP = "faults-group"


class GroupWorkload:
    label = "consumer group (librdkafka, classic), synchronous offset commits"

    def __init__(self, bootstrap: str, topic: str, partitions: int, now, every_s: float = 0.5) -> None:
        self.bootstrap, self.topic, self.partitions, self.now, self.every_s = bootstrap, topic, partitions, now, every_s
        self.history: list[dict] = []
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                                  "topic.metadata.refresh.interval.ms": 1000})

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(stop,), daemon=True)
        thread.start()
        return thread

    def _run(self, stop: threading.Event) -> None:
        self.consumer.subscribe([self.topic])
        next_commit = time.monotonic() + self.every_s
        while not stop.is_set():
            self.consumer.poll(0.1)
            if time.monotonic() >= next_commit:
                next_commit = time.monotonic() + self.every_s
                self._commit()

    def _commit(self) -> None:
        try:
            positions = [tp for tp in self.consumer.position(self.consumer.assignment()) if tp.offset >= 0]
        except KafkaException:
            return
        if not positions:
            return
        value = len(self.history)
        offsets = {tp.partition: tp.offset for tp in positions}
        self.history.append({"type": "invoke", "f": "commit", "value": value, "offsets": offsets, "time": self.now()})
        try:
            answered = self.consumer.commit(offsets=positions, asynchronous=False)
            bad = [tp for tp in answered if tp.error is not None]
            op = {"type": "fail", "error": str(bad[0].error)} if bad else {"type": "ok"}
        except KafkaException as e:
            err = e.args[0]
            indeterminate = err.code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._TRANSPORT)
            op = {"type": "info" if indeterminate else "fail", "error": str(err)}
        self.history.append({**op, "f": "commit", "value": value, "offsets": offsets, "time": self.now()})

    def finish(self) -> None:
        self.consumer.close()


def committed(bootstrap: str, topic: str, partitions: int, timeout: float = 60, group: str = GROUP) -> dict[int, int]:
    """The group's committed offsets now (retried while the coordinator moves)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                tps = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
                return {tp.partition: tp.offset for tp in tps}
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
    finally:
        reader.close()


def check_commits(history: list[dict], final: dict[int, int]) -> dict:
    """regressed: acknowledged commits whose offset the group no longer holds, or that an earlier
    acknowledged commit of the same partition exceeded."""
    oks = [op for op in history if op["type"] == "ok"]
    regressed, highest = set(), {}
    for op in oks:
        for p, offset in op["offsets"].items():
            p = int(p)
            if offset < highest.get(p, -1):
                regressed.add(op["value"])
            highest[p] = max(highest.get(p, -1), offset)
            if final.get(p, -1) < offset:
                regressed.add(op["value"])
    counts = {t: sum(op["type"] == t for op in history) for t in ("invoke", "ok", "fail", "info")}
    return {"ops": counts["invoke"], "ok": counts["ok"], "fail": counts["fail"], "info": counts["info"],
            "regressed": sorted(regressed), "final_committed": final, "highest_acked": highest,
            "valid": not regressed}
