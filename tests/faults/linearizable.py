"""The linearizable-metadata workload and its checker (issue 26): during the run, raw Kafka requests
record (with invoke and return times) topic creation, every gateway's view of partition leadership and
a group's committed offset across coordinator moves; after the run the history is checked by
tests/faults/lincheck (porcupine, a Go program built by `make faults-lincheck`), one key at a time:
- topic/<name>: CreateTopics of a new name every 3 s (100 at most) (through each gateway in turn), and every
  gateway's Metadata answer saying whether it exists: once a create was acknowledged, no read that
  starts later may miss the topic;
- leader/<topic>/<partition>: every gateway's Metadata answer (leader, leader epoch) of the queue
  topic's partitions: epochs never go back across reads ordered in real time, one leader per epoch;
- offsets/<group>/0: OffsetCommit of increasing offsets (no members: generation -1) to whichever
  gateway FindCoordinator names, and OffsetFetch through each gateway's named coordinator.
A request with no answer is left open (it may take effect at any later point); a read with no
answer is dropped (it says nothing)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafka"))
from gobuild import go_binary  # noqa: E402
from kafka_raw import RawClient  # noqa: E402

METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, CREATE_TOPICS = 3, 8, 9, 10, 19
TOPIC_EXISTS, UNKNOWN_TOPIC = 36, 3
NOT_COORDINATOR = {14, 15, 16}  # load in progress, not available, not coordinator: the commit was not applied
LIN_GROUP, LIN_PREFIX = "faults-lin-group", "faults-lin-"
CREATE_EVERY, MAX_TOPICS = 3, 100  # a topic every 3 s, at most 100 (each is a replicated queue to follow)


def lincheck_binary() -> str:
    """The checker built from these sources (by the make target, which names it by their hash)."""
    return go_binary("lincheck", "LINCHECK_CACHE")


def check_linearizable(ops: list[dict], timeout_s: float = 10, visualize: str | None = None) -> dict:
    """lincheck's verdict: {"keys", "ops", "illegal": [keys], "unknown": [keys], "valid"}."""
    done = subprocess.run([lincheck_binary()], input=json.dumps({"ops": ops, "timeout_s": timeout_s,
                                                                 "visualize": visualize or ""}),
                          capture_output=True, text=True, check=True, timeout=600)
    return json.loads(done.stdout)


def _call(addr: tuple[str, int], api: int, version: int, body: dict, timeout: float = 3) -> dict:
    client = RawClient(f"{addr[0]}:{addr[1]}", timeout)
    try:
        return client.call(api, version, body)
    finally:
        client.close()


def _rank(op: dict) -> tuple:
    """How new the state an acknowledged operation shows (values and epochs only grow here)."""
    if op["kind"] == "leader":
        return (op["epoch"],)
    if op["kind"] in ("create", "exists", "observe"):
        return (int(op["result"] in ("created", "exists")),)
    return (op["value"],)


def witness(ops: list[dict], limit: int = 3) -> list[str]:
    """Pairs showing why one key is not linearizable: an operation that completed before another
    began, the later one showing an older state (the usual shape; porcupine's picture has the rest)."""
    done = sorted((op for op in ops if op["return"] is not None and op.get("result") not in ("failed", "unknown")),
                  key=lambda op: op["return"])
    found = []
    for later in sorted(ops, key=lambda op: op["call"]):
        if later["kind"] in ("create", "write"):
            continue
        newest = max((op for op in done if op["return"] < later["call"]), key=_rank, default=None)
        if newest is not None and _rank(newest) > _rank(later):
            found.append(f"{_short(newest)} before {_short(later)}")
            if len(found) >= limit:
                break
    return found


def _short(op: dict) -> str:
    shown = {"leader": f"leader {op.get('leader')} epoch {op.get('epoch')}", "read": f"offset {op.get('value')}",
             "write": f"commit {op.get('value')}"}.get(op["kind"], f"{op['kind']} {op.get('result')}")
    ret = "no answer" if op["return"] is None else f"{op['return']:.2f}"
    return f"g{op['client']} {shown} ({op['call']:.2f}-{ret} s)"


class MetadataWorkload:
    label = "linearizable metadata: topic creation, leadership, committed offsets across coordinator moves (porcupine)"

    def __init__(self, gateways: dict[int, tuple[str, int]], topic: str, now, run_dir: str) -> None:
        self.gateways, self.topic, self.now, self.run_dir = gateways, topic, now, run_dir
        self.history: list[dict] = []  # the harness's format: a request is invoke then ok / fail / info
        self.lin_ops: list[dict] = []  # lincheck's: one per key a request touched
        self.created = 0  # topics LIN_PREFIX0 .. created-1 have been asked for
        self.lock = threading.Lock()
        self.requests = 0

    def _request(self, f: str, client: int, run) -> None:
        """One request: its invoke and outcome in `history`; `run(call_time)` returns (type, lin ops)."""
        with self.lock:
            value, self.requests = self.requests, self.requests + 1
        call = self.now()
        self.history.append({"type": "invoke", "f": f, "value": value, "client": client, "time": call})
        try:
            outcome, ops = run(call)
        except (OSError, ValueError, ConnectionError) as e:
            outcome, ops = "info", []
            if f in ("create", "commit"):  # may have taken effect: left open
                ops = getattr(e, "open_ops", [])
        self.history.append({"type": outcome, "f": f, "value": value, "client": client, "time": self.now()})
        with self.lock:
            self.lin_ops += ops

    def _reader(self, node: int, stop: threading.Event) -> None:
        while not stop.is_set():
            self._request("metadata", node, lambda call: self._metadata(node, call))
            self._request("fetch", node, lambda call: self._fetch(node, call))
            stop.wait(0.2)

    def _metadata(self, node: int, call: float) -> tuple[str, list[dict]]:
        names = [f"{LIN_PREFIX}{i}" for i in range(self.created)]
        body = _call(self.gateways[node], METADATA, 7, {"topics": [{"name": t} for t in [self.topic, *names]],
                                                          "allow_auto_topic_creation": False})
        ret, ops = self.now(), []
        for t in body["topics"]:
            if t["name"] in names:
                result = "missing" if t["error_code"] == UNKNOWN_TOPIC else "exists"
                ops.append({"client": node, "key": f"topic/{t['name']}", "kind": "exists", "result": result,
                            "call": call, "return": ret})
            elif t["name"] == self.topic and t["error_code"] == 0:
                ops += [{"client": node, "key": f"leader/{self.topic}/{p['partition_index']}", "kind": "leader",
                         "leader": p["leader_id"], "epoch": p["leader_epoch"], "call": call, "return": ret}
                        for p in t["partitions"]]
        return "ok", ops

    def _coordinator(self, node: int) -> tuple[str, int] | None:
        body = _call(self.gateways[node], FIND_COORDINATOR, 2, {"key": LIN_GROUP, "key_type": 0})
        return self.gateways.get(body["node_id"]) if body["error_code"] == 0 else None

    def _fetch(self, node: int, call: float) -> tuple[str, list[dict]]:
        coordinator = self._coordinator(node)
        if coordinator is None:
            return "fail", []
        call = self.now()
        body = _call(coordinator, OFFSET_FETCH, 1, {"group_id": LIN_GROUP,
                                                   "topics": [{"name": self.topic, "partition_indexes": [0]}]})
        p = body["topics"][0]["partitions"][0] if body["topics"] else {"error_code": 0, "committed_offset": -1}
        if p["error_code"]:
            return "fail", []
        return "ok", [{"client": node, "key": f"offsets/{LIN_GROUP}/0", "kind": "read", "value": p["committed_offset"],
                       "call": call, "return": self.now()}]

    def _writer(self, stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            node = list(self.gateways)[n % len(self.gateways)]
            if n % CREATE_EVERY == 0 and self.created < MAX_TOPICS:
                self._request("create", 0, lambda call, n=n, node=node: self._create(node, n, call))
            self._request("commit", 0, lambda call, n=n, node=node: self._commit(node, n, call))
            stop.wait(1.0)

    def _create(self, node: int, n: int, call: float) -> tuple[str, list[dict]]:
        name = f"{LIN_PREFIX}{self.created}"
        self.created += 1
        op = {"client": node, "key": f"topic/{name}", "kind": "create", "result": "unknown", "call": call, "return": None}
        try:
            body = _call(self.gateways[node], CREATE_TOPICS, 4, {
                "topics": [{"name": name, "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []}],
                "timeout_ms": 5000, "validate_only": False})
        except (OSError, ValueError, ConnectionError) as e:
            e.open_ops = [op]
            raise
        code = body["topics"][0]["error_code"]
        if code in (0, TOPIC_EXISTS):
            return "ok", [{**op, "result": "created" if code == 0 else "exists", "return": self.now()}]
        return "info", [op]  # refused, but a gateway may have published it anyway: left open

    def _commit(self, node: int, n: int, call: float) -> tuple[str, list[dict]]:
        op = {"client": 0, "key": f"offsets/{LIN_GROUP}/0", "kind": "write", "value": n, "result": "unknown",
              "call": None, "return": None}  # call: when the OffsetCommit itself was sent
        try:
            coordinator = self._coordinator(node)
            if coordinator is None:
                return "fail", []
            op["call"] = self.now()
            body = _call(coordinator, OFFSET_COMMIT, 2, {
                "group_id": LIN_GROUP, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
                "topics": [{"name": self.topic, "partitions": [
                    {"partition_index": 0, "committed_offset": n, "committed_metadata": ""}]}]})
        except (OSError, ValueError, ConnectionError) as e:
            e.open_ops = [op] if op["call"] is not None else []  # sent: may have been applied
            raise
        code = body["topics"][0]["partitions"][0]["error_code"]
        if code == 0:
            return "ok", [{**op, "result": "ok", "return": self.now()}]
        if code in NOT_COORDINATOR:
            return "fail", []
        return "info", [op]

    def start(self, stop: threading.Event) -> threading.Thread:
        threads = [threading.Thread(target=self._reader, args=(i, stop), daemon=True) for i in self.gateways]
        threads.append(threading.Thread(target=self._writer, args=(stop,), daemon=True))
        for t in threads:
            t.start()
        waiter = threading.Thread(target=lambda: [t.join() for t in threads], daemon=True)
        waiter.start()
        return waiter

    def finish(self) -> None:
        return None

    def check(self) -> dict:
        """lincheck over the recorded operations (kept in `linearizability.json`; porcupine's picture of
        the first key that fails in `linearizability.html`). Committed offsets must be linearizable.
        Topics and leaders are checked twice: per gateway (its own answers never go back, and it shows
        a topic it acknowledged creating: an anomaly otherwise) and across gateways, where Kafka's
        contract allows a stale answer from a broker that has not caught up (KIP-320: clients fence it
        by the leader epoch), so those are reported (`stale_across_gateways`), not counted."""
        per_gateway = [{**op, "key": f"{op['key']}@g{op['client']}",
                        "kind": "observe" if op["kind"] == "exists" else op["kind"]}
                       for op in self.lin_ops if not op["key"].startswith("offsets/")]
        ops = self.lin_ops + per_gateway
        with open(os.path.join(self.run_dir, "linearizability.json"), "w") as f:
            json.dump(ops, f)
        verdict = check_linearizable(ops, visualize=os.path.join(self.run_dir, "linearizability.html"))
        counts = {t: sum(op["type"] == t for op in self.history) for t in ("invoke", "ok", "fail", "info")}
        stale = [k for k in verdict["illegal"] if not k.startswith("offsets/") and "@g" not in k]
        bad = [k for k in verdict["illegal"] if k not in stale]
        return {"ops": counts["invoke"], "ok": counts["ok"], "fail": counts["fail"], "info": counts["info"],
                "keys": verdict["keys"], "lin_ops": verdict["ops"], "nonlinearizable": bad,
                "stale_across_gateways": stale, "timed_out_keys": verdict["unknown"], "valid": not bad,
                "witnesses": {k: witness([op for op in ops if op["key"] == k]) for k in verdict["illegal"]}}
