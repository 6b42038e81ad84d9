"""`python -m bench.tier --upload-cost`: the CPU the tier's upload path itself takes, apart from produce.

A TieredStore in process (1 MiB CommitLog files, 64 KB entries as Kafka batches of that size are,
one tiered queue) on a real SeaweedFS (bench/objstore_server.py): MB of entries appended and
flushed, then one `Uploader.round()` uploads and commits every sealed file, timed by the thread's
CPU time (the hashes, the copies, botocore and the socket sends all run on the calling thread);
the S3 server's CPU over the same round from /proc, and the upload rate (MiB/s, to compare with
the PUT column of `python -m bench.objstore` run at the same time). Repeated `repeat` times on fresh stores.
Far less noisy than the interleaved produce rounds on a shared machine: no other process's
scheduling is in the figure (the S3 server's is, as its own line).
"""
from __future__ import annotations

import json
import os
import statistics
import time

from bench.objstore_server import bench_workdir
from codec.remoting.message import Message
from store.api import StoreConfig
from store.objstore.s3 import S3ObjectStore
from store.tier.tiered import TieredStore
from store.tier.upload import Uploader

ENTRY = 64_000


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _fill(store, mb: int) -> None:
    body = os.urandom(ENTRY)
    for i in range(mb * 1_000_000 // ENTRY):
        store.append(Message("t", 0, body, {"KEYS": f"k{i}"}))
    store.flush()


def one_run(work: str, server, run: int, mb: int) -> dict:
    objects = S3ObjectStore.from_url(f"s3://bench-upload/r{run}/", endpoint=server.endpoint,
                                     credentials_file=server.credentials_file)
    store = TieredStore(os.path.join(work, f"r{run}"), StoreConfig(commitlog_file_size=1 << 20), objects=objects)
    store.recover()
    try:
        store.topics.create("t", 1, 1, attributes={"remote.storage.enable": "true", "local.retention.ms": "0"})
        uploader = Uploader(store)
        uploader.round()  # the manifests listed and the topic table written: not part of the figure
        _fill(store, mb)
        s3_before, began, wall = _cpu_seconds(server.pids()[0]), time.thread_time(), time.monotonic()
        files = uploader.round()
        cpu, wall = time.thread_time() - began, time.monotonic() - wall
        time.sleep(0.5)  # the server's last writes
        s3_cpu = _cpu_seconds(server.pids()[0]) - s3_before
        return {"files": files, "uploader_cpu_s_per_100mb": round(cpu * 100 / files, 3),
                "s3_server_cpu_s_per_100mb": round(s3_cpu * 100 / files, 3),
                "upload_mib_s": round(files / wall, 1),  # one file after another, as the upload service does
                "load_1min": os.getloadavg()[0]}
    finally:
        store.close()
        objects.close()


def main(repeat: int, mb: int) -> None:
    with bench_workdir("bench-tier-upload-", "bench-upload") as (work, server, _gateways):
        runs = [one_run(work, server, i, mb) for i in range(repeat)]
    result = {"runs": runs, **{f"median_{k}": statistics.median(r[k] for r in runs)
                               for k in ("uploader_cpu_s_per_100mb", "s3_server_cpu_s_per_100mb", "upload_mib_s")}}
    print(json.dumps(result, indent=1))
