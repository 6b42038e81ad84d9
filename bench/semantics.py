"""Costs of the RocketMQ semantics (issue 5): delay precision, transactional commit rate, views.

    python -m bench.semantics [--quick]

(a) delay precision: a store with 100 000 delayed messages pending (half delay levels 5-18, half
    `__STARTDELIVERTIME` timers one to two hours out) and the real `DelayScheduler` under trio; probe
    messages (level 1 and timers 0.2-3 s out) are appended during a few windows, and the lateness of
    each delivered probe (store timestamp of the real-topic copy minus its due time) is reported.
(b) transactional throughput: native = half message + END_TRANSACTION commit through
    `semantics.transactions` on the store (no network); Kafka = a confluent-kafka transactional
    producer against a real gateway process, one record per transaction, for a fixed time.
(c) view maintenance: records/s produced with confluent-kafka to a base topic with 0, 1 and 10
    filtered views (`filter.tag.expression` TagA; half the records carry TAGS=TagA).

Each figure is the median (min-max) over the runs; the pending messages and gateway are shared by
the runs of one scenario.
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time

import trio
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import store
from bench.brokers import Gateway
from semantics.delay import DelayScheduler
from semantics.routing import DEFAULT_LEVELS, route
from semantics.transactions import Transactions
from codec.remoting.message import Message

RUNS = 3
PENDING = 100_000
PLANS = {  # probe window s, native tx per run, Kafka tx seconds per run, view records per run
    "quick": dict(window=4.0, native_tx=5_000, kafka_tx_s=3.0, view_records=20_000),
    "full": dict(window=15.0, native_tx=20_000, kafka_tx_s=8.0, view_records=100_000),
}


def _store(prefix: str):
    """A fresh store in a temp dir (removed again by `_close`)."""
    return store.open(tempfile.mkdtemp(prefix=prefix), store.StoreConfig(commitlog_file_size=256 << 20))


def _close(s) -> None:
    s.close()
    shutil.rmtree(s.path, ignore_errors=True)


def delay_precision(window: float) -> list[tuple[float, float, int]]:
    """(p50, p99, probes) of lateness in ms per probe window, with PENDING messages pending."""
    rnd = random.Random(1)
    s = _store("sem-delay-")
    now = int(time.time() * 1000)
    batch = []
    for i in range(PENDING):
        if i % 2:
            props = {"__STARTDELIVERTIME": str(now + 3_600_000 + rnd.randrange(3_600_000))}
        else:
            props = {"DELAY": str(rnd.randrange(5, 19))}
        batch.append(route(Message("P", i % 4, b"x" * 100, props), now, DEFAULT_LEVELS))
        if len(batch) == 1000:
            s.append_many(batch)
            batch = []

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(DelayScheduler(s, DEFAULT_LEVELS).run)
            await trio.sleep(1)  # scheduler start-up: loads the timer heap
            for w in range(RUNS):
                t_end = time.time() + window
                i = 0
                while time.time() < t_end:
                    t = int(time.time() * 1000)
                    if i % 2:
                        props = {"DELAY": "1"}
                    else:
                        props = {"__STARTDELIVERTIME": str(t + rnd.randrange(200, 3000))}
                    s.append(route(Message(f"L{w}", 0, b"y", props), t, DEFAULT_LEVELS))
                    i += 1
                    await trio.sleep(0.02)
            await trio.sleep(3.5)  # the last probes fall due
            n.cancel_scope.cancel()

    trio.run(main)
    out = []
    for w in range(RUNS):
        late, off = [], 0
        while True:
            r = s.read(f"L{w}", 0, off, 1000)
            if not r.entries:
                break
            for _o, m in r.entries:
                q, o = map(int, m.properties["SCHEDULE_OFFSET"].split(":"))
                due = s.units("SCHEDULE_TOPIC_XXXX", q, o, 1)[0][2]
                late.append(m.store_timestamp - due)
            off = r.next_offset
        late.sort()
        out.append((late[len(late) // 2], late[int(len(late) * 0.99)], len(late)))
    _close(s)
    return out


def native_tx(n: int) -> list[float]:
    """Half + commit per second through semantics.transactions on a store (async flush)."""
    s = _store("sem-tx-")
    tx = Transactions(s)
    rates = []
    for _ in range(RUNS):
        t = time.perf_counter()
        for _i in range(n):
            half = s.append(route(Message("T", 0, b"x" * 100, {"TRAN_MSG": "true", "PGROUP": "g"}), 0))
            tx.end(half.queue_offset, True, "g", half.physical_offset)
        rates.append(n / (time.perf_counter() - t))
    _close(s)
    return rates


def _create(admin: AdminClient, topic: NewTopic) -> None:
    admin.create_topics([topic])[topic.topic].result(30)


def kafka_tx(bootstrap: str, seconds: float) -> list[float]:
    """Commits/s of a confluent-kafka transactional producer, one 100 B record per transaction."""
    _create(AdminClient({"bootstrap.servers": bootstrap}), NewTopic("tx", num_partitions=1, replication_factor=1))
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-semantics", "linger.ms": 0})
    p.init_transactions(30)
    rates = []
    for _ in range(RUNS):
        n, t = 0, time.perf_counter()
        while time.perf_counter() - t < seconds:
            p.begin_transaction()
            p.produce("tx", value=b"x" * 100, partition=0)
            p.commit_transaction(30)
            n += 1
        rates.append(n / (time.perf_counter() - t))
    return rates


def view_produce(bootstrap: str, views: int, records: int) -> list[float]:
    """Records/s produced to a base topic that has `views` TagA views (half the records match)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    base = f"base{views}"
    _create(admin, NewTopic(base, num_partitions=4, replication_factor=1))
    for i in range(views):
        _create(admin, NewTopic(f"{base}-view{i}", num_partitions=-1, replication_factor=-1, config={
            "filter.source.topic": base, "filter.tag.expression": "TagA"}))
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 500000})
    tags = [[("TAGS", b"TagA")], [("TAGS", b"TagB")]]
    payload = b"x" * 100
    rates = []
    for _ in range(RUNS):
        t = time.perf_counter()
        for i in range(records):
            while True:
                try:
                    p.produce(base, value=payload, headers=tags[i % 2], partition=i % 4)
                    break
                except BufferError:
                    p.poll(0.01)
        if p.flush(120):
            raise RuntimeError("records still unacknowledged after 120 s")
        rates.append(records / (time.perf_counter() - t))
    return rates


def _fmt(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short windows and fewer records (~1-2 min)")
    plan = PLANS["quick" if ap.parse_args().quick else "full"]
    rows = []

    d = delay_precision(plan["window"])
    rows.append((f"delay, {PENDING} pending", f"lateness p50 ms ({sum(x[2] for x in d)} probes)",
                 _fmt([x[0] for x in d])))
    rows.append((f"delay, {PENDING} pending", "lateness p99 ms", _fmt([x[1] for x in d])))
    rows.append(("native tx (store, async flush)", "commits/s", _fmt(native_tx(plan["native_tx"]))))
    with tempfile.TemporaryDirectory(prefix="sem-gw-") as tmp, Gateway(tmp, flush="async") as g:
        rows.append(("Kafka tx (confluent, 1 rec/tx)", "commits/s", _fmt(kafka_tx(g.bootstrap, plan["kafka_tx_s"]))))
        for views in (0, 1, 10):
            rows.append((f"produce, {views} view{'' if views == 1 else 's'}", f"records/s ({plan['view_records']}/run)",
                         _fmt(view_produce(g.bootstrap, views, plan["view_records"]))))

    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    print(f"{'scenario':<{w0}}  {'metric':<{w1}}  median (min-max) over {RUNS} runs")
    for a, b, c in rows:
        print(f"{a:<{w0}}  {b:<{w1}}  {c}")


if __name__ == "__main__":
    main()
