"""`make faults`: the fault harness (docs/faults.md). One etcd and three gateways, each in its own
network namespace; a seeded nemesis (isolate a gateway, cut one from etcd only, a majority of
gateways cut from etcd, SIGSTOP past the lease TTL, kill -9 and restart) while an idempotent acks=all
producer sends unique ints; after healing, the whole topic is read back and checked.
Rerun a seed exactly: `make faults FAULTS_ARGS="--seed N"`. Exit 1 on an anomaly, 2 if refused."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), CHECKOUT]

from checker import check  # noqa: E402
from nemesis import Nemesis, schedule  # noqa: E402
from netns import Network, cleanup, require_root_and_netns  # noqa: E402
from nodes import Nodes  # noqa: E402
from workload import Workload, create_topic, read_all  # noqa: E402

TOPIC, PARTITIONS = "faults", 3


def acks_during(history: list[dict], events: list[dict]) -> list[int]:
    """Per fault: sends acknowledged while it held (availability, not safety)."""
    return [sum(1 for op in history if op["type"] == "ok" and e["start"] <= op["time"] <= e["healed"])
            for e in events]


def recovery_times(history: list[dict], events: list[dict]) -> list[float | None]:
    """Per fault: from its heal to the first acknowledgement of a value sent after the heal."""
    invoked = {op["value"]: op["time"] for op in history if op["type"] == "invoke"}
    out = []
    for e in events:
        first = min((op["time"] for op in history
                     if op["type"] == "ok" and invoked.get(op["value"], -1) >= e["healed"]), default=None)
        out.append(None if first is None else round(first - e["healed"], 2))
    return out


def report(path: str, args, result: dict, events: list[dict], history: list[dict], run_dir: str,
           elapsed: float) -> None:
    def n(x):
        return len(x) if isinstance(x, list) else x
    lines = [
        "# Fault runs (`make faults`)", "",
        "Written by `tests/faults/run.py` (the harness: [issue 26](../README.md); design in the module",
        "docstrings of `tests/faults/`). One etcd and three gateways (`--cluster`, lease TTL "
        f"{args.ttl} s, replication factor 3, replica lag {args.replica_lag_ms} ms), each in its own network namespace",
        "on a bridge",
        "(10.77.0.0/24); the client in the root namespace reaches every node throughout. Partitions are",
        "blackhole routes inside the namespaces. Rerun exactly: "
        f"`make faults FAULTS_ARGS=\"--seed {args.seed} --rounds {args.rounds} --replica-lag-ms {args.replica_lag_ms}\"`.", "",
        "| workload | nemesis | seed | ops | ok | fail | info | lost | duplicated | reordered | unexpected | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| idempotent acks=all producer (librdkafka), {PARTITIONS} partitions RF 3, final read | "
        f"{', '.join(sorted({e['fault'] for e in events}))} | {args.seed} | {result['ops']} | {result['ok']} | "
        f"{result['fail']} | {result['info']} | {n(result['lost'])} | {n(result['duplicated'])} | "
        f"{n(result['reordered'])} | {n(result['unexpected'])} | {'valid' if result['valid'] else '**INVALID**'} |",
        "", f"Producer fatal error: {result.get('producer_fatal') or 'none'}.",
        "", f"Final read: {result['read']} records. Run took {elapsed:.0f} s; history: `{run_dir}/history.json`.", "",
        "## Schedule", "",
        "| # | fault | target | start s | healed s | acks while faulted | first ack after heal s |",
        "|---|---|---|---|---|---|---|"]
    rows = zip(events, acks_during(history, events), recovery_times(history, events))
    for i, (e, acked, r) in enumerate(rows, 1):
        lines.append(f"| {i} | {e['fault']} | g{e['target']} | {e['start']:.1f} | {e['healed']:.1f} | {acked} | "
                     f"{'none' if r is None else r} |")
    lines += ["", "*acks while faulted*: sends acknowledged between the fault's start and its heal (availability,",
              "not safety; a kill's window includes the restart). *first ack after heal*: from the heal to the",
              "first acknowledgement of a send made after it. info = indeterminate (timed out), fail = refused."]
    if not result["valid"]:
        lines += ["", "## Anomalies", ""] + [f"- {k}: {result[k][:50]}" for k in
                                             ("lost", "duplicated", "reordered", "unexpected") if result[k]]
    lines += ["", "## Not covered yet", "",
              "Asymmetric one-way drops, netem latency/loss/reordering, clock jumps, disk faults; Java",
              "kafka-clients, transactional producers, consumer groups, RocketMQ clients; the linearizable",
              "metadata checker; a 30-minute schedule. See issue 26."]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--rounds", type=int, default=10, help="faults in the schedule (classes in turn)")
    p.add_argument("--fault-s", type=float, default=8.0, help="how long a partition holds")
    p.add_argument("--heal-s", type=float, default=10.0, help="time to recover after each fault")
    p.add_argument("--ttl", type=int, default=3, help="the gateways' lease TTL")
    p.add_argument("--replica-lag-ms", type=int, default=2000,
                   help="--replica-lag-time-max-ms: below the fault length, so the in-sync sets shrink and grow")
    p.add_argument("--run-dir", default=None)
    p.add_argument("--report", default=os.path.join(CHECKOUT, "docs", "faults.md"))
    args = p.parse_args(argv)
    try:
        require_root_and_netns()
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    run_dir = args.run_dir or f"/tmp/rocketgate-faults/{args.seed}-{int(time.time())}"
    os.makedirs(run_dir, exist_ok=True)
    net = Network(["etcd", "g1", "g2", "g3"])
    nodes = Nodes(net, run_dir, gateways=3, ttl=args.ttl, replica_lag_ms=args.replica_lag_ms)
    plan = schedule(args.seed, args.rounds, nodes.ids)
    print(f"faults: seed {args.seed}, run dir {run_dir}, plan {[(s['fault'], s['target']) for s in plan]}", flush=True)
    try:
        net.create()
        nodes.start_etcd()
        for i in nodes.ids:
            nodes.start_gateway(i)
        create_topic(nodes.bootstrap, TOPIC, PARTITIONS)
        t0 = time.monotonic()
        load = Workload(nodes.bootstrap, TOPIC, PARTITIONS, lambda: time.monotonic() - t0)
        nemesis = Nemesis(nodes, plan, args.fault_s, args.heal_s, t0).start()
        load.run_until(lambda: not nemesis.thread.is_alive())
        net.heal()  # whatever the nemesis left (it failed part-way)
        for i in nodes.ids:
            nodes.signal(i, signal.SIGCONT)
            if not nodes.alive(i):
                nodes.start_gateway(i)
        if nemesis.error:
            print(f"faults: nemesis stopped early: {nemesis.error!r}", file=sys.stderr)
        quiet_until = time.monotonic() + args.heal_s
        load.run_until(lambda: time.monotonic() > quiet_until)
        load.finish()
        with open(os.path.join(run_dir, "history.json"), "w") as f:  # kept even if the final read fails
            json.dump({"seed": args.seed, "plan": plan, "nemesis": nemesis.events, "ops": load.history}, f)
        final = read_all(nodes.bootstrap, TOPIC, PARTITIONS)
        result = check(load.history, final)
        result["producer_fatal"] = load.fatal
        with open(os.path.join(run_dir, "history.json"), "w") as f:
            json.dump({"seed": args.seed, "plan": plan, "nemesis": nemesis.events, "ops": load.history,
                       "final_read": final, "result": result}, f)
        report(args.report, args, result, nemesis.events, load.history, run_dir, time.monotonic() - t0)
        print(json.dumps({k: (len(v) if isinstance(v, list) else v) for k, v in result.items()}), flush=True)
        return 0 if result["valid"] and nemesis.error is None and load.fatal is None else 1
    finally:
        nodes.stop_all()
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
