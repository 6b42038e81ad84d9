"""The queue workload: librdkafka's idempotent acks=all producer (confluent-kafka) sending unique
ints, each send logged as invoke then ok / fail / info (indeterminate: a timeout may have been
written), and the final read of the whole topic once the cluster is healed (checker.check)."""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from checker import check

INDETERMINATE = {KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                 KafkaError.REQUEST_TIMED_OUT}


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 60, config: dict | None = None) -> None:
    """Create it with replication factor 3 (and `config`) and wait until every partition has a leader
    and 3 in sync."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(admin.list_topics(timeout=10).brokers) == 3:
            break
        time.sleep(0.5)
    while True:
        try:
            admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=3,
                                          config=config or {})])[topic].result(30)
            break
        except KafkaException as e:  # the client's own retry of a create whose answer came late (a fresh etcd each run)
            if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            # "not in the cluster's etcd yet": a loaded machine's etcd write outlived the request; asked again
            if e.args[0].code() != KafkaError.REQUEST_TIMED_OUT or time.monotonic() > deadline:
                raise
    while time.monotonic() < deadline:
        parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
        if len(parts) == partitions and all(p.leader > 0 and len(p.isrs) == 3 for p in parts.values()):
            return
        time.sleep(0.5)
    raise RuntimeError(f"topic {topic} not ready with 3 in-sync replicas")


def file_logger(name: str, path: str) -> logging.Logger:
    """A logger of its own writing to `path` only (not the test's output)."""
    logger = logging.getLogger(name)
    logger.propagate = False
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return logger


class Workload:
    label = "idempotent acks=all producer (librdkafka), 3 partitions RF 3, final read"

    def __init__(self, bootstrap: str, topic: str, partitions: int, now, log_path: str | None = None) -> None:
        self.bootstrap, self.topic, self.partitions, self.now = bootstrap, topic, partitions, now
        conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                "linger.ms": 5, "message.timeout.ms": 30000, "topic.metadata.refresh.interval.ms": 1000}
        if log_path:  # librdkafka's idempotence log (debug=eos): its epoch bumps and why, which explain re-sends
            conf.update(debug="eos", logger=file_logger(f"faults.queue.{id(self)}", log_path))
        self.producer = Producer(conf)
        self.history: list[dict] = []
        self.next_value = 0
        self.fatal: str | None = None  # librdkafka's fatal error (e.g. an idempotence sequence desync)

    def _done(self, err, msg, value: int, partition: int) -> None:
        op = {"process": 0, "f": "send", "value": value, "partition": partition, "time": self.now()}
        if err is None:
            op.update(type="ok", offset=msg.offset())
        else:
            op.update(type="info" if err.code() in INDETERMINATE else "fail", error=str(err))
        self.history.append(op)

    def send_one(self) -> None:
        value, self.next_value = self.next_value, self.next_value + 1
        partition = value % self.partitions
        self.history.append({"process": 0, "type": "invoke", "f": "send", "value": value,
                             "partition": partition, "time": self.now()})
        self.producer.produce(self.topic, str(value).encode(), partition=partition,
                              on_delivery=lambda err, msg, v=value, p=partition: self._done(err, msg, v, p))

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run_until, args=(stop.is_set,), daemon=True)
        thread.start()
        return thread

    def run_until(self, done, interval: float = 0.02) -> None:
        """Send every `interval` until done(); a fatal producer error ends the sending (kept in `fatal`)."""
        while not done():
            if self.fatal:
                time.sleep(interval)
                continue
            try:
                self.send_one()
                self.producer.poll(interval)
            except KafkaException as e:
                self.fatal = f"{self.now():.1f} s: {e}"

    def finish(self, timeout: float = 90) -> int:
        """Wait for every outstanding send; what is still unanswered is left as no completion (info)."""
        try:
            left = self.producer.flush(timeout)
        except KafkaException as e:
            self.fatal, left = self.fatal or str(e), -1
        pending = {op["value"] for op in self.history if op["type"] == "invoke"} - \
            {op["value"] for op in self.history if op["type"] != "invoke"}
        for value in sorted(pending):
            self.history.append({"process": 0, "type": "info", "f": "send", "value": value,
                                 "partition": value % self.partitions, "time": self.now(), "error": "no answer"})
        return left


def _high_watermark(consumer: Consumer, topic: str, partition: int, timeout: float) -> int:
    """Retried while the client's metadata still names a leader that moved (NOT_LEADER...)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def read_all(bootstrap: str, topic: str, partitions: int, timeout: float = 120, resets: list | None = None) -> list[dict]:
    """Every record of the topic, from offset 0 up to each partition's high watermark. `resets`: a
    partition whose reader went back (its fetch position reset: the end it was told could not be
    served) ends there, noted as {"partition", "end", "at", "back_to"}; without it, such a partition
    is read until the time runs out."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-reader", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 1000})
    try:
        ends = {p: _high_watermark(consumer, topic, p, timeout) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records, done, last_read = [], {p for p, end in ends.items() if end == 0}, {}
        deadline = time.monotonic() + timeout
        while len(done) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            last = last_read.get(msg.partition(), -1)
            if resets is not None and msg.partition() in done:
                continue  # read to its end (or sent back): later fetches of it are not the final read
            if resets is not None and msg.offset() <= last:
                resets.append({"partition": msg.partition(), "end": ends[msg.partition()], "at": last,
                               "back_to": msg.offset()})
                done.add(msg.partition())
                continue
            last_read[msg.partition()] = msg.offset()
            records.append({"partition": msg.partition(), "offset": msg.offset(), "value": int(msg.value())})
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        if len(done) < partitions:
            raise RuntimeError(f"final read incomplete: ends {ends}, read {len(records)}")
        return records
    finally:
        consumer.close()


ANOMALIES = ("lost", "duplicated", "reordered", "unexpected")


def choose_plant(history: list[dict], final: list[dict], judged: dict) -> dict | None:
    """The record `--plant-loss` takes out: one whose removal can change nothing but `lost`, so the
    plant never hides a real anomaly. It is acknowledged, read once (not one copy of a duplicate) and
    not itself reordered, and it is the last acknowledged record of its partition, so no later
    record's order is judged against it. `judged`: check() of the whole read. None when each
    partition's last acknowledged record is itself an anomaly (then nothing is planted)."""
    acked = {op["value"] for op in history if op["type"] == "ok"}
    counts = Counter(r["value"] for r in final)
    last: dict[int, dict] = {}
    for r in final:
        if r["value"] in acked and (r["partition"] not in last or r["offset"] > last[r["partition"]]["offset"]):
            last[r["partition"]] = r
    for partition in sorted(last):
        r = last[partition]
        if counts[r["value"]] == 1 and r["value"] not in judged["reordered"]:
            return r
    return None


def check_queue(load: Workload, plant_loss: bool, final: list[dict] | None = None) -> dict:
    """The final read (`final`: one already made) checked against the history; `plant_loss` drops one
    acknowledged record from the read first (the harness's own proof that it reports a loss), chosen
    after the whole read was checked so it hides nothing (choose_plant); that check's anomalies are
    kept as `unplanted`."""
    if final is None:
        final = read_all(load.bootstrap, load.topic, load.partitions)
    result = check(load.history, final)
    planted = None
    if plant_loss:
        unplanted = {k: result[k] for k in ANOMALIES}
        planted = choose_plant(load.history, final, result)
        if planted is not None:
            final = [r for r in final if r is not planted]
            result = check(load.history, final)
        result["unplanted"] = unplanted
    result.update(producer_fatal=load.fatal, planted=planted, final_read=final)
    if load.fatal:
        result["valid"] = False
    return result
