"""`python -m bench.tier --disk-loss`: the time to serve again after a disk loss (issue 32).

Single gateway: a tiered topic (local.retention.ms=1000, 1 MiB CommitLog files) holds N records of
1 KB; once its sealed files are committed the gateway is killed (kill -9), its data dir removed, and
it is started again on the empty dir with the same tier. Timed from that start: the process
answering, the first Fetch of offset 0 (the oldest tiered one) and of the newest record it has (the
high watermark - 1; the open file was never uploaded, so that is the last tiered record).

Cluster: three gateways on a real etcd, replication factor 3, each tiering under its own prefix
(tests/cluster/test_cluster_tier_disk_loss.py). A follower is killed, its data dir removed, its lease
left to expire and the leader to drop it from the in-sync set, and it is started again empty. Timed
from that start: the member back in the in-sync set (Metadata) and its ConsumeQueue file holding
every record (its size on disk, which the async flush writes: up to ~1 s later). Then
the other two are killed and, timed from that kill, the restored member leads and serves offset 0
and the newest record (a consumer fetches from the leader only, so this is how it serves alone).

Each scenario runs `--repeat` times on a fresh server; prints median (min-max), writes
bench/results/tier_disk_loss.json.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import ROOT
from bench.objstore_server import bench_workdir

sys.path.insert(0, os.path.join(ROOT, "tests"))  # gateway_process, clusters (as bench.cluster_bench)
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
from gateway_process import GatewayProcess, free_port  # noqa: E402
from clusters import NODES, require_etcd, start_cluster, wait_for  # noqa: E402
from store.consumequeue import UNIT_SIZE  # noqa: E402

TOPIC = "lostdisk"
FILE_SIZE = 1 << 20
TIERED = {"remote.storage.enable": "true", "local.retention.ms": "1000"}
VALUE = b"x" * 1000


def _produce(bootstrap: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 65536})
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, b"%08d" % i + VALUE, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0


def _manifests(server, bucket: str, prefix: str) -> int:
    page = server.client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}manifests/")
    return len(page.get("Contents", []))


def _local_files(data_dir: str) -> list[int]:
    d = os.path.join(data_dir, "commitlog")
    return sorted(int(n) for n in os.listdir(d) if n.isdigit()) if os.path.isdir(d) else []


def _fetched(bootstrap: str, offset: int, began: float, timeout: float = 120) -> float:
    """Seconds from `began` to a Fetch answering the record at `offset` (retrying while the topic or
    the offset is not there yet)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-lostdisk", "enable.auto.commit": False,
                  "auto.offset.reset": "error", "fetch.wait.max.ms": 50, "topic.metadata.refresh.interval.ms": 200})
    try:
        c.assign([TopicPartition(TOPIC, 0, offset)])
        while time.monotonic() - began < timeout:
            m = c.poll(0.05)
            if m is None:
                continue
            if m.error() is None and m.offset() == offset:
                return time.monotonic() - began
            if m.error() is not None:
                time.sleep(0.05)
                c.assign([TopicPartition(TOPIC, 0, offset)])
        raise TimeoutError(f"offset {offset} not fetched in {timeout} s")
    finally:
        c.close()


def _high_watermark(bootstrap: str, timeout: float = 60) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-lostdisk-hw"})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)[1]
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        c.close()


def single(work: str, server, bucket: str, n: int, run: int) -> dict:
    prefix = f"single{run}/"
    args = ["--commitlog-file-size", str(FILE_SIZE), *server.tier_args(bucket, prefix=prefix)]
    data = os.path.join(work, f"single{run}", "data")
    os.makedirs(os.path.dirname(data))
    gw = GatewayProcess(data, extra_args=args).start()
    try:
        admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})  # kept: the future needs it alive
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=TIERED)])[TOPIC].result(30)
        _produce(gw.kafka_bootstrap, n)
        wait_for(lambda: len(_local_files(data)) <= 2, 120, "the sealed files committed and deleted locally")
        gw.kill9()
        shutil.rmtree(data)
        began = time.monotonic()
        gw.start()
        answering = time.monotonic() - began
        oldest = _fetched(gw.kafka_bootstrap, 0, began)
        hw = _high_watermark(gw.kafka_bootstrap)
        newest = _fetched(gw.kafka_bootstrap, hw - 1, began)
        return {"records": n, "mb": n * (len(VALUE) + 8) / 1e6, "records_restored": hw,
                "answering_s": answering, "oldest_fetch_s": oldest, "newest_fetch_s": newest}
    finally:
        gw.stop()


def _tier_gateway(server, bucket: str, run: int):
    class TierGateway(GatewayProcess):
        def __init__(self, data_dir: str, extra_args=()) -> None:
            node = os.path.basename(data_dir)
            self.http = f"127.0.0.1:{free_port()}"
            super().__init__(data_dir, extra_args=[*extra_args, "--commitlog-file-size", str(FILE_SIZE),
                                                   "--http-port", self.http.split(":")[1],
                                                   *server.tier_args(bucket, prefix=f"cluster{run}/{node}/")])
    return TierGateway


def _partition(bootstrap: str):
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10).topics.get(TOPIC)
    return md.partitions[0] if md is not None and 0 in md.partitions else None


def _queue_end(data_dir: str) -> int:
    path = os.path.join(data_dir, "consumequeue", TOPIC, "0", "%020d" % 0)
    return os.path.getsize(path) // UNIT_SIZE if os.path.exists(path) else 0


def _first_times(began: float, conditions: dict, timeout: float = 120) -> dict:
    """Seconds from `began` to each condition's first true value, all polled in one loop (so one
    slow condition does not delay the time of another)."""
    got: dict = {}
    while len(got) < len(conditions):
        if time.monotonic() - began > timeout:
            raise TimeoutError(f"not reached in {timeout} s: {[w for w in conditions if w not in got]}")
        for what, fn in conditions.items():
            if what not in got and fn():
                got[what] = time.monotonic() - began
        time.sleep(0.02)
    return {what: got[what] for what in conditions}


def cluster(work: str, server, bucket: str, n: int, run: int) -> dict:
    require_etcd()
    c = start_cluster(os.path.join(work, f"cluster{run}"), NODES, ["--replica-lag-time-max-ms", "5000"],
                      gateway=_tier_gateway(server, bucket, run))
    try:
        gws = c.gateways
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(gws), 30, "every gateway a member")
        admin.create_topics([NewTopic(TOPIC, 1, 3, config=TIERED)])[TOPIC].result(30)
        wait_for(lambda: _partition(c.bootstrap) is not None and _partition(c.bootstrap).leader in gws, 30, "a leader")
        _produce(c.bootstrap, n)
        leader = _partition(c.bootstrap).leader
        lost = next(m for m in gws if m != leader)
        wait_for(lambda: len(_local_files(gws[lost].data_dir)) <= 2, 120, "its sealed files uploaded and deleted")
        tiered_files = _manifests(server, bucket, f"cluster{run}/node{lost}/")
        gws[lost].kill9()
        shutil.rmtree(gws[lost].data_dir)
        wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(gws) - 1, 30, "its lease to expire")
        wait_for(lambda: lost not in list(_partition(c.bootstrap).isrs), 60, "it out of the in-sync set")
        began = time.monotonic()
        gws[lost].start()
        answering = time.monotonic() - began
        caught_up, in_sync = _first_times(began, {
            "the tail replicated": lambda: _queue_end(gws[lost].data_dir) == n,
            "back in the in-sync set": lambda: lost in list(_partition(c.bootstrap).isrs)}).values()
        for m in gws:
            if m != lost:
                gws[m].kill9()
        alone, failed_over = gws[lost].kafka_bootstrap, time.monotonic()
        oldest = _fetched(alone, 0, failed_over)
        newest = _fetched(alone, n - 1, failed_over)
        return {"records": n, "mb": n * (len(VALUE) + 8) / 1e6, "tiered_files": tiered_files,
                "answering_s": answering, "caught_up_s": caught_up,
                "in_sync_s": in_sync, "alone_oldest_fetch_s": oldest, "alone_newest_fetch_s": newest}
    finally:
        c.stop()


def summary(runs: list[dict]) -> dict:
    out = {}
    for key in runs[0]:
        xs = [r[key] for r in runs]
        out[key] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
    return out


def main(repeat: int, single_records: int, cluster_records: int) -> None:
    result = {"load_avg_before": os.getloadavg()}
    with bench_workdir("bench-tierloss-", "bench-tierloss") as (work, server, _gateways):
        runs = {"single": [], "cluster": []}
        for r in range(repeat):  # interleaved: a burst of load on the machine hits both alike
            runs["single"].append(single(work, server, "bench-tierloss", single_records, r))
            print("single", r, runs["single"][-1], flush=True)
            runs["cluster"].append(cluster(work, server, "bench-tierloss", cluster_records, r))
            print("cluster", r, runs["cluster"][-1], flush=True)
    result.update({k: {"runs": v, "summary": summary(v)} for k, v in runs.items()})
    result["load_avg_after"] = os.getloadavg()
    print(json.dumps({k: v["summary"] if isinstance(v, dict) else v for k, v in result.items()}, indent=1))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "tier_disk_loss.json"), "w") as f:
        json.dump(result, f, indent=1)
