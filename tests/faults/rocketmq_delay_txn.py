"""The RocketMQ delay and transaction workload (`rocketmq-delay-txn`, issue 26: "delay and
transactional messages delivered at least once and a rolled-back half never delivered"), with the
repo's native client (client/, RemotingCommand), on one topic replicated 3 ways.

- Delay: a sync producer (no client retries) sends value v with delay level 1 + v % 3 (1 s, 5 s,
  10 s) to queue v % 3. ok = SEND_OK; FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE and timeouts are
  info, a broker refusal fail (as rocketmq_load). An acknowledged delayed message must reach its real
  topic (*lost* otherwise) and not before its due time (*early*: seen by the live reader before its
  invoke time + the level's delay - EARLY_SLACK_S). The scheduler's due times are the storing
  gateway's wall clock (RocketMQ's too, docs/cluster.md): an early delivery while a clock jump on that
  gateway overlapped the message's wait is *early_clock*, counted, the documented contract, not an anomaly.
- Transactions: a TransactionProducer sends half messages (values from TXN_BASE); the outcome is a
  function of the value (`decision`): the local transaction answers COMMIT, ROLLBACK, or UNKNOWN, and
  the check-back then answers commit or rollback (the same decision every time it is asked, as an
  application's would). ok = the half got SEND_OK and the end was sent (a oneway END_TRANSACTION: a
  lost one is answered again by the check-back). Every ok half decided commit must be delivered
  (*lost*); a half decided rollback is never delivered, whatever its send's outcome (*rolled_back_read*:
  the check listener never says commit for it, so no path may deliver it).
- The live reader (a librdkafka consumer of the topic, the one store) records when each value is first
  seen; after the schedule the checker waits until every value that must arrive has been seen (or
  SETTLE_S passes: delays up to 10 s and check-backs every CHECK_INTERVAL_MS), then makes the final
  read over Kafka (workload.read_all). A value read twice is counted (*redelivered*), not an anomaly:
  the contract is at least once.
"""
from __future__ import annotations

import threading
import time
from collections import Counter

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from client import Message, Producer, SendStatus, TransactionProducer, TransactionState
from client.errors import MQBrokerError, MQClientError

TOPIC, QUEUES = "faults-rmq-dt", 3
TXN_BASE = 1_000_000  # transaction values; delayed ones count from 0
LEVEL_S = {1: 1.0, 2: 5.0, 3: 10.0}  # the gateway's default levels 1-3
EARLY_SLACK_S = 0.5  # timestamps in ms, libfaketime's reread: well below the shortest level
CHECK_INTERVAL_MS = 5000  # --transaction-check-interval-ms of the gateways in a run with this workload
GATEWAY_ARGS = ["--transaction-check-interval-ms", str(CHECK_INTERVAL_MS)]
SETTLE_S = 90.0
DECISIONS = ("commit", "rollback", "unknown-commit", "unknown-rollback")
LOCAL = {"commit": TransactionState.COMMIT, "rollback": TransactionState.ROLLBACK,
         "unknown-commit": TransactionState.UNKNOWN, "unknown-rollback": TransactionState.UNKNOWN}
ANOMALIES = ("lost", "early", "rolled_back_read", "unexpected")


def level_of(value: int) -> int:
    return 1 + value % 3


def decision(value: int) -> str:
    return DECISIONS[(value - TXN_BASE) % len(DECISIONS)]


def committed(value: int) -> bool:
    return decision(value).endswith("commit")


def _outcome(result) -> dict:
    return {"type": "ok" if result.status == SendStatus.SEND_OK else "info", "status": result.status.name,
            "broker": result.queue.broker_name, "msg_id": result.offset_msg_id, "offset": result.queue_offset}


class DelayTxnWorkload:
    label = "RocketMQ delay levels 1-3 and transactions (native client, remoting), at-least-once and never a rollback"

    def __init__(self, namesrv: str, bootstrap: str, now) -> None:
        self.namesrv, self.bootstrap, self.now = namesrv, bootstrap, now
        self.history: list[dict] = []
        self.seen: dict[int, float] = {}  # value -> when the live reader first saw it
        self.checks: Counter = Counter()  # check-back questions answered, by decision
        self.fatal: str | None = None
        self._stopped = threading.Event()
        self.producer = Producer(f"{TOPIC}-delay", namesrv, send_timeout=5.0, retry_times=0)
        self.txn = TransactionProducer(f"{TOPIC}-txn", namesrv, send_timeout=5.0, retry_times=0,
                                       local_transaction=lambda msg, value: LOCAL[decision(value)],
                                       check_listener=self._check)
        for p in (self.producer, self.txn):  # routes re-read every 1 s, as rocketmq_load
            p._impl.instance.heartbeat_interval = 1.0

    def _check(self, msg) -> TransactionState:
        """The check-back: the same decision as the local transaction's intent, always."""
        value = int(msg.body)
        self.checks[decision(value)] += 1
        return TransactionState.COMMIT if committed(value) else TransactionState.ROLLBACK

    def start(self, stop: threading.Event) -> threading.Thread:
        self.producer.start()
        self.txn.start()
        for target in (self._read_live, self._send_txns):
            threading.Thread(target=target, args=(stop,), daemon=True).start()
        thread = threading.Thread(target=self._send_delayed, args=(stop,), daemon=True)
        thread.start()
        return thread

    def _record(self, op: dict, f: str, value: int, **extra) -> None:
        self.history.append({**op, "f": f, "value": value, **extra, "time": self.now()})

    def _send_delayed(self, stop: threading.Event) -> None:
        value = 0
        while not stop.is_set():
            level = level_of(value)
            self._record({"type": "invoke"}, "delay", value, level=level)
            try:
                result = self.producer.send(Message(TOPIC, str(value).encode(), delay_level=level),
                                            selector=lambda queues, msg, arg: queues[arg % len(queues)], arg=value)
                op = _outcome(result)
            except MQBrokerError as e:
                op = {"type": "fail", "error": f"{e.code} {e.remark}"}
            except Exception as e:  # noqa: BLE001 - a timeout or a closed connection: maybe stored
                op = {"type": "info", "error": repr(e)}
                time.sleep(0.5)
            self._record(op, "delay", value, level=level)
            value += 1
            time.sleep(0.02)

    def _send_txns(self, stop: threading.Event) -> None:
        value = TXN_BASE
        while not stop.is_set():
            self._record({"type": "invoke"}, "txn", value, decision=decision(value))
            try:
                result, state = self.txn.send_in_transaction(Message(TOPIC, str(value).encode()), value)
                op = {**_outcome(result), "local": state.name}
            except MQBrokerError as e:  # the half refused: no local transaction, nothing to decide
                op = {"type": "fail", "error": f"{e.code} {e.remark}"}
            except Exception as e:  # noqa: BLE001 - the half may be stored: the check-back decides it
                op = {"type": "info", "error": repr(e)}
                time.sleep(0.5)
            self._record(op, "txn", value, decision=decision(value))
            value += 1
            time.sleep(0.02)

    def _read_live(self, stop: threading.Event) -> None:
        """First sightings of each value, until the checker is done (`finish` stops it)."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"{TOPIC}-live",
                             "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000})
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(QUEUES)])
        try:
            while not self._stopped.is_set():
                msg = consumer.poll(0.2)
                if msg is None or msg.error():
                    continue
                self.seen.setdefault(int(msg.value()), self.now())
        finally:
            consumer.close()

    def due_values(self) -> set[int]:
        """What must arrive: acknowledged delayed sends and acknowledged halves decided commit."""
        return {op["value"] for op in self.history if op["type"] == "ok"
                and (op["f"] == "delay" or committed(op["value"]))}

    def settle(self, timeout: float = SETTLE_S) -> float:
        """Wait until the live reader saw every value that must arrive (or `timeout`); seconds waited."""
        start, due = time.monotonic(), self.due_values()
        while time.monotonic() - start < timeout and not due <= set(self.seen):
            time.sleep(0.5)
        return round(time.monotonic() - start, 1)

    def finish(self) -> None:
        """Nothing yet: the producers must answer check-backs until the checker has read (`close`)."""

    def close(self) -> None:
        self._stopped.set()
        for p in (self.producer, self.txn):
            try:
                p.shutdown()
            except Exception:  # noqa: BLE001 - the run is over; a close error changes no verdict
                pass


def _clock_excused(op: dict, invoked: float, seen: float, events: list[dict]) -> bool:
    """A clock jump on the storing gateway overlapped the message's wait (libfaketime rereads within 1 s)."""
    broker = op.get("broker", "")
    return any(e["fault"] == "clock-jump" and broker == f"broker-{e['target']}"
               and e["start"] - 1.0 <= seen and e["healed"] + 1.0 >= invoked for e in events)


def check_delay_txn(history: list[dict], final_read: list[dict], seen: dict[int, float],
                    events: list[dict] = ()) -> dict:
    """history: invoke / ok / fail / info ops with "f" delay (and "level") or txn; final_read:
    {"partition", "offset", "value"}; seen: value -> first sighting time (the history's clock);
    events: the nemesis's (clock jumps excuse early deliveries)."""
    invoked = {op["value"]: op["time"] for op in history if op["type"] == "invoke"}
    done = {op["value"]: op for op in history if op["type"] != "invoke"}
    read = Counter(r["value"] for r in final_read)
    delivered = set(read) | set(seen)
    lost, early, early_clock, rolled_back = [], [], [], []
    for value, op in sorted(done.items()):
        if op["f"] == "delay":
            if op["type"] == "ok" and value not in read:
                lost.append(value)
            if value in seen and seen[value] < invoked[value] + LEVEL_S[op["level"]] - EARLY_SLACK_S:
                (early_clock if _clock_excused(op, invoked[value], seen[value], events) else early).append(value)
        elif committed(value):
            if op["type"] == "ok" and value not in read:
                lost.append(value)
        elif value in delivered:
            rolled_back.append(value)
    unexpected = sorted(v for v in delivered if v not in invoked)
    counts = Counter(op["type"] for op in history if op["type"] != "invoke")
    by_kind = Counter((op["f"], op["type"]) for op in done.values())
    late = sorted(seen[v] - invoked[v] - LEVEL_S[op["level"]] for v, op in done.items()
                  if op["f"] == "delay" and op["type"] == "ok" and v in seen)
    result = {"ops": len(invoked), "ok": counts["ok"], "fail": counts["fail"], "info": counts["info"],
              "read": len(final_read), "lost": lost, "early": early, "rolled_back_read": rolled_back,
              "unexpected": unexpected, "early_clock": early_clock,
              "redelivered": sorted(v for v, n in read.items() if n > 1),
              "delay_ops": {t: by_kind["delay", t] for t in ("ok", "fail", "info")},
              "txn_ops": {t: by_kind["txn", t] for t in ("ok", "fail", "info")},
              "txn_ok_by_decision": dict(Counter(decision(v) for v, op in done.items()
                                                 if op["f"] == "txn" and op["type"] == "ok")),
              "delay_wait_past_due_s": {"median": round(late[len(late) // 2], 2), "max": round(late[-1], 2)}
              if late else None}
    result["valid"] = not any(result[k] for k in ANOMALIES)
    return result


def check_workload(load: DelayTxnWorkload, events: list[dict], read_all) -> dict:
    """Wait for the deliveries, read the topic, judge; the producers close after the read."""
    try:
        waited = load.settle()
        final = read_all(load.bootstrap, TOPIC, QUEUES)
        result = check_delay_txn(load.history, final, dict(load.seen), events)
        result.update(settled_s=waited, check_backs=dict(load.checks), final_read=final,
                      first_seen=sorted(load.seen.items()))  # kept in history.json for the analysis
        return result
    finally:
        load.close()
