"""The diskless workload (issue 28, docs/diskless.md): the queue workload's idempotent acks=all
librdkafka producer on a topic created with `diskless.enable=true`, its only durable copy one bucket
of a real SeaweedFS S3 server shared by the three gateways.

The S3 server runs in the root namespace on the bridge's address, the client's: every gateway reaches
it throughout, as a cloud object store stays reachable when brokers lose each other. So a partition
cuts a gateway from its peers and etcd but not from the bucket, and an isolated or paused old leader
can still PUT WAL objects and write index entries after another gateway took its queues: the case
the index's fencing (conditional writes, docs/diskless.md "Index") must hold against.

Checks: the final read as for the queue workload (lost, duplicated, reordered), and the bucket's
index itself (`check_index`): per queue, slots with no gap, each entry starting where the previous
one ends, and no idempotent batch (producer id, epoch, first sequence) in two entries; anything else
is *fenced* (two writers both committed). A value read twice is looked up in the index
(`explain_duplicates`): copies under different producer epochs are the client's re-send (librdkafka's
epoch bump re-sequences a batch whose first send was stored but not answered), not an anomaly."""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict

from bench.objstore_server import SeaweedS3
from duplicates import reclassify
from workload import Workload, check_queue

TOPIC = "faults-diskless"
RMQ_TOPIC = "faults-diskless-rmq"  # the RocketMQ workload's sends, on a diskless topic (`diskless-rocketmq`)
RMQ_LABEL = "diskless-rocketmq: RocketMQ sync producer (native client, remoting) on a diskless topic, SEND_OK = acknowledged"
BUCKET = "faults"
PREFIX = "tier"  # --tier-url s3://faults/tier: the diskless objects are under tier/diskless/
WAL_MAX_MS = 250  # the gateway's default: a batch waits up to this long in a WAL buffer, so a pause catches some
JANITOR_MS = 10_000  # compaction rewrites index entries during the schedule (default: 60 s)


def start_object_store(run_dir: str, host: str) -> SeaweedS3:
    """The server on `host` (the bridge's address), its files under the run dir, with the bucket."""
    workdir = os.path.join(run_dir, "s3")
    if len(workdir) > 70:  # its unix sockets live there: a socket path is at most 107 bytes
        raise RuntimeError(f"run dir too long for the S3 server's sockets: {workdir}")
    server = SeaweedS3(workdir, host=host).start()
    server.create_bucket(BUCKET)
    return server


def gateway_args(server: SeaweedS3) -> list[str]:
    """The diskless options of every gateway: the bucket, and the WAL and janitor bounds."""
    return [*server.tier_args(BUCKET, PREFIX), "--diskless-wal-max-ms", str(WAL_MAX_MS),
            "--diskless-janitor-interval-ms", str(JANITOR_MS)]


class DisklessWorkload(Workload):
    label = "diskless: idempotent acks=all producer (librdkafka), 3 partitions, diskless.enable=true, final read"


def index_entries(server: SeaweedS3, topic: str = TOPIC) -> dict[int, list[dict]]:
    """queue -> its index entries as stored, in slot order (every incarnation of `topic`: one here)."""
    client, root = server.client(), f"{PREFIX}/diskless/index/"
    out: dict[int, list[dict]] = defaultdict(list)
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=root)
    for key in sorted(o["Key"] for page in pages for o in page.get("Contents", [])):
        home, queue, _ = key[len(root):].split("/")
        if home.split("@")[0] == topic:
            out[int(queue)].append(json.loads(client.get_object(Bucket=BUCKET, Key=key)["Body"].read()))
    return dict(out)


def check_index(entries: dict[int, list[dict]]) -> dict:
    """Fencing from the bucket: a gap in the slots, an entry not starting where the previous one ends,
    or an idempotent batch committed twice is `fenced` (one line each)."""
    fenced, count = [], 0
    for queue, listed in sorted(entries.items()):
        count += len(listed)
        seen: dict[tuple, int] = {}
        for prev, e in zip([None, *listed], listed):
            if prev is not None and e["seq"] != prev["seq"] + 1:
                fenced.append(f"queue {queue}: slot {e['seq']} follows slot {prev['seq']}")
            if prev is not None and e["base"] != prev["base"] + prev["count"]:
                fenced.append(f"queue {queue}: slot {e['seq']} starts at {e['base']}, "
                              f"slot {prev['seq']} ends at {prev['base'] + prev['count']}")
            for pid, epoch, first, _count, _at in e["producers"]:
                if (pid, epoch, first) in seen:
                    fenced.append(f"queue {queue}: batch of producer {pid} epoch {epoch} sequence {first} in slots "
                                  f"{seen[pid, epoch, first]} and {e['seq']}")
                seen[pid, epoch, first] = e["seq"]
    return {"index_entries": count, "fenced": fenced}


def batch_at(entries: list[dict], offset: int) -> tuple | None:
    """(producer id, epoch, first sequence) of the idempotent batch holding `offset`, else None."""
    for e in entries:
        if e["base"] <= offset < e["base"] + e["count"]:
            for pid, epoch, first, count, at in e["producers"]:
                if e["base"] + at <= offset < e["base"] + at + count:
                    return pid, epoch, first
    return None


def explain_duplicates(entries: dict[int, list[dict]], final_read: list[dict], duplicated: list[int]) -> list[dict]:
    """Each value read twice with its copies' batches; class `client_resend` when the copies' (producer
    id, epoch) differ, else `gateway` (one producer epoch stored a record twice: our bug)."""
    copies = defaultdict(list)
    wanted = set(duplicated)
    for r in final_read:
        if r["value"] in wanted:
            copies[r["value"]].append({"partition": r["partition"], "offset": r["offset"],
                                       "batch": batch_at(entries.get(r["partition"], []), r["offset"])})
    explained = []
    for value in duplicated:
        batches = [c["batch"] for c in copies[value]]
        epochs = {b[:2] for b in batches if b is not None}
        resend = None not in batches and len(epochs) == len(batches)
        explained.append({"value": value, "copies": copies[value], "class": "client_resend" if resend else "gateway"})
    return explained


def check_diskless(load: DisklessWorkload, server: SeaweedS3, run_dir: str) -> dict:
    """The queue checker's verdict on the final read, the index's fencing check, and the values read
    twice explained from the index (`duplicates-diskless.json`; the client's re-sends taken out)."""
    result = check_queue(load, False)
    entries = index_entries(server)
    result.update(check_index(entries))
    if result["duplicated"]:
        explained = explain_duplicates(entries, result["final_read"], result["duplicated"])
        with open(os.path.join(run_dir, "duplicates-diskless.json"), "w") as f:
            json.dump(explained, f, indent=1)
        result["duplicated_by"] = dict(Counter(e["class"] for e in explained))
        reclassify(result, explained)
    result["valid"] = result["valid"] and not result["fenced"]
    return result
