"""`python -m bench.tier --upload-cost`: the CPU the tier's upload path itself takes, apart from produce.

A TieredStore in process (`--file-size` CommitLog files, 1 MiB by default; 64 KB entries as Kafka
batches of that size are, one tiered queue) on a real SeaweedFS (bench/objstore_server.py): MB of entries appended and
flushed, then one `Uploader.round()` uploads and commits every sealed file, timed by the thread's
CPU time (the hashes, the copies, botocore and the socket sends all run on the calling thread);
the S3 server's CPU over the same round from /proc, and the upload rate (MiB/s, to compare with
the PUT column of `python -m bench.objstore` run at the same time). Repeated `repeat` times on fresh stores.
Far less noisy than the interleaved produce rounds on a shared machine: no other process's
scheduling is in the figure (the S3 server's is, as its own line).

`--profile N` runs cProfile (thread CPU time) over the timed round of each run and prints its top N
functions by own time, summed over the runs. cProfile's cost per Python call inflates code made of
many small calls (the per-entry walk) several times over against one long C call (a send, a CRC):
the unprofiled CPU figure of the same run is printed next to it.
"""
from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
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


def one_run(work: str, server, run: int, mb: int, file_size: int = 1 << 20, profile: cProfile.Profile | None = None) -> dict:
    objects = S3ObjectStore.from_url(f"s3://bench-upload/r{run}/", endpoint=server.endpoint,
                                     credentials_file=server.credentials_file)
    store = TieredStore(os.path.join(work, f"r{run}"), StoreConfig(commitlog_file_size=file_size), objects=objects)
    store.recover()
    try:
        store.topics.create("t", 1, 1, attributes={"remote.storage.enable": "true", "local.retention.ms": "0"})
        uploader = Uploader(store)
        uploader.round()  # the manifests listed and the topic table written: not part of the figure
        _fill(store, mb)
        s3_before, began, wall = _cpu_seconds(server.pids()[0]), time.thread_time(), time.monotonic()
        if profile is not None:
            profile.enable()
        files = uploader.round()
        if profile is not None:
            profile.disable()
        cpu, wall = time.thread_time() - began, time.monotonic() - wall
        mb_up = files * file_size / 1e8  # hundreds of MB uploaded
        time.sleep(0.5)  # the server's last writes
        s3_cpu = _cpu_seconds(server.pids()[0]) - s3_before
        return {"files": files, "uploader_cpu_s_per_100mb": round(cpu / mb_up, 3),
                "s3_server_cpu_s_per_100mb": round(s3_cpu / mb_up, 3),
                "upload_mib_s": round(files * file_size / (1 << 20) / wall, 1),  # one file after another, as the upload service does
                "load_1min": os.getloadavg()[0]}
    finally:
        store.close()
        objects.close()


def main(repeat: int, mb: int, file_size: int = 1 << 20, profile_top: int = 0) -> None:
    profile = cProfile.Profile(time.thread_time) if profile_top else None
    with bench_workdir("bench-tier-upload-", "bench-upload") as (work, server, _gateways):
        runs = [one_run(work, server, i, mb, file_size, profile) for i in range(repeat)]
    result = {"file_size": file_size, "profiled": bool(profile), "runs": runs,
              **{f"median_{k}": statistics.median(r[k] for r in runs)
                 for k in ("uploader_cpu_s_per_100mb", "s3_server_cpu_s_per_100mb", "upload_mib_s")}}
    print(json.dumps(result, indent=1))
    if profile is not None:
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        print(f"cProfile of the timed rounds (thread CPU s, {stats.total_tt:.3f} in all), top {profile_top} by own time:")
        stats.sort_stats("tottime").print_stats(profile_top)
        print(out.getvalue())
