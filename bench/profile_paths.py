"""`python -m bench.profile_paths`: where the gateway's CPU goes per message on the four rows of issue 25
that were CPU-bound (native push consume, POP consume, gRPC send, ProducerPerformance 1 KiB acks=all),
and what a change does to that CPU.

    python -m bench.profile_paths --trees BEFORE,AFTER [--rounds R] [--loads push,pop,grpc,produce]
                                  [--profile DIR] [--messages N]

One gateway per checkout (`--trees`, default this one) runs the whole time; for each load every round
runs it once on each gateway, in rotating order (bench.rounds.order), and reads the gateway's CPU
(every thread, /proc) around the run: CPU µs per message, and the per-round ratio of the last tree to
the first. `--profile DIR` attaches py-spy to each gateway for one more run of each load (not counted)
and writes DIR/<load>-<tree>.txt: the top entries by own time (samples whose innermost frame is that
function), from `py-spy record --nonblocking --gil --function` (sampling: the gateway runs at full speed; only
the thread holding the GIL is sampled, so waits in epoll or in a socket call are not counted).

The loads (each on a new topic, so no run reads another's backlog):
- push: RmqBench sends 128 B messages for N (15) s (not measured), then one Java push consumer (new group)
  reads them all (measured);
- pop: compat.PopBench sends N small messages in batches, then a Java push consumer in POP mode pops
  and acks each (measured together; the pops dominate);
- grpc: compat.GrpcBench (Java gRPC SDK) sends N 1 KiB messages from 8 threads, then receives and
  acks them (measured together);
- produce: ProducerPerformance, N 1 KiB records, acks=all, 4 partitions.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import uuid

from bench import rounds
from bench import scenarios as sc
from bench.brokers import ROOT, Gateway, free_port
from bench.procstat import cpu_used

PYSPY = os.path.join(os.path.dirname(sys.executable), "py-spy")
TOP = 15


@contextlib.contextmanager
def _measured(g: Gateway, raw: str | None):
    """The gateway's CPU seconds (every thread) over the block, in box["cpu"]; with `raw`, py-spy
    samples the block into that file."""
    prof = Profiler(g.pids()[0], raw) if raw else None
    box: dict = {}
    before = g.cpu_sample()
    try:
        yield box
    finally:
        box["cpu"] = cpu_used(before, g.cpu_sample())
        if prof:
            prof.stop()


def _push(g: Gateway, n: int, work: str, raw: str | None) -> tuple[int, float]:
    topic = sc.new_topic("prof")
    sent = sc.rmq_produce(g.namesrv, topic, float(n))["sent"]
    with _measured(g, raw) as m:
        sc.rmq_consume_reps(g.namesrv, topic, sent, 1)
    return sent, m["cpu"]


def _pop(g: Gateway, n: int, work: str, raw: str | None) -> tuple[int, float]:
    from bench.share_bench import pop_classpath, pop_run
    log_dir = os.path.join(work, "pop-logs")
    os.makedirs(log_dir, exist_ok=True)
    cp = pop_classpath(work)
    with _measured(g, raw) as m:
        pop_run(cp, g.namesrv, n, log_dir)
    return n, m["cpu"]


def _grpc(g: Gateway, n: int, work: str, raw: str | None) -> tuple[int, float]:
    from bench.grpc_bench import run_bench
    args = argparse.Namespace(messages=n, body_bytes=1024, threads=8)
    with _measured(g, raw) as m:
        run_bench(f"127.0.0.1:{g.grpc_port}", f"prof-{uuid.uuid4().hex[:8]}", args, os.path.join(work, "grpc-logs"))
    return n, m["cpu"]


def _produce(g: Gateway, n: int, work: str, raw: str | None) -> tuple[int, float]:
    with _measured(g, raw) as m:  # on a new topic of 4 partitions, created first
        sc.java_produce_summary(g.bootstrap, 1024, "all", n, timeout=300)
    return n, m["cpu"]


# load: (function, default message count; for push the seconds of sending)
LOADS = {"push": (_push, 15), "pop": (_pop, 10_000), "grpc": (_grpc, 3000), "produce": (_produce, 200_000)}


class Profiler:
    """py-spy attached to one process until stop(); raw collapsed stacks in `out`."""

    def __init__(self, pid: int, out: str):
        self.out = out
        self.proc = subprocess.Popen([PYSPY, "record", "-p", str(pid), "-r", "200", "--nonblocking", "--gil", "--function",
                                      "-f", "raw", "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def own_time(raw_path: str, top: int = TOP) -> tuple[int, list[tuple[str, int]]]:
    """(samples, [(function, samples whose innermost frame it is)]) from py-spy's raw output."""
    counts: collections.Counter = collections.Counter()
    total = 0
    with open(raw_path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            leaf = stack.rsplit(";", 1)[-1]
            counts[_short(leaf)] += int(n)
            total += int(n)
    return total, counts.most_common(top)


def _short(frame: str) -> str:
    """'name (path/to/file.py:12)' -> 'name (to/file.py:12)': the repo-relative or library tail."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", ROOT + "/", "lib/python3"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    return f"{name} ({where})"


def table(total: int, top: list[tuple[str, int]]) -> str:
    lines = ["| own samples | % | function (file:first line) |", "|---:|---:|---|"]
    lines += [f"| {n} | {100 * n / total:.1f} | `{name}` |" for name, n in top]
    return "\n".join(lines)


def _spread(values: list[float], digits: int = 1) -> str:
    """median (min–max), or n/a."""
    if not values:
        return "n/a"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def _once_more(fn, *args) -> tuple[int, float] | None:
    """A run, tried a second time if it fails (a client that timed out on this loaded machine);
    None when both tries failed (the run is left out, and said so)."""
    for attempt in ("retrying once", "left out"):
        try:
            return fn(*args)
        except (sc.Unavailable, RuntimeError) as exc:
            print(f"{attempt}: {str(exc)[-300:]}", flush=True)
    return None


class _GrpcGateway(Gateway):
    def __init__(self, workdir: str, tree: str):
        self.grpc_port = free_port()
        super().__init__(workdir, extra_args=["--grpc-port", str(self.grpc_port)], tree=tree)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default=ROOT)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", default=",".join(LOADS))
    ap.add_argument("--messages", type=int, default=0,
                    help="per run, one load at a time (default: the load's own; push: seconds of sending)")
    ap.add_argument("--profile", help="directory for the py-spy top entries (one extra run per load and tree)")
    args = ap.parse_args(argv)
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    names = [os.path.basename(t.rstrip("/")) or t for t in trees]
    work = tempfile.mkdtemp(prefix="profile-paths-")
    gateways = {name: _GrpcGateway(os.path.join(work, name), tree) for name, tree in zip(names, trees)}
    try:
        for g in gateways.values():
            g.start()
        for load in args.loads.split(","):
            fn, default_n = LOADS[load]
            n = args.messages or default_n
            for name, g in gateways.items():  # uncounted warm-up (JIT of the clients, the store's first files)
                _once_more(fn, g, n, work, None)
            if args.profile:
                os.makedirs(args.profile, exist_ok=True)
                for name, g in gateways.items():
                    raw = os.path.join(work, f"{load}-{name}.raw")
                    done = _once_more(fn, g, n, work, raw)
                    if done is None or not os.path.exists(raw):
                        continue
                    count = done[0]
                    total, top = own_time(raw)
                    with open(os.path.join(args.profile, f"{load}-{name}.txt"), "w") as f:
                        f.write(f"# {load}, gateway of {name}: {count} messages, {total} samples "
                                f"(py-spy --gil, 200 Hz, own time)\n\n")
                        f.write(table(total, top) + "\n")
                    print(f"profile {load} {name}: {count} messages, {total} samples", flush=True)
            if not args.rounds:
                continue
            per_msg: dict[str, dict[int, float]] = {name: {} for name in gateways}  # round -> CPU µs/msg
            for i in range(args.rounds):
                for name in rounds.order(i, tuple(gateways)):
                    done = _once_more(fn, gateways[name], n, work, None)
                    if done is None:
                        continue
                    count, cpu = done
                    per_msg[name][i] = cpu * 1e6 / count
                    print(f"{load} round {i + 1} {name}: {cpu * 1e6 / count:.1f} CPU µs/msg ({count} messages, "
                          f"load {os.getloadavg()[0]:.1f})", flush=True)
            summary = {name: _spread(list(v.values())) for name, v in per_msg.items()}
            line = f"{load}: CPU µs/msg median (min–max): " + ", ".join(f"{k} {v}" for k, v in summary.items())
            if len(names) > 1:  # the rounds both finished
                first, last = per_msg[names[0]], per_msg[names[-1]]
                ratios = [last[i] / first[i] for i in first if i in last]
                line += f"; {names[-1]}/{names[0]} per round {_spread(ratios, 2)}"
            print(line, flush=True)
    finally:
        for g in gateways.values():
            g.stop()
        shutil.rmtree(work, ignore_errors=True)  # the stores (GBs); the profiles are in --profile


if __name__ == "__main__":
    main()
