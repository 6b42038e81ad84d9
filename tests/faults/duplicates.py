"""Where a duplicated value came from (finding 4 of docs/faults.md): both copies of each value read
twice, as the store holds them. For each copy: the Kafka RecordBatch it is in (producer id, epoch,
base sequence, the record's own sequence), its offsets, the leader epoch that wrote that offset
(the store's `config/leaderEpochs` table) and the gateway that led the partition in that epoch (its
log line "leader in epoch N"). Then the pair's class:

- `gateway`: both copies under one producer id and epoch with overlapping sequences: the leader
  should have answered the second as a duplicate (our bug);
- `client_resend`: the copies carry different epochs (or producer ids): the client sent the record
  again under a new epoch (librdkafka's KIP-360 epoch bump re-sequences a batch whose first send
  was stored but not answered), which no broker can tell from a new record.

Read-only on the data dirs (the store tool's readers), so it also runs on a live cluster's dirs."""
from __future__ import annotations

import json
import os
import re

from codec.formats.kafka import Record, RecordBatch
from codec.kafka.records import decompress
from construct import GreedyRange
from store.tool.files import CommitLogFiles, config, consume_queues

RECORDS = GreedyRange(Record)
LEADER_LINE = re.compile(r"(\S+ \S+).*? (\S+)/(\d+): leader in epoch (\d+) from offset (\d+)")


def leaders_from_logs(logs: dict[int, str]) -> dict[tuple[str, int, int], list[tuple[int, str, int]]]:
    """(topic, partition, epoch) -> [(node, log time, start offset)] from each gateway's log."""
    out: dict[tuple[str, int, int], list[tuple[int, str, int]]] = {}
    for node, path in logs.items():
        try:
            with open(path, errors="replace") as f:
                for line in f:  # the substring first: the pattern tried at every position of every
                    m = LEADER_LINE.match(line) if " leader in epoch " in line else None  # line took minutes
                    if m:
                        stamp, topic, qid, epoch, start = m.groups()
                        out.setdefault((topic, int(qid), int(epoch)), []).append((node, stamp, int(start)))
        except OSError:
            pass
    return out


def epoch_of(pairs: list, offset: int) -> int | None:
    """The epoch whose range holds `offset` in a (epoch, start offset) table."""
    found = None
    for epoch, start in pairs:
        if start <= offset:
            found = epoch
    return found


def batch_copy(cl: CommitLogFiles, cq, offset: int) -> dict | None:
    """The stored RecordBatch holding queue offset `offset`: header fields and (offset -> value)."""
    unit = None
    for back in range(0, 512):  # an inner batch has one unit per record, all pointing at its entry
        if offset - back < cq.min_offset:
            break
        u = cq.unit(offset - back)
        if u is None:
            return None
        if unit is not None and u[0] != unit[0]:
            break
        unit, first = u, offset - back
    if unit is None:
        return None
    msg, _why = cl.entry(unit[0], unit[1])
    if msg is None:
        return None
    batch = RecordBatch.parse(msg.body)
    h = batch.header
    records = RECORDS.parse(decompress(h.attributes & 0x7, batch.records))
    base = msg.queue_offset
    return {"base_offset": base, "last_offset": base + h.last_offset_delta, "producer_id": h.producer_id,
            "producer_epoch": h.producer_epoch, "base_sequence": h.base_sequence, "record_count": h.record_count,
            "store_timestamp_ms": msg.store_timestamp, "first_unit": first,
            "values": {base + r.offset_delta: r.value.decode(errors="replace") for r in records}}


def classify(copies: list[dict]) -> str:
    """`gateway`: two copies under one producer id, epoch and sequence (the leader should have
    answered the second as a duplicate); `client_resend`: every copy under its own producer id and
    epoch; `gateway_other`: two copies under one epoch but other sequences (no client re-sequences
    within an epoch); `unexplained`: a copy not found in the stores. Only `client_resend` is not
    the gateway's anomaly."""
    if any(c.get("producer_id") is None for c in copies):
        return "unexplained"
    keys = [(c["producer_id"], c["producer_epoch"]) for c in copies]
    if len({(*k, c["sequence"]) for k, c in zip(keys, copies)}) < len(copies):
        return "gateway"
    return "client_resend" if len(set(keys)) == len(copies) else "gateway_other"


def explain(data_dirs: dict[int, str], logs: dict[int, str], topic: str, final_read: list[dict],
            history: list[dict], values: list[int]) -> list[dict]:
    """One dict per duplicated value: its copies (as above), its sends in the history, its class."""
    leaders = leaders_from_logs(logs)
    stores = {n: (CommitLogFiles(d, 16 << 20), consume_queues(d), config(d, "leaderEpochs.json", {}) or {})
              for n, d in data_dirs.items()}
    wanted = set(values)
    ops, read = {}, {}
    for op in history:
        if op["value"] in wanted:
            ops.setdefault(op["value"], []).append({k: op[k] for k in ("type", "time", "offset", "error") if k in op})
    for r in final_read:
        if r["value"] in wanted:
            read.setdefault(r["value"], []).append(r)
    batches: dict[tuple[int, int, int], dict | None] = {}  # (node, partition, offset) -> its batch, parsed once
    out = []
    for v in values:
        copies = []
        for r in sorted(read.get(v, []), key=lambda r: r["offset"]):
            copy = {"partition": r["partition"], "offset": r["offset"]}
            for node, (cl, cqs, epochs) in stores.items():
                cq = cqs.get((topic, r["partition"]))
                if cq is None or not cq.min_offset <= r["offset"] < cq.max_offset:
                    continue
                key = (node, r["partition"], r["offset"])
                if key not in batches:
                    b = batches[key] = batch_copy(cl, cq, r["offset"])
                    for offset in (range(b["base_offset"], b["last_offset"] + 1) if b else ()):
                        batches[(node, r["partition"], offset)] = b
                b = batches[key]
                if b is None or b["values"].get(r["offset"]) != str(v):
                    continue
                epoch = epoch_of(epochs.get(topic, {}).get(str(r["partition"]), []), r["offset"])
                copy.update({k: b[k] for k in ("base_offset", "last_offset", "producer_id", "producer_epoch",
                                               "base_sequence", "record_count")},
                            sequence=b["base_sequence"] + (r["offset"] - b["base_offset"]), read_from=f"g{node}",
                            leader_epoch=epoch,
                            leader=[f"g{n} at {t}" for n, t, _ in leaders.get((topic, r["partition"], epoch), [])],
                            batch_values_duplicated=sorted(int(x) for x in b["values"].values()
                                                           if x.isdigit() and int(x) in wanted))
                break
            copies.append(copy)
        out.append({"value": v, "class": classify(copies), "copies": copies, "sends": ops.get(v, [])})
    return out


def summary(explained: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in explained:
        counts[e["class"]] = counts.get(e["class"], 0) + 1
    return counts


def reclassify(result: dict, explained: list[dict]) -> dict:
    """The queue checker's result with the client's re-sends taken out of `duplicated` and
    `reordered` (a re-sent copy also lands after later values) into `client_resent`, which is
    reported but is not a gateway anomaly; the verdict recomputed."""
    resent = {e["value"] for e in explained if e["class"] == "client_resend"}
    result["client_resent"] = sorted(resent)
    result["duplicated"] = [v for v in result["duplicated"] if v not in resent]
    result["reordered"] = [v for v in result["reordered"] if v not in resent]
    result["valid"] = not (result["lost"] or result["duplicated"] or result["reordered"] or result["unexpected"]
                           or result.get("producer_fatal"))
    return result


def explain_kept(run_dir: str, topic: str = "faults") -> dict[str, int]:
    """Explain a finished run's duplicates again from its `--keep-data` copies (`kept-g<i>`, the
    stopped stores): for a run whose harness looked them up in the live dirs. Writes
    `duplicates-kept.json` next to its history; the counts per class."""
    with open(os.path.join(run_dir, "history.json")) as f:
        queue = json.load(f)["workloads"]["queue"]
    kept = sorted(int(n[len("kept-g"):]) for n in os.listdir(run_dir) if re.fullmatch(r"kept-g\d+", n))
    explained = explain({i: os.path.join(run_dir, f"kept-g{i}") for i in kept},
                        {i: os.path.join(run_dir, f"g{i}.log") for i in kept}, topic,
                        queue["result"]["final_read"], queue["history"],
                        queue["result"].get("client_resent", []) + queue["result"]["duplicated"])
    with open(os.path.join(run_dir, "duplicates-kept.json"), "w") as f:
        json.dump(explained, f, indent=1)
    return summary(explained)
