"""Store benchmark: append throughput (100 B and 1 KiB bodies, async and sync flush), read throughput
through the ConsumeQueue, and the raw sequential-write bandwidth of the same disk from Python in the
same run, with the ratio. Also the process's private memory while appending (`--big-gb 5`).

    python -m bench.store [--quick] [--big-gb 5] [--dir DIR]

Throughput counts CommitLog bytes (entries as stored) and includes the final flush, as the raw
write figure includes its final fdatasync. Message objects are built before timing: this measures
the store, not the protocol layers.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time

import store
from store import Message, StoreConfig

MiB = 1 << 20


def private_mb() -> tuple[float, float]:
    """(private memory = Private_Clean + Private_Dirty, anonymous RSS) of this process in MB."""
    priv = 0
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                priv += int(line.split()[1])
    anon = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1])
    return priv / 1024, anon / 1024


def raw_write(directory: str, total: int, chunk: int = MiB) -> float:
    """Sequential os.write of `total` bytes in 1 MiB chunks plus one final fdatasync: bytes/s."""
    path = os.path.join(directory, "raw.bin")
    buf = os.urandom(chunk)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t = time.perf_counter()
    done = 0
    while done < total:
        done += os.write(fd, buf)
    os.fdatasync(fd)
    dt = time.perf_counter() - t
    os.close(fd)
    os.unlink(path)
    return done / dt


class AsyncFlusher:
    """What the gateway does in async mode: flush every 500 ms on another thread."""

    def __init__(self, s) -> None:
        self.s = s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            self.s.flush()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def append_case(directory: str, body_size: int, total_bytes: int, flush: str, batch: int,
                sample=None, inner: int = 1) -> dict:
    """Append ~total_bytes of bodies; `batch` messages per append_many call (1 = append)."""
    path = tempfile.mkdtemp(dir=directory)
    s = store.open(path, StoreConfig(flush=flush))
    body = os.urandom(body_size)
    pool = [Message("bench", q % 4, body, born_timestamp=1, batch_count=inner) for q in range(1024)]
    n = max(batch, total_bytes // body_size // batch * batch)
    flusher = AsyncFlusher(s) if flush == "async" else None
    cpu = time.process_time()
    t = time.perf_counter()
    next_sample = 0
    if batch == 1:
        append, flush_now = s.append, s.flush
        for i in range(n):
            append(pool[i & 1023])
            if flusher is None:
                flush_now()
    else:
        batches = [pool[i:i + batch] for i in range(0, 1024 - batch + 1, batch)]
        append_many, nb = s.append_many, len(batches)
        for i in range(n // batch):
            append_many(batches[i % nb])
            if flusher is None:
                s.flush()
            if sample is not None and s.max_physical_offset >= next_sample:
                sample(s.max_physical_offset)
                next_sample += 256 * MiB
    if flusher:
        flusher.close()
    s.flush()
    dt = time.perf_counter() - t
    cpu = time.process_time() - cpu
    written = s.max_physical_offset
    n *= inner
    return {"msgs": n, "secs": dt, "msg_s": n / dt, "bytes_s": written / dt, "cpu_us": cpu / n * 1e6,
            "path": path, "store": s}


def read_case(s, n: int) -> dict:
    cpu = time.process_time()
    t = time.perf_counter()
    got = 0
    size = 0
    for q in range(4):
        off = 0
        hi = s.max_offset("bench", q)
        while off < hi:
            r = s.read("bench", q, off, max_count=256)
            got += len(r.entries)
            size += sum(m.size for _, m in r.entries)
            off = r.next_offset
    dt = time.perf_counter() - t
    assert got == n, (got, n)
    return {"msg_s": got / dt, "bytes_s": size / dt, "cpu_us": (time.process_time() - cpu) / got * 1e6}


def fmt(b: float) -> str:
    return f"{b / 1e6:8.1f} MB/s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.store", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="less data (for routine runs)")
    ap.add_argument("--big-gb", type=float, default=0, help="also append this many GB (1 KiB bodies, async) "
                    "and report private memory")
    ap.add_argument("--dir", default=None, help="where to write (default: a temp dir under the current dir)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big-only", action="store_true", help="only the --big-gb memory run")
    args = ap.parse_args(argv)
    base = tempfile.mkdtemp(prefix="bench-store-", dir=args.dir or os.getcwd())
    vol = (64 if args.quick else 256) * MiB
    runs = 1 if args.quick else args.runs
    try:

        def row(label, results, raws=None):
            vals = [r["bytes_s"] for r in results]
            line = (f"  {label:44s} {fmt(statistics.median(vals))} ({min(vals) / 1e6:.0f}-{max(vals) / 1e6:.0f})"
                    f" {statistics.median(r['msg_s'] for r in results):9.0f} msg/s"
                    f" {statistics.median(r['cpu_us'] for r in results):6.2f} CPU us/msg")
            if raws:
                ratios = [r["bytes_s"] / w for r, w in zip(results, raws)]
                line += (f" | raw {statistics.median(raws) / 1e6:.0f} MB/s, ratio {statistics.median(ratios):.2f}"
                         f" ({min(ratios):.2f}-{max(ratios):.2f})")
            print(line, flush=True)

        cases = [("append 1 KiB async, append_many(64)", 1024, "async", 64, 1, vol),
                 ("append 1 KiB async, append", 1024, "async", 1, 1, vol),
                 ("append 100 B async, append_many(64)", 100, "async", 64, 1, vol // 8),
                 ("append 100 B async, append", 100, "async", 1, 1, vol // 8),
                 ("append 1 KiB sync, append_many(64)+flush", 1024, "sync", 64, 1, vol // 4),
                 ("append 100 B sync, append_many(64)+flush", 100, "sync", 64, 1, vol // 32),
                 ("append 1 KiB sync, append+flush each", 1024, "sync", 1, 1, 8 * MiB),
                 ("append 100 B sync, append+flush each", 100, "sync", 1, 1, MiB),
                 ("append 16 x 1 KiB inner batch async (Kafka)", 16 * 1024, "async", 1, 16, vol)]
        print(f"store bench in {base}: {runs} run(s) per case, median (min-max); each run is followed by a raw "
              "sequential write (1 MiB os.write + final fdatasync) of the same number of bytes: ratio = store / raw")
        read_results = []
        for label, size, flush, batch, inner, total in ([] if args.big_only else cases):
            results, raws = [], []
            for _ in range(runs):
                r = append_case(base, size, total, flush, batch, inner=inner)
                if label == cases[0][0]:
                    read_results.append(read_case(r["store"], r["msgs"]))
                r["store"].close()
                shutil.rmtree(r["path"])
                results.append(r)
                raws.append(raw_write(base, r["store"].max_physical_offset))
            row(label, results, raws)
        if read_results:
            row("read 1 KiB through the ConsumeQueue", read_results)
        if args.big_gb:
            total = int(args.big_gb * 1e9)
            peak = [0.0, 0.0]
            before = private_mb()

            def sample(pos):
                p, a = private_mb()
                peak[0], peak[1] = max(peak[0], p), max(peak[1], a)

            r = append_case(base, 1024, total, "async", 64, sample)
            sample(0)
            r["store"].close()
            shutil.rmtree(r["path"])
            big_raw = raw_write(base, r["store"].max_physical_offset or total)
            print(f"  {args.big_gb:g} GB, 1 KiB async append_many(64): {fmt(r['bytes_s'])}, raw {fmt(big_raw)}, "
                  f"ratio {r['bytes_s'] / big_raw:.2f}")
            print(f"  private memory: before {before[0]:.0f} MB, peak while appending {peak[0]:.0f} MB "
                  f"(anonymous RSS peak {peak[1]:.0f} MB)")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
