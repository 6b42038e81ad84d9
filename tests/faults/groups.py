"""The consumer-group workload: a librdkafka consumer in group `faults-group` reads the queue topic
and commits its positions every `every_s`, waiting for each commit's answer (up to COMMIT_WAIT_S,
polling meanwhile), each commit logged as invoke then ok / fail / info with the offsets it carried.
Not librdkafka's synchronous commit: it has no timeout, and once a commit waited past
max.poll.interval.ms the consumer left its group and the commit never returned (seed 2612's long
run hung there after its schedule). Checker: once healed, the group's committed offset of every
partition is at least the highest one an acknowledged commit carried (a committed offset is never
lost or moved back), and acknowledged commits of one partition never go backwards in time."""
from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

GROUP = "faults-group"
COMMIT_WAIT_S = 30.0  # then the commit is indeterminate (info)
# No partition assigned for this long (past any fault and its heal): the consumer is replaced by a new one.
# librdkafka 2.16 can stay out of its group for good once the coordinator's broker left Metadata (it
# "decommissions" such brokers; librdkafka issue 5511): seed 2612's long runs lost the group that way.
STUCK_S = 60.0


class GroupWorkload:
    label = "consumer group (librdkafka, classic), offset commits each waited for (30 s)"

    def __init__(self, bootstrap: str, topic: str, partitions: int, now, every_s: float = 0.5,
                 log_path: str | None = None) -> None:
        self.bootstrap, self.topic, self.partitions, self.now, self.every_s = bootstrap, topic, partitions, now, every_s
        self.logger = None  # librdkafka's group debug log (debug=cgrp) to `log_path`: what its group state did
        if log_path:
            self.logger = logging.getLogger(f"faults.group.{id(self)}")
            self.logger.propagate = False
            handler = logging.FileHandler(log_path)
            handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
            self.logger.addHandler(handler)
            self.logger.setLevel(logging.DEBUG)
        self.history: list[dict] = []
        self.replaced: list[float] = []  # when a consumer out of its group for STUCK_S was replaced
        # why a commit tick sent nothing: no partition assigned / assigned but none consumed yet / position() raised
        self.idle = {"unassigned": 0, "unconsumed": 0, "position_error": 0}
        self.poll_errors: dict[str, int] = {}  # errors poll() handed back, by text
        self.fatal: str | None = None  # an exception that ended the thread (its history ends there)
        self.unclosed: str | None = None  # set when finish() left a consumer that would not close
        self._new_consumer()

    def _new_consumer(self) -> None:
        """A consumer with its own answer list: commits it sent; their answers, in order (librdkafka
        answers in order), so a replaced consumer's late answers never shift the new one's."""
        answers: list = []
        self.sent, self.answers, self.assigned_at = 0, answers, time.monotonic()
        conf = {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "session.timeout.ms": 10000, "topic.metadata.refresh.interval.ms": 1000,
                "on_commit": lambda err, tps: answers.append((err, tps))}
        if self.logger is not None:
            conf.update(debug="cgrp", logger=self.logger)
        self.consumer = Consumer(conf)

    def _replace_stuck(self) -> None:
        """Out of the group for STUCK_S: close the consumer in the background (its LeaveGroup may never
        be sent) and join with a new one, as an application would restart it."""
        threading.Thread(target=self.consumer.close, daemon=True).start()
        self._new_consumer()
        self.consumer.subscribe([self.topic])
        self.replaced.append(round(self.now(), 1))

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(stop,), daemon=True)
        thread.start()
        return thread

    def _run(self, stop: threading.Event) -> None:
        try:
            self.consumer.subscribe([self.topic])
            next_commit = time.monotonic() + self.every_s
            while not stop.is_set():
                self._poll()
                if time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + self.every_s
                    self._commit()
        except Exception as e:  # noqa: BLE001 - kept and reported, not lost with the thread
            self.fatal = f"{self.now():.1f} s: {e!r}"

    def _poll(self) -> None:
        msg = self.consumer.poll(0.1)
        if msg is not None and msg.error() is not None:
            text = str(msg.error())
            self.poll_errors[text] = self.poll_errors.get(text, 0) + 1

    def _commit(self) -> None:
        try:
            assigned = self.consumer.assignment()
            positions = [tp for tp in self.consumer.position(assigned) if tp.offset >= 0]
        except KafkaException:
            self.idle["position_error"] += 1
            return
        if assigned:
            self.assigned_at = time.monotonic()
        elif time.monotonic() - self.assigned_at > STUCK_S:
            self._replace_stuck()
        if not positions:
            self.idle["unconsumed" if assigned else "unassigned"] += 1
            return
        value = len(self.history)
        offsets = {tp.partition: tp.offset for tp in positions}
        self.history.append({"type": "invoke", "f": "commit", "value": value, "offsets": offsets, "time": self.now()})
        self.history.append({**self._committed(positions), "f": "commit", "value": value, "offsets": offsets,
                             "time": self.now()})

    def _committed(self, positions: list) -> dict:
        """Commit `positions` and wait for its answer: ok, fail (refused), or info (no answer in time)."""
        try:
            self.consumer.commit(offsets=positions, asynchronous=True)
        except KafkaException as e:
            return {"type": "fail", "error": str(e.args[0])}
        self.sent += 1
        deadline = time.monotonic() + COMMIT_WAIT_S
        while len(self.answers) < self.sent and time.monotonic() < deadline:
            self._poll()  # serves the answer (and keeps the consumer in its group)
        if len(self.answers) < self.sent:
            return {"type": "info", "error": f"no answer in {COMMIT_WAIT_S:g} s"}
        err, answered = self.answers[self.sent - 1]
        bad = [tp.error for tp in answered or () if tp.error is not None] + ([err] if err is not None else [])
        if not bad:
            return {"type": "ok"}
        indeterminate = bad[0].code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._TRANSPORT)
        return {"type": "info" if indeterminate else "fail", "error": str(bad[0])}

    def diagnostics(self) -> dict:
        """Why the history is short, when it is: the ticks that sent no commit, poll's errors, a thread's end."""
        return {"idle_ticks": dict(self.idle), "poll_errors": dict(sorted(self.poll_errors.items())[:10]),
                "replaced_at": self.replaced, "unclosed": self.unclosed, "producer_fatal": self.fatal}

    def finish(self, timeout: float = 30.0) -> None:
        """Close the consumer, waiting at most `timeout`: librdkafka's close waits for its group to end,
        and a consumer stuck out of its group never ends it (seed 2612's run hung here for good)."""
        closing = threading.Thread(target=self.consumer.close, daemon=True)
        closing.start()
        closing.join(timeout)
        if closing.is_alive():
            self.unclosed = f"the consumer did not close in {timeout:g} s (left behind)"


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
