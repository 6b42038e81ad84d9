"""What a bench run measures and how long it may take: the full plan (`make bench`), the quick plan
(`--quick`), the 10 000-partition plan (`--partitions`: metadata, produce and fetch over 10 000 partitions,
gateway vs Kafka) and the gateway-vs-gateway plan (`--compare-gateway`)."""
from __future__ import annotations

import dataclasses


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
    latency_seconds: float              # 0: no latency rows
    partitions: list
    native_seconds: float
    native_warmup: float                # the uncounted warm-up run per system (broker and client JIT)
    durable_records: int
    recovery_bytes: list
    phases: list                        # (kind, share of the budget), in run order
    rounds: int = 5                     # interleaved rounds per scenario, after one warm-up run each
    native_round_warmup: float = 2.0    # each counted RmqBench run is a new JVM: its own JIT warm-up
    python_client: bool = True          # the gateway-only rows of the project's own client
    memory: bool = True
    slices: int = 20                    # slice pairs of 0.25 s of one client alternating (0: no such row)
    pressure: bool = False              # produce/consume with 5 000 idle + 200 slowloris connections (bench.pressure)
    native: bool = True                 # the remoting send/consume rows
    partition_reads: bool = False       # after each partitions produce row: full Metadata and a fetch of every partition


ALL_CASES = [(100, "1"), (100, "all"), (1024, "1"), (1024, "all")]
# Share of the time budget per phase; a phase that overruns its share marks its remaining rows n/a.
FULL_PHASES = [("main", 0.62), ("durable", 0.13), ("recovery", 0.25)]
PLANS = {
    "quick": Plan("quick", 720, seconds=0.7, produce_cases=[(100, "1"), (1024, "all")], java_cases=[],
                  java_seconds=1.5, consume_records=100_000, consume_java=False, consume_sizes=[100, 1024],
                  latency_seconds=1.0, partitions=[1, 100], native_seconds=1.0, native_warmup=6.0,
                  durable_records=5_000, recovery_bytes=[], phases=[("main", 1.0)]),
    "full": Plan("full", 2400, seconds=2.0, produce_cases=ALL_CASES, java_cases=ALL_CASES, java_seconds=2.0,
                 consume_records=500_000, consume_java=True, consume_sizes=[100, 1024], latency_seconds=3.0,
                 partitions=[1, 100, 1000, 10000], native_seconds=3.0, native_warmup=8.0,
                 durable_records=20_000, recovery_bytes=[1 << 30, 5 << 30], phases=FULL_PHASES, pressure=True),
    # gateway vs Kafka with 10 000 partitions (100 topics of 100): create, Metadata, produce, fetch
    "partitions": Plan("partitions", 1800, seconds=3.0, produce_cases=[], java_cases=[], java_seconds=0,
                       consume_records=0, consume_java=False, consume_sizes=[], latency_seconds=0,
                       partitions=[10000], native_seconds=0, native_warmup=0, durable_records=0, recovery_bytes=[],
                       phases=[("main", 1.0)], python_client=False, slices=0, native=False, partition_reads=True),
    # gateway(this tree) vs gateway(other tree), for refactors: the main Kafka-protocol and remoting rows
    "compare": Plan("compare", 420, seconds=0.7, produce_cases=[(100, "1"), (1024, "1")], java_cases=[],
                    java_seconds=1.5, consume_records=100_000, consume_java=False, consume_sizes=[100, 1024],
                    latency_seconds=0, partitions=[], native_seconds=1.0, native_warmup=6.0,
                    durable_records=0, recovery_bytes=[], phases=[("main", 1.0)], python_client=False),
}
