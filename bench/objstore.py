"""The object store's own speed, the yardstick of the tier's upload and remote-read throughput:
`python -m bench.objstore` starts SeaweedFS (bench/objstore_server.py) and PUTs then GETs 1, 4 and
16 MiB objects through the S3 adapter (store/objstore/s3.py, as the tier does: x-amz-checksum-sha256 on
every PUT), one request at a time and 4 at once. It also records the server's start time and memory.
`--write-doc` puts the table into docs/tiered-storage.md (between its objstore-bench markers).

Each (size, concurrency) cell moves --mib MiB each way (default 64), so the whole run takes well
under a minute on the 2-core machine."""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import tempfile
import time

from bench.brokers import ROOT
from bench.objstore_server import SeaweedS3, seaweedfs_version
from bench.report import write_marked

MIB = 1 << 20
DOC = os.path.join(ROOT, "docs", "tiered-storage.md")


def _timed(work, items, concurrency: int) -> float:
    began = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for _ in pool.map(work, items):
            pass
    return time.perf_counter() - began


def measure(server: SeaweedS3, size: int, concurrency: int, total: int) -> dict:
    from store.objstore.s3 import S3ObjectStore
    bucket = f"bench-{size // MIB}m-c{concurrency}"
    server.create_bucket(bucket)
    store = S3ObjectStore.from_url(f"s3://{bucket}/", endpoint=server.endpoint,
                                   credentials_file=server.credentials_file, max_connections=concurrency)
    count = max(2 * concurrency, 8, total // size)
    data = os.urandom(size)
    keys = [f"obj-{i:05d}" for i in range(count)]
    put_s = _timed(lambda k: store.put(k, data), keys, concurrency)
    got = []
    get_s = _timed(lambda k: got.append(len(store.get(k))), keys, concurrency)
    assert got == [size] * count, "a GET returned the wrong size"
    for key in keys:
        store.delete(key)
    store.close()
    moved = count * size / MIB
    return {"size": size, "concurrency": concurrency, "count": count,
            "put_mib_s": moved / put_s, "put_req_s": count / put_s,
            "get_mib_s": moved / get_s, "get_req_s": count / get_s}


def table(rows: list[dict], server: SeaweedS3, idle_memory: int, load: float) -> str:
    lines = [f"SeaweedFS `{seaweedfs_version()}` (`weed server -s3`, one process), through the S3 adapter, "
             f"on this 2-core machine ({time.strftime('%Y-%m-%d')}, load average {load:.1f}: "
             f"shared with other work, so rates are a floor). Server ready in {server.started_in:.1f} s; "
             f"private memory {idle_memory / MIB:.0f} MiB idle, {server.peak_memory / MIB:.0f} MiB at peak.",
             "", "| object | concurrency | objects | PUT MiB/s | PUT req/s | GET MiB/s | GET req/s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['size'] // MIB} MiB | {r['concurrency']} | {r['count']} | {r['put_mib_s']:.0f} | "
                     f"{r['put_req_s']:.1f} | {r['get_mib_s']:.0f} | {r['get_req_s']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.objstore", description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=int, default=64, help="MiB moved each way per object size and concurrency")
    p.add_argument("--sizes", default="1,4,16", help="object sizes in MiB")
    p.add_argument("--concurrency", default="1,4", help="requests at once")
    p.add_argument("--write-doc", action="store_true", help="write the table into docs/tiered-storage.md")
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="seaweed-bench-", dir="/tmp")
    server = SeaweedS3(workdir)
    try:
        load = os.getloadavg()[0]
        server.start()
        idle_memory = server.memory()
        rows = [measure(server, int(s) * MIB, int(c), args.mib * MIB)
                for s in args.sizes.split(",") for c in args.concurrency.split(",")]
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    text = table(rows, server, idle_memory, load)
    print(text)
    if args.write_doc:
        write_marked(DOC, "objstore-bench", text, "### Object store speed")


if __name__ == "__main__":
    main()
