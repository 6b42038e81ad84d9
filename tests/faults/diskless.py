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
from checker import check
from codec.kafka.records import decode_records, parse_batches
from duplicates import reclassify
from workload import Workload, check_queue, read_all

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
    if len(workdir) > 90:  # its unix sockets live there: a socket path is at most 107 bytes
        raise RuntimeError(f"run dir too long for the S3 server's sockets: {workdir}")
    server = SeaweedS3(workdir, host=host)
    server.start_timeout = 240.0  # as a gateway restart (nemesis.START_S): starts are slow at load ~40
    server.start()
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


def fencing_events(logs: list[str]) -> dict[str, int]:
    """How often the index's fencing acted, from the gateways' logs (store/diskless/index.py's
    warnings): a slot race lost to another writer, a batch another gateway had committed refused."""
    counts = {"slot_taken": 0, "batch_taken": 0}
    for path in logs:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    if " fenced: slot " in line:
                        counts["slot_taken"] += 1
                    elif " fenced: an idempotent batch " in line:
                        counts["batch_taken"] += 1
        except OSError:
            pass
    return counts


def read_bucket(server: SeaweedS3, entries: dict[int, list[dict]]) -> list[dict]:
    """Every record the index points at, read from the WAL and segment objects themselves (what any
    gateway would serve): {"partition", "offset", "value"} as the final read's."""
    client, records = server.client(), []
    for queue, listed in sorted(entries.items()):
        for e in listed:
            run = client.get_object(Bucket=BUCKET, Key=f"{PREFIX}/{e['wal']}",
                                    Range=f"bytes={e['pos']}-{e['pos'] + e['size'] - 1}")["Body"].read()
            base = e["base"]
            for batch in parse_batches(run):
                for r in decode_records(batch.records_bytes(), batch.record_count):
                    records.append({"partition": queue, "offset": base + r.offset_delta, "value": int(r.value)})
                base += batch.record_count
    return records


def final_read(bootstrap: str, topic: str, server: SeaweedS3) -> tuple[list, dict]:
    """The final read through a Kafka consumer and the same records read from the bucket; (the read
    to check, notes). On a starved machine the cluster can stay without a leader for a partition past
    the read's time (docs/faults.md, diskless): then the bucket's read is checked, said in `read_from`."""
    resets: list[dict] = []
    try:
        served = read_all(bootstrap, topic, 3, timeout=240, resets=resets)
    except Exception as e:  # noqa: BLE001 - the reason goes to the report
        return read_bucket(server, index_entries(server, topic)), {"read_from": f"bucket (the Kafka read failed: {e})"}
    # read after the Kafka read: a slow writer's commit of an unacknowledged batch may land in between
    stored = read_bucket(server, index_entries(server, topic))
    key = lambda r: (r["partition"], r["offset"], r["value"])  # noqa: E731
    read_to = {p: max(r["offset"] for r in served if r["partition"] == p) for p in {r["partition"] for r in served}}
    missing = {key(r) for r in stored if r["offset"] <= read_to.get(r["partition"], -1)} - set(map(key, served))
    differs = sorted(missing | (set(map(key, served)) - set(map(key, stored))))
    # a reader sent back to an earlier offset: the end it was told (ListOffsets) was not served by Fetch
    return served, {"read_from": "kafka", "read_differs": [f"{p}@{o}={v}" for p, o, v in differs],
                    "unserved_end": [f"partition {r['partition']}: told end {r['end']}, sent back to {r['back_to']} "
                                     f"after {r['at']}" for r in resets]}


def check_rocketmq(load, server: SeaweedS3, bootstrap: str) -> dict:
    """diskless-rocketmq: the rocketmq checker on the final read (bucket fallback as for diskless)."""
    final, notes = final_read(bootstrap, RMQ_TOPIC, server)
    entries = index_entries(server, RMQ_TOPIC)
    result = {**check(load.history, final), **notes, **check_index(entries)}
    result["valid"] = (result["valid"] and not result["fenced"] and not result.get("read_differs")
                       and not result.get("unserved_end"))
    return result


def check_diskless(load: DisklessWorkload, server: SeaweedS3, run_dir: str, plant_loss: bool = False) -> dict:
    """The queue checker's verdict on the final read (`plant_loss`: one acknowledged record dropped
    from it first, as for queue), the index's fencing check, and the values read twice explained from
    the index (`duplicates-diskless.json`; the client's re-sends taken out)."""
    final, notes = final_read(load.bootstrap, load.topic, server)
    entries = index_entries(server)
    result = check_queue(load, plant_loss, final)
    result.update(notes)
    result.update(check_index(entries))
    result["fencing_events"] = fencing_events([os.path.join(run_dir, f"g{i}.log") for i in (1, 2, 3)])
    if result["duplicated"]:
        explained = explain_duplicates(entries, result["final_read"], result["duplicated"])
        with open(os.path.join(run_dir, "duplicates-diskless.json"), "w") as f:
            json.dump(explained, f, indent=1)
        result["duplicated_by"] = dict(Counter(e["class"] for e in explained))
        reclassify(result, explained)
    result["valid"] = (result["valid"] and not result["fenced"] and not result.get("read_differs")
                       and not result.get("unserved_end"))
    return result
