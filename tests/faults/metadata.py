"""The metadata checker: after healing, every gateway is asked directly (its own Metadata answer, one
socket each, no client routing) who leads each partition and in which leader epoch. All gateways must
converge on one leader per partition within `settle_s`; a partition still named with two leaders, or
two leaders for one epoch at any sample (a fencing breach), is an anomaly."""
from __future__ import annotations

import os
import sys
import time

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
from kafka_raw import RawClient  # noqa: E402

METADATA, VERSION = 3, 7
NO_LEADER = -1  # Kafka's leader id while a partition has none (LEADER_NOT_AVAILABLE)


def leaders_seen_by(host: str, port: int, topics: list[str], timeout: float = 5) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (leader id, leader epoch) in this gateway's own answer."""
    client = RawClient(f"{host}:{port}", timeout)
    try:
        body = client.call(METADATA, VERSION, {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False})
    finally:
        client.close()
    return {(t["name"], p["partition_index"]): (p["leader_id"], p["leader_epoch"])
            for t in body["topics"] for p in t["partitions"]}


def two_leaders_in_one_epoch(views: dict[int, dict]) -> set[str]:
    """Partitions that two gateways name with different leaders in one leader epoch (a fencing breach).
    A gateway answering -1 names no leader (its view lost the leader's membership, the election not yet
    heard): not a second leader; seed 2804 counted 7 such answers as breaches. It still counts as not
    converged in `check_leaders`."""
    by_epoch: dict[tuple, set[int]] = {}
    for view in views.values():
        for key, (leader, epoch) in view.items():
            if leader != NO_LEADER:
                by_epoch.setdefault((*key, epoch), set()).add(leader)
    return {f"{t}/{p} epoch {e}: leaders {sorted(ls)}" for (t, p, e), ls in by_epoch.items() if len(ls) > 1}


def check_leaders(gateways: dict[int, tuple[str, int]], topics: list[str], settle_s: float = 30) -> dict:
    """Sample every gateway until they agree (or `settle_s` passes). Each sample is one operation in
    the history: ok when all agree, fail when they do not, info when a gateway did not answer."""
    history, fenced, t0 = [], set(), time.monotonic()
    agreed = False
    while not agreed and time.monotonic() - t0 < settle_s:
        views, missing = {}, []
        for node, (host, port) in gateways.items():
            try:
                views[node] = leaders_seen_by(host, port, topics)
            except (OSError, ValueError) as e:
                missing.append(f"g{node}: {e}")
        fenced |= two_leaders_in_one_epoch(views)
        leaders = {key: {v[key][0] for v in views.values() if key in v} for view in views.values() for key in view}
        split = sorted(f"{t}/{p}: {sorted(ls)}" for (t, p), ls in leaders.items() if len(ls) > 1 or -1 in ls)
        agreed = not missing and not split and len(views) == len(gateways)
        history.append({"type": "ok" if agreed else ("info" if missing else "fail"), "value": len(history),
                        "time": round(time.monotonic() - t0, 2), "split": split, "missing": missing})
        if not agreed:
            time.sleep(1)
    last = history[-1] if history else {"split": ["no sample"]}
    return {"ops": len(history), "ok": sum(op["type"] == "ok" for op in history),
            "fail": sum(op["type"] == "fail" for op in history), "info": sum(op["type"] == "info" for op in history),
            "disagree": [] if agreed else last["split"] + last.get("missing", []), "fenced": sorted(fenced),
            "converged_s": history[-1]["time"] if agreed else None, "history": history,
            "valid": agreed and not fenced}
