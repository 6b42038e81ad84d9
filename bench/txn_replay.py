"""Start-time cost of a cluster replica's Kafka transaction state (gateway.cluster.txn_layout.replay):
one replicated queue of ~1 million entries (plain batches, transactional batches of 20 producers, a
marker every 10 entries, a third of them aborts), its state derived at start
- `whole`: from the whole log (no snapshot: the code before snapshots, and a torn or stale one);
- `snapshot+tail`: from a snapshot taken `--tail` offsets before the end (the most a snapshot lags
  with the defaults: EVERY_ENTRIES), then the entries after it;
- `snapshot`: from a snapshot at the end (a queue that stopped growing a minute before).
Runs alternate (whole, snapshot+tail, snapshot, then rotated), `--rounds` each; prints each run and
the medians, their spread (min-max) and the ratio of medians; each run's state is checked equal.

    python -m bench.txn_replay [--entries 1000000] [--tail 50000] [--rounds 5] [--dir /tmp/x]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import trio

import store
from bench.rounds import order
from codec.kafka import records
from gateway.cluster.txn_layout import replay
from gateway.cluster.txn_snapshots import Snapshots
from interop.inner_batch import NOT_INDEXED, entry_message, index_info
from interop.txn_visibility import VISIBLE

TOPIC = "bench-txn"
PRODUCERS = 20


def _message(pid: int | None, value: bytes):
    b = records.parse_batches(records.build_batch(
        [(0, b"k", value, [])], producer_id=-1 if pid is None else pid, producer_epoch=0 if pid is not None else -1,
        base_sequence=0 if pid is not None else -1, transactional=pid is not None))[0]
    return entry_message(TOPIC, 0, b, index_info(b), {}, 1000, False)


def _marker(pid: int, commit: bool):
    b = records.parse_batches(records.control_batch(commit, pid, 0, 1000))[0]
    return entry_message(TOPIC, 0, b, NOT_INDEXED, {}, 1000, False)


def build(path: str, entries: int) -> store.Store:
    """A store whose queue TOPIC/0 holds `entries` entries, each appended as a replica derives it."""
    s = store.open(path, store.StoreConfig(commitlog_file_size=256 << 20, index_slots=1000, index_entries=4000))
    value = b"x" * 100
    made = 0
    while made < entries:
        chunk = []
        for _ in range(100):  # blocks of 10 entries: 4 plain, 5 transactional of one producer, its marker
            pid = 1000 + (made // 10) % PRODUCERS
            block = [_message(None, value) for _ in range(4)] + [_message(pid, value) for _ in range(5)]
            block.append(_marker(pid, (made // 10) % 3 != 0))
            chunk += block
            made += len(block)
        for r, m in zip(s.append_many(chunk), chunk):
            VISIBLE.appended(TOPIC, 0, r.queue_offset, m)
    return s


def _state():
    return VISIBLE.queue_state(TOPIC, 0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=1_000_000)
    p.add_argument("--tail", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--dir", default=None)
    a = p.parse_args()
    base = a.dir or tempfile.mkdtemp(prefix="txn-replay-")
    began = time.monotonic()
    s = build(os.path.join(base, "store"), a.entries - a.tail)

    class Quiet:
        offloaded = 0
    tail_snaps = Snapshots(s)
    trio.run(tail_snaps.take_due, Quiet(), 0.0)
    tail_file = open(tail_snaps.path(TOPIC, 0), "rb").read()
    s.close()
    s = build_more(base, a.tail)
    end_snaps = Snapshots(s)
    trio.run(end_snaps.take_due, Quiet(), 0.0)
    end_file = open(end_snaps.path(TOPIC, 0), "rb").read()
    expected = _state()
    print(f"built {s.max_offset(TOPIC, 0)} offsets in {time.monotonic() - began:.1f} s; "
          f"snapshot files {len(tail_file)} / {len(end_file)} bytes")

    def run(name: str) -> float:
        path = end_snaps.path(TOPIC, 0)
        if name == "whole":
            if os.path.exists(path):
                os.unlink(path)
        else:
            with open(path, "wb") as f:
                f.write(tail_file if name == "snapshot+tail" else end_file)
        VISIBLE.reset()
        t = time.perf_counter()
        _queues, replayed = replay(s, Snapshots(s))
        took = time.perf_counter() - t
        assert _state() == expected, name
        print(f"  {name:14s} {took:8.3f} s  ({replayed} entries replayed)", flush=True)
        return took

    names = ("whole", "snapshot+tail", "snapshot")
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(a.rounds):
        for name in order(i, names):
            times[name].append(run(name))
    s.close()
    whole = statistics.median(times["whole"])
    for name in names:
        m = statistics.median(times[name])
        print(f"{name:14s} median {m:8.3f} s  spread {min(times[name]):.3f}-{max(times[name]):.3f} s  "
              f"whole/this {whole / m:8.1f}")
    if not a.dir:
        shutil.rmtree(base, ignore_errors=True)


def build_more(base: str, entries: int) -> store.Store:
    """The store again (a restart), `entries` more appended after the snapshot."""
    s = store.open(os.path.join(base, "store"), store.StoreConfig(commitlog_file_size=256 << 20, index_slots=1000,
                                                                 index_entries=4000))
    value = b"x" * 100
    made = 0
    while made < entries:
        pid = 2000 + made // 10 % PRODUCERS
        chunk = [_message(None, value) for _ in range(4)] + [_message(pid, value) for _ in range(5)]
        chunk.append(_marker(pid, made % 30 != 0))
        for r, m in zip(s.append_many(chunk), chunk):
            VISIBLE.appended(TOPIC, 0, r.queue_offset, m)
        made += len(chunk)
    return s


if __name__ == "__main__":
    main()
