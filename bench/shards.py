"""`python -m bench.shards`: `python -m gateway --shards 1` and `--shards N` (default 2), started side
by side, in interleaved rounds (A B, B A, ...), on two rows: produce (ProducerPerformance, 1 KiB,
acks=all, 4 partitions) and consume (ConsumerPerformance of a topic pre-filled with as many 1 KiB
records, 4 partitions). Each run reports records/s and the CPU the whole system used meanwhile
(every process of its tree, supervisor, shards and etcd included, from /proc schedstat) as CPU
seconds per million messages; prints each run, and per row and metric the per-round ratio of each
system to `--shards 1`, its median, spread and bench.rounds verdict. `--kafka` adds Apache Kafka
(one KRaft node from bench/jars, its JVM's CPU) as a third system in the same rounds."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench import rounds
from bench.procstat import thread_cpu_ns
from bench.scenarios import Unavailable, java_consume, java_produce, prefill
from gateway.process_tree import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(shards: int, base: str, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    kafka = free_port()
    cmd = [sys.executable, "-m", "gateway", "--shards", str(shards), "--data-dir", os.path.join(base, f"s{shards}"),
           "--host", "127.0.0.1", "--kafka-port", str(kafka), "--remoting-port", str(free_port()),
           "--log-level", "WARNING", *extra]
    log = open(os.path.join(base, f"s{shards}.log"), "ab")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return proc, f"127.0.0.1:{kafka}"


def stop_all(procs: list[subprocess.Popen], kafka, base: str) -> None:
    """Kafka (when started), then every gateway tree (SIGTERM, killed after 30 s); `base` removed."""
    if kafka is not None:
        kafka.stop()
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    shutil.rmtree(base, ignore_errors=True)


def wait_brokers(bootstrap: str, count: int, timeout: float = 60) -> None:
    from confluent_kafka.admin import AdminClient
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=3).brokers) == count:
                return
        except Exception:  # not answering yet
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{bootstrap}: {count} brokers did not show up")


def tree_pids(root: int) -> list[int]:
    """`root` and every live descendant (from /proc/*/stat parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def tree_cpu(root: int) -> dict[tuple[int, int], int]:
    return {(pid, tid): ns for pid in tree_pids(root) for tid, ns in thread_cpu_ns(pid).items()}


def measured(cpu_sample, records: int, run) -> dict:
    """`run()`'s metrics plus the CPU seconds per million messages the system used meanwhile."""
    before = cpu_sample()
    metrics = run()
    after = cpu_sample()
    used = sum(ns - before.get(key, 0) for key, ns in after.items()) / 1e9
    return {**metrics, "CPU s/M msgs": used / records * 1e6}


def report(row: str, values: dict[str, list[dict]], base: str) -> None:
    """Each system against `base`, per metric: medians, per-round ratios and the verdict."""
    for name in values:
        if name == base:
            continue
        for metric, better in (("rec/s", "higher"), ("CPU s/M msgs", "lower")):
            a, b = [v[metric] for v in values[name]], [v[metric] for v in values[base]]
            verdict = rounds.compare(rounds.per_round_ratios(a, b), better, name, base)
            print(f"{row} {metric}: {base} median {statistics.median(b):,.1f}, {name} median "
                  f"{statistics.median(a):,.1f}; ratio per round {[round(r, 2) for r in verdict.ratios]}, "
                  f"median {verdict.median:.2f}, spread {verdict.low:.2f}..{verdict.high:.2f}: {verdict.verdict}",
                  flush=True)


def run_systems(counts: tuple[int, ...], with_kafka: bool, body, extra: tuple[str, ...] = ()) -> int:
    """Start `--shards n` for each n of `counts` (and Kafka), side by side; `body(systems)` with
    systems = name ("shards n", "kafka") -> (bootstrap, CPU sample of every process of the system)
    (`extra`: arguments every gateway gets);
    stop everything. 0, or 1 with a line when a run was unavailable."""
    base = tempfile.mkdtemp(prefix="bench-shards-")
    procs, kafka, systems = [], None, {}
    try:
        for n in counts:
            proc, bootstrap = start(n, base, extra)
            procs.append(proc)
            systems[f"shards {n}"] = (bootstrap, lambda pid=proc.pid: tree_cpu(pid))
        for n, (bootstrap, _) in zip(counts, systems.values()):
            wait_brokers(bootstrap, n)
        if with_kafka:
            from bench.brokers import KafkaBroker
            kafka = KafkaBroker(os.path.join(base, "kafka")).start()
            systems["kafka"] = (kafka.bootstrap, kafka.cpu_sample)
        body(systems)
        return 0
    except Unavailable as exc:
        print(f"n/a: {exc}", file=sys.stderr)
        return 1
    finally:
        stop_all(procs, kafka, base)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.shards", description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--records", type=int, default=50_000)
    p.add_argument("--shards", type=int, default=2, help="N, compared with 1")
    p.add_argument("--rows", default="produce,consume")
    p.add_argument("--kafka", action="store_true", help="Apache Kafka (bench/jars) as a third system")
    args = p.parse_args(argv)

    def body(systems: dict) -> None:
        names = tuple(systems)
        rows = {"produce": lambda name: java_produce(systems[name][0], 1024, "all", args.records, 120)}
        if "consume" in args.rows:
            topics = {name: prefill(systems[name][0], args.records, 1024) for name in names}
            rows["consume"] = lambda name: java_consume(systems[name][0], topics[name], args.records)
        for row, fn in rows.items():
            if row not in args.rows:
                continue
            for name in names:
                fn(name)  # warm-up, uncounted
            values = {name: [] for name in names}
            for i in range(args.rounds):
                for name in rounds.order(i, names):
                    values[name].append(measured(systems[name][1], args.records, lambda: fn(name)))
                    print(f"{row} round {i}: {name}: {values[name][-1]['rec/s']:,.0f} rec/s, "
                          f"{values[name][-1]['CPU s/M msgs']:.1f} CPU s per million", flush=True)
            report(row, values, "shards 1")
    return run_systems((1, args.shards), args.kafka, body)


if __name__ == "__main__":
    sys.exit(main())
