"""`python -m bench [--quick]`: the side-by-side comparison of the gateway with Apache Kafka and Apache
RocketMQ on this machine. Writes docs/performance.md, docs/img/performance-<plan>.png and
bench/results/*.json. `python -m bench --compare-gateway OTHER_CHECKOUT` compares this tree's gateway
with another checkout's instead (for refactors); it rewrites only its own section of the page.

Every system of a phase runs at once; each scenario warms every system up once, then alternates them
round by round (bench.interleave) and reports the median of the per-round ratios, its spread and a
verdict (bench.rounds), so that load from other jobs on the 2 shared cores hits both sides alike.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time

from bench import limits, pressure, report
from bench import scenarios as sc
from bench.brokers import ROOT, BrokerError, Gateway, KafkaBroker, RocketMQBroker
from bench.procstat import cpu_used
from bench.interleave import Interleaver
from bench.plans import PLANS, Plan
from bench.scenarios import Unavailable

DATA_BUDGET = 3 << 30  # a system holding more is renewed (empty store) before the next scenario
LATENCY_RATE_CAP = 20_000  # the Python latency client keeps its schedule up to about this rate
CLASSES = {"gateway": Gateway, "kafka": KafkaBroker, "rocketmq": RocketMQBroker}
OTHER = "other"  # the other checkout's gateway in --compare-gateway


class Runner:
    """The phases of a run. `kafka_pair` / `remoting_pair`: the systems compared on each protocol,
    subject first (the gateway of this tree)."""

    def __init__(self, plan: Plan, systems: list[str], other_tree: str | None = None):
        self.plan, self.other_tree = plan, other_tree
        if other_tree:
            self.names = ["gateway", OTHER]
            self.kafka_pair = self.remoting_pair = ("gateway", OTHER)
            self.results = report.Results("gateway", (OTHER,))
        else:
            self.names = [n for n in CLASSES if n in systems]
            self.kafka_pair, self.remoting_pair = ("gateway", "kafka"), ("gateway", "rocketmq")
            self.results = report.Results()
        self.deadline = time.monotonic() + plan.budget_s
        self.rounds = Interleaver(self.results, plan.rounds, self.over_budget)

    def over_budget(self) -> bool:
        return time.monotonic() > self.deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def measure_batch(self, scenario: str, system: str, fn, check_budget: bool = True) -> list[dict]:
        """`fn(reps)` returns every repetition's metrics at once (one process for all of them); a
        failure marks the row n/a for this system with the reason."""
        out = []
        try:
            if check_budget and self.over_budget():
                raise Unavailable("time budget exhausted")
            for metrics in fn(self.plan.rounds):
                for metric, value in metrics.items():
                    self.results.add(scenario, metric, system, value)
                out.append(metrics)
        except Exception as e:  # noqa: BLE001 - one failed measurement must not end the run
            reason = str(e) if isinstance(e, Unavailable) else f"{type(e).__name__}: {e}"
            self.results.na(scenario, system, reason)
            print(f"  {scenario} [{system}]: n/a ({reason})", flush=True)
        return out

    def start(self, name: str, workdir: str, flush: str = "async", timed: bool = True):
        """Start one system; `timed`: record its start-up time (an empty store, async flush)."""
        t0 = time.perf_counter()
        try:
            if name == OTHER:
                s = Gateway(workdir, flush=flush, tree=self.other_tree).start()
            else:
                s = CLASSES[name](workdir, flush=flush).start()
        except (BrokerError, OSError, RuntimeError) as e:
            print(f"{name}: failed to start:\n{e}", flush=True)
            self.results.failed_start(name, str(e))
            return None
        if timed and flush == "async":
            self.results.add("start-up (empty store)", "s", name, time.perf_counter() - t0, "lower")
        return s

    def start_all(self, tmp: str, flush: str, names: list[str]) -> dict:
        started = {}
        for name in names:
            s = self.start(name, os.path.join(tmp, f"{name}-{flush}"), flush)
            if s is not None:
                started[name] = s
        return started

    def run(self, tmp: str) -> None:
        total = sum(w for _, w in self.plan.phases)
        for kind, weight in self.plan.phases:
            t0 = time.monotonic()
            self.deadline = t0 + self.plan.budget_s * weight / total
            getattr(self, f"phase_{kind}")(tmp)
            print(f"   ({kind}: {time.monotonic() - t0:.0f}s of {self.deadline - t0:.0f}s)", flush=True)

    def bound_disk(self, systems: dict) -> None:
        """Renew every system whose store passed DATA_BUDGET, so that a full run's disk use stays
        about one scenario's worth (a scenario warms every system up again before its rounds)."""
        for name, s in systems.items():
            size = s.data_bytes()
            if size > DATA_BUDGET:
                print(f"  ({name}: {size / 2**30:.1f} GiB stored, restarting on an empty store)", flush=True)
                s.renew()

    def pairs(self, pair: tuple[str, str], started: dict) -> dict:
        return {n: started[n] for n in pair if n in started}

    # -- phases --------------------------------------------------------------------------------
    def phase_main(self, tmp: str) -> None:
        """Async flush, every system running: throughput, latency, native TPS, memory, partitions."""
        print(f"== {', '.join(self.names)} (async flush, interleaved rounds)", flush=True)
        started = self.start_all(tmp, "async", self.names)
        try:
            kafka = self.kafka_ready(self.pairs(self.kafka_pair, started))
            if kafka:
                self.kafka_protocol(kafka)
            remoting = self.pairs(self.remoting_pair, started)
            if remoting and self.plan.native:
                self.native(remoting)
            if self.plan.python_client and "gateway" in started:
                self.python_client(started["gateway"].namesrv)
            if self.plan.memory:
                self.memory(started)
            if self.plan.pressure and "gateway" in kafka:
                pressure.rows(self, started["gateway"])  # 5 000 idle + 200 slowloris connections
            if kafka and self.plan.partitions:
                self.partitions(kafka)
        finally:
            for s in started.values():
                s.kill9()  # the data is thrown away: no need to wait for a graceful shutdown

    def phase_durable(self, tmp: str) -> None:
        """Sync flush (fsync before the acknowledgement) on every system, interleaved."""
        print("== durable (sync flush, interleaved rounds)", flush=True)
        started = self.start_all(tmp, "sync", self.names)
        p = self.plan
        try:
            kafka = self.kafka_ready(self.pairs(self.kafka_pair, started))
            if kafka:
                boot = {n: s.bootstrap for n, s in kafka.items()}
                self.rounds.run("durable produce 1 KiB acks=all + fsync (ProducerPerformance)", kafka,
                                lambda n: sc.java_produce(boot[n], 1024, "all", p.durable_records, timeout=120))
                self.rounds.run("durable produce 1 KiB acks=all + fsync at 500 rec/s (ProducerPerformance)", kafka,
                                lambda n: sc.java_produce(boot[n], 1024, "all", int(500 * p.java_seconds),
                                                          timeout=90, rate=500), better="lower")
            remoting = self.pairs(self.remoting_pair, started)
            if remoting:
                self.native_send(remoting, "durable native send 128 B, SYNC_FLUSH (Java RmqBench)")
        finally:
            for s in started.values():
                s.kill9()

    def phase_recovery(self, tmp: str) -> None:
        """One system at a time (restart times are seconds apart, far above the noise): a fresh async
        instance each, so that the stored volume is exactly what the fill wrote."""
        end = self.deadline
        for i, name in enumerate(self.names):
            self.deadline = time.monotonic() + (end - time.monotonic()) / (len(self.names) - i)
            print(f"== {name} (recovery after kill -9)", flush=True)
            s = self.start(name, os.path.join(tmp, f"{name}-recovery"), timed=False)
            if s is None:
                continue
            try:
                kafka_reason = self.kafka_reason(s.bootstrap) if name in self.kafka_pair else None
                self.recovery(name, s, kafka_reason)
            finally:
                s.kill9()
        self.deadline = end

    # -- Kafka protocol ------------------------------------------------------------------------
    def kafka_reason(self, bootstrap: str) -> str | None:
        """None if one record can be produced, else the reason (an unfinished gateway layer)."""
        try:
            r = sc.kafka_client(60, cmd="produce", bootstrap=bootstrap, topic=sc.new_topic("probe"), size=10,
                                acks="all", seconds=5, max_records=1)
        except Unavailable as e:
            return f"Kafka produce not available: {e}"
        return None if r["records"] == 1 else f"Kafka produce not available: {r['errors']}"

    def kafka_ready(self, systems: dict) -> dict:
        """The systems that can take a Kafka produce; the others get every Kafka row n/a."""
        ready = {}
        for name, s in systems.items():
            reason = self.kafka_reason(s.bootstrap)
            if reason:
                self.results.na_all_kafka(name, reason)
            else:
                ready[name] = s
        return ready

    def kafka_protocol(self, systems: dict) -> None:
        p = self.plan
        boot = {n: s.bootstrap for n, s in systems.items()}
        rates = {}
        for size, acks in p.produce_cases:
            self.bound_disk(systems)
            runs = self.rounds.run(f"produce {size} B acks={acks} (librdkafka)", systems,
                                   lambda n: sc.librdkafka_produce(boot[n], size, acks, p.seconds))
            if runs.get("gateway"):
                rates[(size, acks)] = report.median([r["rec/s"] for r in runs["gateway"]])
        if len(systems) == 2 and p.slices:
            self.produce_slices(boot, *p.produce_cases[0])
        for size, acks in p.java_cases:
            self.bound_disk(systems)
            guess = rates.get((size, acks)) or max(rates.values(), default=20_000)
            records = int(min(5_000_000, max(20_000, guess * p.java_seconds * 2)))
            self.rounds.run(f"produce {size} B acks={acks} (ProducerPerformance)", systems,
                            lambda n: sc.java_produce(boot[n], size, acks, records, timeout=p.java_seconds * 8 + 60))
        for size in p.consume_sizes:
            self.consume(systems, size)
        if p.latency_seconds:
            self.bound_disk(systems)
            rate = min(LATENCY_RATE_CAP, round(rates[(100, "1")] / 2, -2)) if rates.get((100, "1")) else 5_000.0
            self.rounds.run(f"end-to-end latency 100 B at {rate:,.0f} rec/s (librdkafka)", systems,
                            lambda n: sc.e2e_latency(boot[n], rate, p.latency_seconds), better="lower")

    def produce_slices(self, boot: dict, size: int, acks: str) -> None:
        """The finest alternation: one client process produces to each system in turn in 0.25 s
        slices, so the two halves of a pair are well under a second apart."""
        scen = f"produce {size} B acks={acks} (librdkafka, one client alternating 0.25 s slices)"
        try:
            if self.over_budget():
                raise Unavailable("time budget exhausted")
            self.rounds.record(scen, "rec/s", sc.librdkafka_produce_slices(boot, size, acks, self.plan.slices))
        except Unavailable as e:
            for name in boot:
                self.results.na(scen, name, str(e))

    def consume(self, systems: dict, size: int) -> None:
        """Every system gets its own pre-filled topic; each round reads it all from the start."""
        p = self.plan
        clients = ["librdkafka"] + (["ConsumerPerformance"] if p.consume_java else [])
        self.bound_disk(systems)
        topics, filled = {}, {}
        for name, s in systems.items():
            try:
                topics[name] = sc.prefill(s.bootstrap, p.consume_records, size)
                filled[name] = s
            except Unavailable as e:
                for client in clients:
                    self.results.na(f"consume {size} B (pre-filled, {client})", name, f"pre-fill: {e}")
        if not filled:
            return
        boot = {n: s.bootstrap for n, s in filled.items()}
        self.rounds.run(f"consume {size} B (pre-filled, librdkafka)", filled,
                        lambda n: sc.librdkafka_consume(boot[n], topics[n], p.consume_records))
        if p.consume_java:
            self.rounds.run(f"consume {size} B (pre-filled, ConsumerPerformance)", filled,
                            lambda n: sc.java_consume(boot[n], topics[n], p.consume_records))

    def partitions(self, systems: dict) -> None:
        for n_parts in self.plan.partitions:
            self.bound_disk(systems)
            scen = f"produce 100 B over {n_parts} partitions (librdkafka)"
            spreads = {}
            for name, s in systems.items():
                if self.over_budget():
                    self.results.na(scen, name, "time budget exhausted")
                    continue
                try:
                    spreads[name], created = sc.create_partitions(s.bootstrap, n_parts,
                                                                  timeout=max(10.0, self.remaining() - 20))
                except Unavailable as e:
                    self.results.na(scen, name, f"create topics: {e}")
                    continue
                self.results.add(f"create {n_parts} partitions (topics of ≤100)", "s", name, created, "lower")
            ready = {n: s for n, s in systems.items() if n in spreads}
            if ready:
                self.rounds.run(scen, ready, lambda n: sc.partition_produce(
                    systems[n].bootstrap, spreads[n], self.plan.seconds))
            if ready and self.plan.partition_reads:
                self.rounds.run(f"Metadata of every topic ({n_parts} partitions, librdkafka)", ready,
                                lambda n: sc.partition_metadata(systems[n].bootstrap, n_parts), better="lower")
                self.rounds.run(f"fetch 100 B from {n_parts} partitions, each read to its end (librdkafka)", ready,
                                lambda n: sc.partition_fetch(systems[n].bootstrap, spreads[n]))

    # -- RocketMQ remoting ---------------------------------------------------------------------
    def native_send(self, systems: dict, scenario: str) -> dict[str, tuple[str, int]]:
        """RmqBench send rounds, a topic per system; returns (topic, messages sent) per system. Each
        run is a new JVM: the warm-up run is long (broker JIT), each counted run has a short warm-up."""
        p = self.plan
        self.bound_disk(systems)
        topics = {n: sc.new_topic("n") for n in systems}
        sent = {n: 0 for n in systems}

        def send(name: str, warmup: float) -> dict:
            r = sc.rmq_produce(systems[name].namesrv, topics[name], p.native_seconds, warmup=warmup)
            sent[name] += r.pop("sent")
            return r

        self.rounds.run(scenario, systems, lambda n: send(n, p.native_round_warmup),
                        warm_fn=lambda n: send(n, p.native_warmup))
        return {n: (topics[n], sent[n]) for n in systems}

    def native(self, systems: dict) -> None:
        sent = self.native_send(systems, "native send 128 B, 16 threads (Java RmqBench)")
        scen = "native consume 128 B (Java push consumer)"
        readable = {n: s for n, s in systems.items() if sent[n][1]}
        for name in systems:
            if name not in readable:
                self.results.na(scen, name, "nothing was sent")
        if readable:
            self.rounds.run(scen, readable, lambda n: sc.rmq_consume_reps(
                systems[n].namesrv, sent[n][0], sent[n][1], 1)[0])

    def python_client(self, namesrv: str) -> None:
        """The project's own client against the gateway only: nothing to interleave with."""
        send_scen = "native send 128 B (Python client/, 16 tasks)"
        read_scen = "native consume 128 B (Python client/, lite pull)"
        for scen in (send_scen, read_scen):
            self.results.na(scen, "rocketmq", "gateway only (the project's own client)")
        reads = []

        def python_client_runs(reps: int) -> list[dict]:
            sends, consumed = sc.python_native_reps(namesrv, self.plan.native_seconds, reps)
            reads.extend(consumed)
            return sends

        self.measure_batch(send_scen, "gateway", python_client_runs)
        if reads:  # measured with the sends: recorded whatever the time budget says now
            self.measure_batch(read_scen, "gateway", lambda reps: sc.python_consume_tps(reads), check_budget=False)
        else:
            self.results.na(read_scen, "gateway", "the send windows did not finish")

    # -- process-level -------------------------------------------------------------------------
    def memory(self, started: dict) -> None:
        """Memory, and the CPU each system burns while idle (what it takes from the others' rounds)."""
        cpu0 = {name: s.cpu_sample() for name, s in started.items()}
        t0 = time.monotonic()
        time.sleep(2.0)
        idle = time.monotonic() - t0
        for name, s in started.items():
            self.results.add("idle after the rounds (2 s)", "CPU % of a core", name,
                             100 * cpu_used(cpu0[name], s.cpu_sample()) / idle, "lower")
            self.results.add("private memory (async run)", "peak MiB", name, s.peak_memory / 2**20, "lower")
            self.results.add("private memory (async run)", "steady MiB", name, s.memory() / 2**20, "lower")

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
            self.measure_batch(scen, name, lambda reps: [{"s": sc.timed_restart(s, probe)} for _ in range(3)])

    def probe_kafka(self, bootstrap: str, topic: str) -> dict:
        r = sc.kafka_client(60, cmd="produce", bootstrap=bootstrap, topic=topic, size=10, acks="all",
                            seconds=5, max_records=1)
        if r["records"] != 1:
            raise Unavailable(str(r["errors"]))
        return r


def keep_phases(ap: argparse.ArgumentParser, plan: Plan, names: list[str]) -> None:
    """Run only these phases of the plan, each with the same share of time as in the whole plan."""
    unknown = set(names) - {kind for kind, _ in plan.phases}
    if unknown:
        ap.error(f"--phases: {', '.join(sorted(unknown))} not in the {plan.name} plan's phases")
    kept = [(kind, w) for kind, w in plan.phases if kind in names]
    plan.budget_s *= sum(w for _, w in kept) / sum(w for _, w in plan.phases)
    plan.phases = kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short runs, fewer cases (up to 12 minutes)")
    ap.add_argument("--partitions", action="store_true",
                    help="10 000 partitions: create, Metadata, produce, fetch; gateway vs Kafka (up to 30 minutes)")
    ap.add_argument("--compare-gateway", metavar="CHECKOUT",
                    help="gateway of this tree vs the gateway of another checkout (started with cwd = it)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds per scenario (default: the plan's, 5)")
    ap.add_argument("--systems", help="comma-separated subset (default: gateway,kafka,rocketmq; gateway,kafka "
                                      "with --partitions)")
    ap.add_argument("--phases", help="comma-separated subset of the full plan's phases (main, durable, recovery); "
                                      "the budget shrinks by the dropped phases' shares")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/performance.md")
    ap.add_argument("--keep", action="store_true", help="keep the temp data dirs")
    ap.add_argument("--render", metavar="JSON", help="only rewrite the docs from a saved bench/results file")
    args = ap.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        results = report.Results.from_json(saved["results"])
        (report.write_compare_section if "other_tree" in saved["meta"] else report.write_docs)(results, saved["meta"])
        return 0
    other = os.path.abspath(args.compare_gateway) if args.compare_gateway else None
    if other and not os.path.isfile(os.path.join(other, "gateway", "__main__.py")):
        ap.error(f"{other} is not a checkout with gateway/__main__.py")
    plan = PLANS["compare" if other else "quick" if args.quick else "partitions" if args.partitions else "full"]
    if args.rounds:
        plan.rounds = args.rounds
    if args.phases:
        keep_phases(ap, plan, args.phases.split(","))
    systems = args.systems or ("gateway,kafka" if args.partitions else "gateway,kafka,rocketmq")
    runner = Runner(plan, systems.split(","), other)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="rocketgate-bench-")
    print(f"bench ({plan.name}, {plan.rounds} rounds) data under {tmp}", flush=True)
    measured = {}
    try:
        measured["before"] = limits.measure(tmp)
        runner.run(tmp)
        measured["after"] = limits.measure(tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.monotonic() - started
    meta = {**report.machine(plan.name, elapsed), "rounds": plan.rounds, "limits": measured}
    if other:
        meta.update(other_tree=other, this_head=report.git_head(ROOT), other_head=report.git_head(other))
    print(runner.results.markdown())
    print("\n".join(report.limits_lines(runner.results, measured)))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    with open(os.path.join(ROOT, "bench", "results", f"{stamp}-{plan.name}.json"), "w") as f:
        json.dump({"meta": meta, "results": runner.results.to_json()}, f, indent=1)
    if not args.no_docs:
        (report.write_compare_section if other else report.write_docs)(runner.results, meta)
    print(f"done in {elapsed:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
