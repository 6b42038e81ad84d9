"""The fixed text of docs/performance.md that bench.report writes around the measured tables: the
introduction, the method and how to run it (METHOD and USAGE are format strings: rounds, versions)."""

INTRO = """# Performance

Side-by-side measurements of the gateway (`python -m gateway`) against Apache Kafka and Apache
RocketMQ started from their Maven Central jars on the same machine, with the same clients. Produced by
`python -m bench` (`make bench`; `--quick` for the short run). These are shared 2-core machines: other
jobs load the CPUs at random, so the systems are measured in alternating rounds (method below) and a
comparison is the median of the per-round ratios with its spread and a verdict that says whether the
rounds support a conclusion. Only the ratios mean anything; they hold for this machine and this run.
"""

METHOD = """## How it is measured

- **Interleaved rounds.** All systems of a phase run at the same time (about 5 GiB of the 24: Kafka
  and RocketMQ have 2 GiB heaps; the "idle" row shows the CPU they take from the others meanwhile;
  restarting them between rounds would cost 5–30 s each). For each scenario every system first does
  one uncounted warm-up run, then {rounds} rounds follow, each running the scenario once on the gateway
  and once on the reference, back to back, in the order A B, B A, A B … (so neither always runs right
  after the other's load). A failed run is retried once; a round counts only when both finished it.
  Load from other jobs that lasts seconds hits both halves of a round alike, so the per-round ratio
  gateway / reference is steadier than either number; the last columns give the **median of the
  per-round ratios**, their min–max and the confidence interval of the median. Cells with one
  system give its median (min–max) over the rounds. Rows with n=1 (start-up, memory, create, idle)
  are one value per system and their ratio is a plain quotient, without a verdict.
- **Slices.** One row (the first librdkafka produce case, "one client alternating 0.25 s slices")
  alternates much faster: a single client process holds a producer per system and produces to
  each in turn for 0.25 s (then flushes), A B, B A …, 20 pairs; each slice pair is a round. The
  halves of a pair are well under a second apart and no process start lies between them, so this
  row resists noise best (gateway vs the same gateway, load average 4–5: 96 % CI 0.77–1.11 from
  20 slice pairs, against 0.46–2.00 from 5 process-per-run rounds of the same produce).
- **Verdict** (`bench/rounds.py`). The median of the per-round ratios comes with a distribution-free
  confidence interval (order statistics, as in the sign test: nothing assumed about the noise). It
  is at least 90 %: with 5 rounds it is min–max (94 %), with 9 rounds 2nd lowest–2nd highest (96 %),
  so more rounds (`--rounds`) narrow it. From the interval [lo, hi]: *too few rounds* if n < 5;
  *gateway better* / *reference better* if lo > 1.05 or hi < 1/1.05 (by the metric's direction:
  higher rec/s, TPS, MB/s; lower ms, s, MiB, CPU s/GB); *same* if the whole interval lies within
  ±5 % of 1.0; otherwise *too noisy* if hi/lo > 1.5 (the rounds disagree; more rounds or a quieter
  machine needed), else *inconclusive*. Only *better* and *same* are conclusions.
- **Broker CPU s/GB**: CPU seconds of the broker's processes over one run (thread by thread from
  `/proc/PID/task/TID/schedstat`, in ns: `/proc/PID/stat` counts 10 ms ticks, too coarse for a
  0.05 s consume; RocketMQ: name server + broker), divided by the payload GB the run moved (records ×
  record size; RmqBench sends: the counted window's sends plus the warm-up's at the window's rate, as
  its JVM reports only the window's). It includes the client's connect and topic set-up, the same
  for all. Its per-round ratios spread less than throughput's when other jobs load the machine, but
  not by enough to be immune: contention changes batch sizes and caches too.
- **Idle CPU**: each system's CPU over 2 s with no load after the rounds, in % of one core: what an
  idle broker takes from the rounds of the others.
- **Physical limits** are measured in the same run, before and after the systems: disk write
  bandwidth (sequential 1 MiB `os.write`s of 256 MiB, then one `fdatasync`, in the run's data dir)
  and loopback bandwidth (one TCP connection on 127.0.0.1, 1 MiB `sendall`s for 1 s). Each system's
  best produce MB/s is given as a share of both, its best consume MB/s as a share of loopback
  (Kafka-protocol rows and, for RocketMQ, the remoting rows: TPS × 128 B; durable rows excluded).
- **Gateway vs gateway** (`python -m bench --compare-gateway OTHER_CHECKOUT`): the same rounds,
  this tree's gateway against another checkout's (started with cwd = that checkout, which precedes
  the editable install on `sys.path`), on produce 100 B / 1 KiB acks=1 and consume 100 B / 1 KiB
  (librdkafka) and native send / consume (RmqBench). It prints its table, saves
  `bench/results/*-compare.json` and rewrites only the "Gateway vs gateway" section of this page.
  Run on two identical trees it shows the noise floor of the method.
- **Systems.** Kafka: one KRaft node (broker + controller), default durability: an acknowledged write
  is in the page cache, not fsynced (`log.flush.interval.messages` unbounded); the durable rows set
  `log.flush.interval.messages=1`. RocketMQ: name server + one master broker, `ASYNC_FLUSH`
  (`SYNC_FLUSH` for the durable rows). The gateway: `--flush async` / `--flush sync`. JVM heaps are
  2 GiB per broker (512 MiB for the name server). Data lives in a temp dir; everything is on loopback.
- **Clients.** librdkafka (confluent-kafka) in a separate process, batching on (`linger.ms=5`, no
  compression); the Kafka perf tools `org.apache.kafka.tools.ProducerPerformance` /
  `ConsumerPerformance` from the Kafka jars. RocketMQ's `rocketmq-example` Benchmark classes are not on
  Maven Central for 5.x, so native TPS uses `bench/java/.../RmqBench.java` (same method: 16 threads of
  synchronous sends of 128 B bodies for a fixed time, after an uncounted warm-up that lets the JIT of
  client and broker settle; a push consumer with a new group reading the topic back). Each round is
  a new RmqBench JVM with a 2 s uncounted warm-up of its own (the first, uncounted run warms the
  broker up for longer); JVM start-up is never measured. The Python client rows (gateway only) run
  their repetitions in one process. The Python rows use the project's own client
  (`client/`, gateway only): 16 concurrent sends on one trio loop, then a lite pull consumer of a
  new group reading everything sent back from the first offset.
- **Latency** is end to end (send → receive in a consumer) at a fixed rate: half the gateway's median
  librdkafka 100 B acks=1 rate (capped at 20 000 rec/s, the Python client's limit).
- **Partitions** rows (Kafka protocol) spread 100 B records round-robin over N partitions in topics of
  ≤ 100 each; the topics are created once per system (the "create" row, one value), then written in
  rounds.
- **Start-up** is one value per system: from spawning the process(es) to passing the health check
  (Kafka: metadata answers; RocketMQ: the broker is registered in the name server, which it does
  about 10 s after it boots; the gateway: both ports accept).
- **Recovery** is the time from restarting a `kill -9`ed system until it passes its start health check
  (as for start-up), with the given volume on disk; after each restart one acks=all write must succeed
  (not timed: its client's start-up would be counted). Recovery runs one system at a time, three
  restarts each: restart times differ by seconds, far above the noise.
- **Memory** is private anonymous resident memory (`RssAnon` from `/proc/PID/status`: heap, stacks,
  malloc — not page cache of mapped store files), summed over the system's processes: the peak over
  the async run and the value after it idled 2 s.
"""

USAGE = """## Running it

- `make bench` (full plan, up to 40 minutes) or `.venv/bin/python -m bench --quick` (up to 12 minutes:
  no Java perf-tool rows, no durable or recovery rows). `--systems gateway,kafka` runs a subset;
  `--rounds N` changes the number of rounds (5 by default; fewer give "too few rounds");
  `--phases main,durable` runs only those phases of the full plan (each keeps its share of the
  budget, so the run is shorter; the page then has no rows of the dropped phases);
  `--no-docs` leaves this page alone; raw figures go to `bench/results/*.json`.
- `make bench BENCH_ARGS=--partitions` (up to 30 minutes): 10 000 partitions in 100
  topics of 100 — creation time, a Metadata request for every topic, produce round-robin over every
  partition, and a fetch of every partition from its start to its end, gateway vs Kafka, interleaved.
- `.venv/bin/python -m bench --compare-gateway /path/to/other/checkout` (up to 7 minutes) compares
  two builds of the gateway for a refactor: ratio this tree / other tree, with the same verdicts.
- The reference brokers' jars come from Maven Central through `bench/java/pom.xml` (`make bench-jars`,
  part of `make setup`) into `bench/jars/` (not committed). Kafka {kafka} and RocketMQ {rocketmq} are
  pinned there.
- Other tests and benchmarks get the same systems from `bench.brokers`:
  `with KafkaBroker(tmpdir) as k: k.bootstrap`, `with RocketMQBroker(tmpdir) as r: r.namesrv`,
  `with Gateway(tmpdir, flush="async") as g: g.bootstrap, g.namesrv` (also `kill9()`, `start()`,
  `memory()`, `peak_memory`). A system that fails to start raises `BrokerError` with its log tail.
- Rows that a system cannot run (an unfinished gateway feature, a client error, the time budget) say
  `n/a (reason)` instead of stopping the run.
"""

STORE_PLACEHOLDER = """## Store

(Figures of the store benchmark, `python -m bench.store`, go here.)
"""

SEQUENTIAL_NOTE = ("*Measured before the interleaved rounds: one system after the other, the last column "
                   "is the ratio of the medians and there is no verdict; rerun this plan for the current "
                   "method.*")
