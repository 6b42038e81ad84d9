"""Pop-engine memory for pending (acquired, not acknowledged) records: `make bench-share-memory`.

Builds the engine's per-queue state the way ShareFetch does (pop ops of 500 records, each held by
a member in `SharePartitions.holders`) through a real PopEngine over a store in a temporary
directory, then reports the Python heap it takes (tracemalloc) per pending record. The backlog
itself is in the store (CommitLog + ConsumeQueue), not in the engine: memory follows the in-flight
window, so the run also measures the default window (10 000 in flight) with a backlog of 1 M.
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


def measure(pending: int, backlog: int, workdir: str) -> dict:
    st = store.open(workdir, store.StoreConfig())
    try:
        st.topics.create("bench-share", read_queues=1, write_queues=1, attributes={})
        _fill(st, "bench-share", backlog)
        engine = PopEngine(st, None, max_window=max(pending, 1))
        shares = SharePartitions(engine, ShareGroups(lambda t: 1))
        shares.groups.configs["g"] = {"share.auto.offset.reset": "earliest"}
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        got = 0
        while got < pending:
            acquired = shares.acquire("g", f"member-{got % 16}", "bench-share", 0, min(BATCH, pending - got))
            if not acquired.deliveries:
                break
            got += len(acquired.deliveries)
            acquired.deliveries.clear()  # the answer is sent and dropped; the state stays
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        state = engine.state("g", "bench-share", 0)
        return {"pending": got, "backlog": backlog, "leases": len(state.leases), "bytes": used,
                "bytes_per_pending": used / max(got, 1)}
    finally:
        st.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pending", type=int, default=1_000_000)
    ap.add_argument("--window", type=int, default=10_000)
    args = ap.parse_args(argv)
    for pending, backlog in ((args.pending, args.pending), (args.window, args.pending)):
        with tempfile.TemporaryDirectory(prefix="share-memory-") as d:
            r = measure(pending, backlog, d)
        print(f"pending={r['pending']:>9,} backlog={r['backlog']:>9,} engine heap={r['bytes'] / 2**20:8.1f} MiB "
              f"({r['bytes_per_pending']:.0f} B per pending record)", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
