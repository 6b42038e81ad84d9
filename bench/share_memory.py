"""Pop-engine memory for pending (acquired, not acknowledged) records: `make bench-share-memory`.

By default it builds the per-queue state from the ops `PopEngine.acquire` logs (QueueState.apply,
the one mutator) plus `SharePartitions.holders`, and reports the Python heap (tracemalloc) per
pending record, for 1 M pending and for the default window of 10 000. With --through-store it
builds the state the way ShareFetch does (pop ops of 500 records, each held by
a member in `SharePartitions.holders`) through a real PopEngine over a store in a temporary
directory, then reports the Python heap it takes (tracemalloc) per pending record. The backlog
itself is in the store (CommitLog + ConsumeQueue), not in the engine: memory follows the in-flight
window, so the run also measures a second group with the default window (10 000 in flight) over
the same backlog of 1 M.
"""
from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc

from codec.remoting.message import Message
from semantics.pop import PopEngine
from semantics.share_groups import ShareGroups
from semantics.share_partitions import SharePartitions
import store

BATCH = 500  # records per acquire (a ShareFetch's max.poll.records-sized answer)


def _fill(st, topic: str, n: int) -> None:
    """n small records in one queue (appended in chunks, the store's batch path not needed here)."""
    for i in range(n):
        st.append(Message(topic=topic, queue_id=0, body=b"x%d" % i))


def measure(pendings: list[int], backlog: int, workdir: str) -> list[dict]:
    """One store with `backlog` records; per entry of `pendings` a fresh share group holds that many."""
    st = store.open(workdir, store.StoreConfig())
    out = []
    try:
        st.topics.create("bench-share", read_queues=1, write_queues=1, attributes={})
        _fill(st, "bench-share", backlog)
        for i, pending in enumerate(pendings):
            group = f"g{i}"
            engine = PopEngine(st, None, max_window=max(pending, 1))
            shares = SharePartitions(engine, ShareGroups(lambda t: 1))
            shares.groups.configs[group] = {"share.auto.offset.reset": "earliest"}
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            got = 0
            while True:  # until the window is full: acquire returns nothing more
                acquired = shares.acquire(group, f"member-{got % 16}", "bench-share", 0, BATCH)
                if not acquired.deliveries:
                    break
                got += len(acquired.deliveries)
                acquired.deliveries.clear()  # the answer is sent and dropped; the state stays
            gc.collect()
            used = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
            out.append({"pending": got, "backlog": backlog, "bytes": used, "bytes_per_pending": used / max(got, 1)})
    finally:
        st.close()
    return out


def measure_state(pending: int) -> dict:
    """The same state without a store: the engine's QueueState built from the pop ops acquire logs
    (batches of BATCH offsets, one deadline and pop time each) plus the holder of each offset."""
    from semantics.pop_state import QueueState
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    state, holders, members = QueueState(0), {}, [f"member-{i}" for i in range(16)]
    for first in range(0, pending, BATCH):
        offsets = list(range(first, min(first + BATCH, pending)))
        state.apply({"k": "pop", "o": offsets, "s": [], "n": offsets[-1] + 1, "d": 1_800_000_000_000 + first,
                     "p": 1_700_000_000_000 + first})
        for offset in offsets:
            holders[offset] = members[first // BATCH % 16]
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(state.leases) == pending and len(holders) == pending
    return {"pending": pending, "backlog": 0, "bytes": used, "bytes_per_pending": used / max(pending, 1)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pending", type=int, default=1_000_000, help="records held in the large case (its backlog too)")
    ap.add_argument("--window", type=int, default=10_000, help="the engine's default in-flight window")
    ap.add_argument("--through-store", action="store_true",
                    help="acquire through a real PopEngine over a store holding the backlog (slow: 1 M appends)")
    args = ap.parse_args(argv)
    if not args.through_store:
        for r in (measure_state(args.pending), measure_state(args.window)):
            print(f"pending={r['pending']:>9,} engine state={r['bytes'] / 2**20:8.1f} MiB "
                  f"({r['bytes_per_pending']:.0f} B per pending record)", flush=True)
        sys.exit(0)
    with tempfile.TemporaryDirectory(prefix="share-memory-") as d:
        for r in measure([args.pending, args.window], args.pending, d):
            print(f"pending={r['pending']:>9,} backlog={r['backlog']:>9,} engine heap={r['bytes'] / 2**20:8.1f} MiB "
                  f"({r['bytes_per_pending']:.0f} B per pending record)", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
