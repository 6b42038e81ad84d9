"""`python -m bench [--quick]`: the side-by-side comparison of the gateway with Apache Kafka and Apache
RocketMQ on this machine. Writes docs/performance.md, docs/img/performance-<plan>.png and
bench/results/*.json.

Systems run one at a time (2 shared cores), each scenario at least 3 times; the report gives the
median and the spread (min–max) and the ratio gateway / reference of the medians.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import sys
import tempfile
import time

from bench import report
from bench import scenarios as sc
from bench.brokers import ROOT, BrokerError, Gateway, KafkaBroker, RocketMQBroker
from bench.scenarios import Unavailable


@dataclasses.dataclass
class Plan:
    name: str
    budget_s: float                     # wall-clock budget of the whole run
    seconds: float                      # one time-bound librdkafka produce run
    produce_cases: list                 # (size, acks) with librdkafka
    java_cases: list                    # (size, acks) with ProducerPerformance
    java_seconds: float                 # target duration of a ProducerPerformance run
    consume_records: int
    consume_java: bool                  # also ConsumerPerformance
    consume_sizes: list                 # record sizes of the pre-filled topics read back
    latency_seconds: float
    partitions: list
    native_seconds: float
    native_warmup: float
    durable_records: int
    recovery_bytes: list
    phases: list                        # (kind, system, share of the budget), in run order
    reps: int = 3


ALL_CASES = [(100, "1"), (100, "all"), (1024, "1"), (1024, "all")]
# Share of the time budget per phase (the gateway first: its max rate sets the latency rate); a phase
# that overruns its share marks its remaining rows n/a.
FULL_PHASES = [("main", "gateway", 0.23), ("main", "kafka", 0.29), ("main", "rocketmq", 0.08),
               ("durable", "gateway", 0.03), ("durable", "kafka", 0.04), ("durable", "rocketmq", 0.05),
               ("recovery", "gateway", 0.06), ("recovery", "kafka", 0.12), ("recovery", "rocketmq", 0.10)]
QUICK_PHASES = [("main", "gateway", 0.40), ("main", "kafka", 0.30), ("main", "rocketmq", 0.30)]
PLANS = {
    "quick": Plan("quick", 175, seconds=0.7, produce_cases=[(100, "1"), (1024, "all")], java_cases=[],
                  java_seconds=1.5, consume_records=100_000, consume_java=False, consume_sizes=[100, 1024], latency_seconds=1.0,
                  partitions=[1, 100], native_seconds=1.0, native_warmup=6.0,
                  durable_records=5_000, recovery_bytes=[], phases=QUICK_PHASES),
    "full": Plan("full", 1150, seconds=2.0, produce_cases=ALL_CASES, java_cases=ALL_CASES, java_seconds=2.0,
                 consume_records=500_000, consume_java=True, consume_sizes=[100, 1024], latency_seconds=3.0,
                 partitions=[1, 100, 1000, 10000], native_seconds=3.0, native_warmup=8.0,
                 durable_records=20_000, recovery_bytes=[1 << 30, 5 << 30], phases=FULL_PHASES),
}
LATENCY_RATE_CAP = 20_000  # the Python latency client keeps its schedule up to about this rate
CLASSES = {"gateway": Gateway, "kafka": KafkaBroker, "rocketmq": RocketMQBroker}
KAFKA_PROTOCOL = ("gateway", "kafka")
REMOTING = ("gateway", "rocketmq")


class Runner:
    def __init__(self, plan: Plan, systems: set[str]):
        self.plan = plan
        self.systems = systems
        self.results = report.Results()
        self.deadline = time.monotonic() + plan.budget_s
        self.gateway_rate: float | None = None

    def over_budget(self) -> bool:
        return time.monotonic() > self.deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def measure(self, scenario: str, system: str, fn, reps: int | None = None, better=None) -> list[dict]:
        """Run `fn` reps times (each call returns one repetition's metrics)."""
        def one_by_one():
            for _ in range(reps or self.plan.reps):
                if self.over_budget():
                    raise Unavailable("time budget exhausted")
                yield fn()
        return self._record(scenario, system, one_by_one(), better)

    def measure_batch(self, scenario: str, system: str, fn, better=None) -> list[dict]:
        """`fn(reps)` returns every repetition's metrics at once (one JVM for all of them)."""
        def batch():
            if self.over_budget():
                raise Unavailable("time budget exhausted")
            yield from fn(self.plan.reps)
        return self._record(scenario, system, batch(), better)

    def _record(self, scenario: str, system: str, runs, better) -> list[dict]:
        """Record each repetition; a failure marks the row n/a for this system with the reason."""
        out = []
        try:
            for metrics in runs:
                for metric, value in metrics.items():
                    self.results.add(scenario, metric, system, value, better)
                out.append(metrics)
        except Exception as e:  # noqa: BLE001 - one failed measurement must not end the run
            reason = str(e) if isinstance(e, Unavailable) else f"{type(e).__name__}: {e}"
            self.results.na(scenario, system, reason)
            print(f"  {scenario} [{system}]: n/a ({reason})", flush=True)
        if out:
            print(f"  {scenario} [{system}]: " + ", ".join(
                f"{k}={report.fmt(report.median([m[k] for m in out]))}" for k in out[0]), flush=True)
        return out

    def start(self, name: str, workdir: str, **kw):
        t0 = time.perf_counter()
        try:
            s = CLASSES[name](workdir, **kw).start()
        except (BrokerError, OSError, RuntimeError) as e:
            print(f"{name}: failed to start:\n{e}", flush=True)
            self.results.failed_start(name, str(e))
            return None
        if not kw:
            self.results.add("start-up (empty store)", "s", name, time.perf_counter() - t0, "lower")
        return s

    def run(self, tmp: str) -> None:
        phases = [(k, n, w) for k, n, w in self.plan.phases if n in self.systems]
        total = sum(w for _, _, w in phases)
        for kind, name, weight in phases:
            t0 = time.monotonic()
            self.deadline = t0 + self.plan.budget_s * weight / total
            getattr(self, f"phase_{kind}")(name, tmp)
            print(f"   ({kind} {name}: {time.monotonic() - t0:.0f}s of {self.deadline - t0:.0f}s)", flush=True)

    # -- phases --------------------------------------------------------------------------------
    def phase_main(self, name: str, tmp: str) -> None:
        """Async flush: throughput, latency, native TPS, memory, then partitions."""
        print(f"== {name} (async flush)", flush=True)
        s = self.start(name, os.path.join(tmp, f"{name}-async"))
        if s is None:
            return
        try:
            kafka_reason = self.kafka_ready(s.bootstrap) if name in KAFKA_PROTOCOL else None
            if kafka_reason:
                self.results.na_all_kafka(name, kafka_reason)
            elif name in KAFKA_PROTOCOL:
                self.kafka_protocol(name, s.bootstrap)
            if name in REMOTING:
                self.native(name, s.namesrv, python_client=(name == "gateway"))
            self.memory(name, s)
            if name in KAFKA_PROTOCOL and not kafka_reason:
                self.partitions(name, s.bootstrap)
        finally:
            s.kill9()  # the data is thrown away: no need to wait for a graceful shutdown

    def phase_recovery(self, name: str, tmp: str) -> None:
        """A fresh async instance, so that the stored volume is exactly what the fill wrote."""
        print(f"== {name} (recovery after kill -9)", flush=True)
        s = self.start(name, os.path.join(tmp, f"{name}-recovery"), flush="async")
        if s is None:
            return
        try:
            self.recovery(name, s, self.kafka_ready(s.bootstrap) if name in KAFKA_PROTOCOL else None)
        finally:
            s.kill9()

    def phase_durable(self, name: str, tmp: str) -> None:
        """Sync flush (fsync before the acknowledgement) on every system."""
        print(f"== {name} (sync flush)", flush=True)
        s = self.start(name, os.path.join(tmp, f"{name}-sync"), flush="sync")
        if s is None:
            return
        p = self.plan
        try:
            if name in KAFKA_PROTOCOL:
                reason = self.kafka_ready(s.bootstrap)
                scen = "durable produce 1 KiB acks=all + fsync (ProducerPerformance)"
                scen_lat = "durable produce 1 KiB acks=all + fsync at 500 rec/s (ProducerPerformance)"
                if reason:
                    self.results.na(scen, name, reason)
                    self.results.na(scen_lat, name, reason)
                else:
                    self.measure(scen, name, lambda: sc.java_produce(s.bootstrap, 1024, "all", p.durable_records,
                                                                     timeout=120))
                    self.measure(scen_lat, name, lambda: sc.java_produce(
                        s.bootstrap, 1024, "all", int(500 * p.java_seconds), timeout=90, rate=500),
                        better="lower")
            if name in REMOTING:
                topic = sc.new_topic("d")
                self.measure_batch("durable native send 128 B, SYNC_FLUSH (Java RmqBench)", name,
                                   lambda reps: [_without(r, "sent") for r in sc.rmq_produce_reps(
                                       s.namesrv, topic, p.native_seconds, reps, warmup=p.native_warmup)])
        finally:
            s.kill9()  # the data is thrown away: no need to wait for a graceful shutdown

    # -- Kafka protocol ------------------------------------------------------------------------
    def kafka_ready(self, bootstrap: str) -> str | None:
        """None if one record can be produced, else the reason (an unfinished gateway layer)."""
        try:
            r = sc.kafka_client(60, cmd="produce", bootstrap=bootstrap, topic=sc.new_topic("probe"), size=10,
                                acks="all", seconds=5, max_records=1)
        except Unavailable as e:
            return f"Kafka produce not available: {e}"
        return None if r["records"] == 1 else f"Kafka produce not available: {r['errors']}"

    def kafka_protocol(self, system: str, bootstrap: str) -> None:
        p = self.plan
        rates = {}
        for size, acks in p.produce_cases:
            res = self.measure(f"produce {size} B acks={acks} (librdkafka)", system,
                               lambda: sc.librdkafka_produce(bootstrap, size, acks, p.seconds))
            if res:
                rates[(size, acks)] = report.median([r["rec/s"] for r in res])
        for size, acks in p.java_cases:
            guess = rates.get((size, acks)) or max(rates.values(), default=20_000)
            records = int(min(5_000_000, max(20_000, guess * p.java_seconds * 2)))
            self.measure(f"produce {size} B acks={acks} (ProducerPerformance)", system,
                         lambda: sc.java_produce(bootstrap, size, acks, records, timeout=p.java_seconds * 8 + 60))
        consumers = ["librdkafka"] + (["ConsumerPerformance"] if p.consume_java else [])
        for size in p.consume_sizes:
            try:
                topic = sc.prefill(bootstrap, p.consume_records, size)
            except Unavailable as e:
                for client in consumers:
                    self.results.na(f"consume {size} B (pre-filled, {client})", system, f"pre-fill: {e}")
                continue
            self.measure(f"consume {size} B (pre-filled, librdkafka)", system,
                         lambda: sc.librdkafka_consume(bootstrap, topic, p.consume_records))
            if p.consume_java:
                self.measure(f"consume {size} B (pre-filled, ConsumerPerformance)", system,
                             lambda: sc.java_consume(bootstrap, topic, p.consume_records))
        rate = self.latency_rate(rates.get((100, "1")), system)
        self.measure(f"end-to-end latency 100 B at {rate:,.0f} rec/s (librdkafka)", system,
                     lambda: sc.e2e_latency(bootstrap, rate, p.latency_seconds), better="lower")

    def partitions(self, system: str, bootstrap: str) -> None:
        p = self.plan
        for n in p.partitions:
            scen = f"produce 100 B over {n} partitions (librdkafka)"
            if self.over_budget():
                self.results.na(scen, system, "time budget exhausted")
                continue
            try:
                spread, created = sc.create_partitions(bootstrap, n, timeout=max(10.0, self.remaining() - 20))
            except Unavailable as e:
                self.results.na(scen, system, f"create topics: {e}")
                continue
            self.results.add(f"create {n} partitions (topics of ≤100)", "s", system, created, "lower")
            self.measure(scen, system, lambda: sc.partition_produce(bootstrap, spread, p.seconds))

    def latency_rate(self, measured: float | None, system: str) -> float:
        """Half the gateway's max produce rate (the gateway runs first); capped for the client."""
        if system == "gateway" and measured:
            self.gateway_rate = min(LATENCY_RATE_CAP, round(measured / 2, -2))
        return self.gateway_rate or 5_000.0

    # -- RocketMQ remoting ---------------------------------------------------------------------
    def native(self, system: str, namesrv: str, python_client: bool) -> None:
        p = self.plan
        topic = sc.new_topic("n")
        sent = []

        def produce(reps: int) -> list[dict]:
            runs = sc.rmq_produce_reps(namesrv, topic, p.native_seconds, reps, warmup=p.native_warmup)
            sent.extend(r.pop("sent") for r in runs)
            return runs

        self.measure_batch("native send 128 B, 16 threads (Java RmqBench)", system, produce)
        if sent:
            self.measure_batch("native consume 128 B (Java push consumer)", system,
                               lambda reps: sc.rmq_consume_reps(namesrv, topic, sum(sent), reps))
        else:
            self.results.na("native consume 128 B (Java push consumer)", system, "nothing was sent")
        if python_client:
            send_scen = "native send 128 B (Python client/, 16 tasks)"
            read_scen = "native consume 128 B (Python client/, lite pull)"
            reads = []

            def python_client_runs(reps: int) -> list[dict]:
                sends, consumed = sc.python_native_reps(namesrv, p.native_seconds, reps)
                reads.extend(consumed)
                return sends

            for scen in (send_scen, read_scen):
                self.results.na(scen, "rocketmq", "gateway only (the project's own client)")
            self.measure_batch(send_scen, system, python_client_runs)
            if reads:  # measured with the sends: recorded whatever the time budget says now

                def read_rows():
                    yield from sc.python_consume_tps(reads)
                self._record(read_scen, system, read_rows(), None)
            else:
                self.results.na(read_scen, system, "the send windows did not finish")

    # -- process-level -------------------------------------------------------------------------
    def memory(self, system: str, s) -> None:
        time.sleep(2.0)
        self.results.add("private memory (async run)", "peak MiB", system, s.peak_memory / 2**20, "lower")
        self.results.add("private memory (async run)", "steady MiB", system, s.memory() / 2**20, "lower")

    def recovery(self, name: str, s, kafka_reason: str | None) -> None:
        """Fill the (fresh) store up to each size, kill -9, time the restart; the on-disk size is recorded.
        A fill may use 60% of the phase's remaining time; the rest is for the restarts."""
        topic = sc.new_topic("r")
        if name == "rocketmq":
            fill = lambda n: sc.fill_rocketmq(s.namesrv, topic, n, 0.6 * self.remaining())  # noqa: E731
            probe = lambda: sc.rmq_produce(s.namesrv, topic, 0.2, threads=1)  # noqa: E731
        else:
            fill = lambda n: sc.fill_kafka(s.bootstrap, topic, n, 0.6 * self.remaining())  # noqa: E731
            probe = lambda: self.probe_kafka(s.bootstrap, topic)  # noqa: E731
        for nbytes in self.plan.recovery_bytes:
            scen = f"restart after kill -9 with {report.size(nbytes)} stored"
            if kafka_reason and name != "rocketmq":
                self.results.na(scen, name, kafka_reason)
                continue
            if self.over_budget():
                self.results.na(scen, name, "time budget exhausted")
                continue
            try:
                fill(nbytes - sc.dir_bytes(s.data_dir))
            except Unavailable as e:
                self.results.na(scen, name, f"fill: {e}")
                continue
            self.results.add(scen, "GiB on disk", name, sc.dir_bytes(s.data_dir) / 2**30)
            self.measure(scen, name, lambda: {"s": sc.timed_restart(s, probe)}, better="lower")

    def probe_kafka(self, bootstrap: str, topic: str) -> dict:
        r = sc.kafka_client(60, cmd="produce", bootstrap=bootstrap, topic=topic, size=10, acks="all",
                            seconds=5, max_records=1)
        if r["records"] != 1:
            raise Unavailable(str(r["errors"]))
        return r


def _without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short runs, fewer cases (about 3 minutes)")
    ap.add_argument("--systems", default="gateway,kafka,rocketmq", help="comma-separated subset")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/performance.md")
    ap.add_argument("--keep", action="store_true", help="keep the temp data dirs")
    ap.add_argument("--render", metavar="JSON", help="only rewrite the docs from a saved bench/results file")
    args = ap.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        report.write_docs(report.Results.from_json(saved["results"]), saved["meta"])
        return 0
    plan = PLANS["quick" if args.quick else "full"]
    runner = Runner(plan, set(args.systems.split(",")))
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="rocketgate-bench-")
    print(f"bench ({plan.name}) data under {tmp}", flush=True)
    try:
        runner.run(tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.monotonic() - started
    meta = report.machine(plan.name, elapsed)
    table = runner.results.markdown()
    print(table)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    with open(os.path.join(ROOT, "bench", "results", f"{stamp}-{plan.name}.json"), "w") as f:
        json.dump({"meta": meta, "results": runner.results.to_json()}, f, indent=1)
    if not args.no_docs:
        report.write_docs(runner.results, meta)
    print(f"done in {elapsed:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
