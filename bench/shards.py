"""`python -m bench.shards`: ProducerPerformance (1 KiB, acks=all, 4 partitions) against
`python -m gateway --shards 1` and `--shards 2`, started side by side, in interleaved rounds
(A B, B A, ...); prints each run, the per-round ratio 2/1, its median and spread. Short: it is a
check of the direction, not a figure for docs/performance.md (the machine is shared)."""
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
from bench.scenarios import Unavailable, java_produce
from gateway.process_tree import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(shards: int, base: str) -> tuple[subprocess.Popen, str]:
    kafka = free_port()
    cmd = [sys.executable, "-m", "gateway", "--shards", str(shards), "--data-dir", os.path.join(base, f"s{shards}"),
           "--host", "127.0.0.1", "--kafka-port", str(kafka), "--remoting-port", str(free_port()),
           "--log-level", "WARNING"]
    log = open(os.path.join(base, f"s{shards}.log"), "ab")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return proc, f"127.0.0.1:{kafka}"


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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.shards", description=__doc__)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--records", type=int, default=50_000)
    args = p.parse_args(argv)
    base = tempfile.mkdtemp(prefix="bench-shards-")
    systems = {}
    try:
        for n in (1, 2):
            systems[n] = start(n, base)
        for n, (_, bootstrap) in systems.items():
            wait_brokers(bootstrap, n)
        run = lambda n: java_produce(systems[n][1], 1024, "all", args.records, 120)["rec/s"]  # noqa: E731
        for n in systems:
            run(n)  # warm-up, uncounted
        values = {1: [], 2: []}
        for i in range(args.rounds):
            for n in rounds.order(i, (1, 2)):
                values[n].append(run(n))
                print(f"round {i}: --shards {n}: {values[n][-1]:,.0f} rec/s", flush=True)
        ratios = rounds.per_round_ratios(values[2], values[1])
        print(f"ratio shards 2 / shards 1 per round: {[round(r, 2) for r in ratios]}; "
              f"median {statistics.median(ratios):.2f}, spread {min(ratios):.2f}..{max(ratios):.2f}")
        return 0
    except Unavailable as exc:
        print(f"n/a: {exc}", file=sys.stderr)
        return 1
    finally:
        for proc, _ in systems.values():
            proc.send_signal(signal.SIGTERM)
        for proc, _ in systems.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
