"""`make faults`: the fault harness (docs/faults.md). One etcd and three gateways, each in its own
network namespace; a seeded nemesis (nemesis.py: partitions, one-way drops, a bad link, pauses,
kill -9, clock jumps, a full disk, fsync errors) while the workloads run (an idempotent Kafka producer, a consumer
group, a transactional producer, RocketMQ producers (native, Java, Go) and a RocketMQ consumer); after healing, each workload's checker reads
back and judges its history, and the metadata checker asks every gateway who leads what.
Rerun a seed exactly: `make faults FAULTS_ARGS="--seed N"`. Exit 1 on an anomaly, 2 if refused."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), CHECKOUT]

import report  # noqa: E402
from checker import check, check_deliveries  # noqa: E402
from diskless import (RMQ_LABEL as DISKLESS_RMQ_LABEL, RMQ_TOPIC as DISKLESS_RMQ_TOPIC, TOPIC as DISKLESS_TOPIC,  # noqa: E402
                      DisklessWorkload, check_diskless, check_rocketmq, gateway_args, start_object_store)
from disk import cleanup_mounts, release  # noqa: E402
from duplicates import explain, reclassify, summary  # noqa: E402
from fsync_fault import heal as fsync_heal  # noqa: E402
from gateway.flush import EXIT_DURABILITY_LOST  # noqa: E402
from groups import STUCK_S, GroupWorkload, check_commits, committed  # noqa: E402
from go_load import GO_RMQ_QUEUES, GO_RMQ_TOPIC, go_rocketmq, rmqgo_binary  # noqa: E402
from java_load import (JAVA_PARTITIONS, JAVA_RMQ_TOPIC, JAVA_TOPIC, ProcessWorkload, compile_java,  # noqa: E402
                       java_group, java_queue, java_rocketmq, java_rocketmq_consumer, wait_for_start)
from linearizable import MetadataWorkload  # noqa: E402
from metadata import check_leaders  # noqa: E402
from nemesis import FAULTS, Nemesis, schedule  # noqa: E402
from netns import PREFIX, SUBNET, Network, cleanup, require_root_and_netns  # noqa: E402
from nodes import Nodes  # noqa: E402
from rocketmq_delay_txn import GATEWAY_ARGS as DELAY_TXN_ARGS, QUEUES as DT_QUEUES, TOPIC as DT_TOPIC  # noqa: E402
from rocketmq_delay_txn import DelayTxnWorkload, check_workload as check_delay_txn  # noqa: E402
from rocketmq_load import RMQ_QUEUES, RMQ_TOPIC, RocketMQWorkload  # noqa: E402
from txn import TXN_PARTITIONS, TXN_TOPIC, TxnWorkload, check_txns, read_committed  # noqa: E402
from workload import Workload, check_queue, create_topic, read_all  # noqa: E402

TOPIC, PARTITIONS = "faults", 3
WORKLOADS = ("queue", "group", "txn", "rocketmq", "java-queue", "java-group", "java-group848", "java-rocketmq",
             "java-rmq-consumer", "go-rocketmq", "linearizable")
OPTIONAL = ("diskless", "diskless-rocketmq", "rocketmq-delay-txn")  # not in the default run: named with --workloads


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--rounds", type=int, default=50,
                   help="faults in the schedule (classes in turn; 50 = every class 5 times, issue 26's bounded run)")
    p.add_argument("--fault-s", type=float, default=8.0, help="how long a partition holds")
    p.add_argument("--heal-s", type=float, default=10.0, help="time to recover after each fault")
    p.add_argument("--ttl", type=int, default=3, help="the gateways' lease TTL")
    p.add_argument("--replica-lag-ms", type=int, default=2000,
                   help="--replica-lag-time-max-ms: below the fault length, so the in-sync sets shrink and grow")
    p.add_argument("--flush", choices=("sync", "async"), default="sync",
                   help="the gateways' --flush: sync = SYNC_MASTER RocketMQ sends, async = ASYNC_MASTER")
    p.add_argument("--faults", default=",".join(FAULTS), help="the fault classes, comma-separated")
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help=f"the workloads, comma-separated (also: {', '.join(OPTIONAL)})")
    p.add_argument("--prefix", default=PREFIX, help="names of namespaces, links and mounts (a second harness: another)")
    p.add_argument("--subnet", default=SUBNET, help="the /24 of the test hosts, as 10.77.0")
    p.add_argument("--plant-loss", action="store_true",
                   help="drop one acknowledged record from the final read (shows the checker catches a loss)")
    p.add_argument("--keep-data", action="store_true",
                   help="copy each gateway's data dir (off its tmpfs) into the run dir before unmounting it")
    p.add_argument("--run-dir", default=None)
    p.add_argument("--report", default=os.path.join(CHECKOUT, "docs", "faults.md"))
    return p.parse_args(argv)


def rerun_args(args) -> str:
    return (f"--seed {args.seed} --rounds {args.rounds} --faults {args.faults} --workloads {args.workloads} "
            f"--fault-s {args.fault_s:g} --heal-s {args.heal_s:g} --ttl {args.ttl} --replica-lag-ms {args.replica_lag_ms} "
            f"--flush {args.flush}")


def header(args, run_dir: str, elapsed: float) -> list[str]:
    return [
        "# Fault runs (`make faults`)", "",
        "Written by `tests/faults/run.py` (the harness: issue 26; design in the module docstrings of",
        f"`tests/faults/`). One etcd and three gateways (`--cluster`, lease TTL {args.ttl} s, replication factor 3,",
        f"replica lag {args.replica_lag_ms} ms, `--flush {args.flush}`), each in its own network namespace on a bridge",
        f"({args.subnet}.0/24); the client in the root namespace reaches every node throughout. Each gateway runs",
        "under libfaketime and the fsync-error shim and keeps its data on its own 256 MiB tmpfs. The latest run is below; every run",
        "is in *All runs*.", "",
        f"Seed {args.seed}; run took {elapsed:.0f} s; history: `{run_dir}/history.json`. Rerun exactly:",
        f"`make faults FAULTS_ARGS=\"{rerun_args(args)}\"`."]


def heal_everything(nodes: Nodes) -> list[tuple[int, int]]:
    """Whatever the nemesis left (it may have failed part-way): links, clocks, disks, paused or dead
    nodes. (gateway, exit code) of those found dead (the nemesis restarts those it stops)."""
    nodes.net.heal()
    crashed = []
    for i in nodes.ids:
        nodes.set_clock(i, 0)
        fsync_heal(nodes.fsync_trigger(i))
        release(nodes.data_dir(i))
        nodes.signal(i, signal.SIGCONT)
        if not nodes.alive(i):
            crashed.append((i, nodes.procs[f"g{i}"].returncode))
            nodes.start_gateway(i)
    return crashed


def start_loads(names: list[str], nodes: Nodes, t0: float, seed: int, run_dir: str) -> dict:
    def now() -> float:
        return time.monotonic() - t0
    makers = {"queue": lambda: Workload(nodes.bootstrap, TOPIC, PARTITIONS, now,
                                        log_path=os.path.join(run_dir, "queue-rdkafka.log")),
              "group": lambda: GroupWorkload(nodes.bootstrap, TOPIC, PARTITIONS, now,
                                             log_path=os.path.join(run_dir, "group-rdkafka.log")),
              "txn": lambda: TxnWorkload(nodes.bootstrap, now, seed),
              "rocketmq": lambda: RocketMQWorkload(nodes.namesrv, now),
              "java-queue": lambda: java_queue(nodes.bootstrap, run_dir, t0, now),
              "java-group": lambda: java_group(nodes.bootstrap, run_dir, t0, now, "classic"),
              "java-group848": lambda: java_group(nodes.bootstrap, run_dir, t0, now, "consumer"),
              "java-rocketmq": lambda: java_rocketmq(nodes.namesrv, run_dir, t0, now),
              "java-rmq-consumer": lambda: java_rocketmq_consumer(nodes.namesrv, run_dir, t0, now),
              "go-rocketmq": lambda: go_rocketmq(nodes.namesrv, run_dir, t0, now),
              "diskless": lambda: DisklessWorkload(nodes.bootstrap, DISKLESS_TOPIC, PARTITIONS, now),
              "diskless-rocketmq": lambda: RocketMQWorkload(nodes.namesrv, now, DISKLESS_RMQ_TOPIC, DISKLESS_RMQ_LABEL),
              "rocketmq-delay-txn": lambda: DelayTxnWorkload(nodes.namesrv, nodes.bootstrap, now),
              "linearizable": lambda: MetadataWorkload(nodes.kafka_addrs, TOPIC, now, run_dir)}
    return {n: makers[n]() for n in names}


def check_loads(loads: dict, nodes: Nodes, plant_loss: bool, s3=None, run_dir: str = "", events=()) -> dict:
    checkers = {"queue": lambda w: check_queue(w, plant_loss),
                "diskless": lambda w: check_diskless(w, s3, run_dir, plant_loss),
                "diskless-rocketmq": lambda w: check_rocketmq(w, s3, nodes.bootstrap),
                "group": lambda w: {**check_commits(w.history, committed(nodes.bootstrap, TOPIC, PARTITIONS)),
                                   **w.diagnostics()},
                "txn": lambda w: check_txns(w.history, read_committed(nodes.bootstrap)),
                "rocketmq": lambda w: check(w.history, read_all(nodes.bootstrap, RMQ_TOPIC, RMQ_QUEUES)),
                "java-queue": lambda w: check_queue(w, False),
                "linearizable": lambda w: w.check(),
                "rocketmq-delay-txn": lambda w: check_delay_txn(w, events, read_all),
                "java-rocketmq": lambda w: check(w.history, read_all(nodes.bootstrap, JAVA_RMQ_TOPIC, JAVA_PARTITIONS)),
                "go-rocketmq": lambda w: check(w.history, read_all(nodes.bootstrap, GO_RMQ_TOPIC, GO_RMQ_QUEUES)),
                # what the consumer was handed against the final read (and what java-rocketmq tried, when it ran)
                "java-rmq-consumer": lambda w: check_deliveries(
                    w.history, read_all(nodes.bootstrap, JAVA_RMQ_TOPIC, JAVA_PARTITIONS),
                    {op["value"] for op in loads["java-rocketmq"].history} if "java-rocketmq" in loads else None)}
    for name in ("java-group", "java-group848"):
        checkers[name] = lambda w: check_commits(w.history, committed(nodes.bootstrap, JAVA_TOPIC, JAVA_PARTITIONS,
                                                                      group=w.group))
    checked = {n: {"label": w.label, "history": w.history, "result": checkers[n](w)} for n, w in loads.items()}
    if "java-rmq-consumer" in checked:  # deliveries, not operations with an outcome: no per-fault rows
        checked["java-rmq-consumer"]["per_fault"] = False
    for n, w in loads.items():
        if isinstance(w, (ProcessWorkload, GroupWorkload)) and w.fatal:  # it died or hung: its history ends early
            checked[n]["result"].update(producer_fatal=w.fatal, valid=False)
    return checked


def explain_duplicates(workloads: dict, nodes: Nodes, run_dir: str) -> None:
    """Each value the queue workload read twice, both copies as the stores hold them (duplicates.py),
    into `duplicates.json`; the counts per class into the result (`duplicated_by`). The gateways are
    stopped first: a running one keeps its newest ConsumeQueue units in memory, and a copy looked up
    there is not found ("unexplained"; seed 2614 had 464 such, all client re-sends on the stopped stores)."""
    w = workloads.get("queue")
    if not w or not w["result"]["duplicated"]:
        return
    killed = nodes.stop_gateways()
    if killed:  # killed, not stopped: their last units may be missing, so some copies may stay unexplained
        w["result"]["explained_killed"] = killed
    explained = explain({i: nodes.data_dir(i) for i in nodes.ids},
                        {i: os.path.join(run_dir, f"g{i}.log") for i in nodes.ids},
                        TOPIC, w["result"]["final_read"], w["history"], w["result"]["duplicated"])
    with open(os.path.join(run_dir, "duplicates.json"), "w") as f:
        json.dump(explained, f, indent=1)
    w["result"]["duplicated_by"] = summary(explained)
    reclassify(w["result"], explained)


def run(args, run_dir: str) -> tuple[dict, list[dict], str | None]:
    """Start the cluster, run the workloads under the nemesis, heal, check. (workloads, events, nemesis error)."""
    net = Network(["etcd", "g1", "g2", "g3"], args.prefix, args.subnet)
    nodes = Nodes(net, run_dir, gateways=3, ttl=args.ttl, replica_lag_ms=args.replica_lag_ms, flush=args.flush)
    plan = schedule(args.seed, args.rounds, nodes.ids, tuple(args.faults.split(",")))
    print(f"faults: seed {args.seed}, run dir {run_dir}, plan {[(s['fault'], s['target'], s['arg']) for s in plan]}",
          flush=True)
    nemesis = s3 = None
    diskless = bool({"diskless", "diskless-rocketmq"} & set(args.workloads.split(",")))
    try:
        net.create()
        nodes.start_etcd()
        if diskless:  # the bucket on the bridge's address: every gateway reaches it throughout (diskless.py)
            s3 = start_object_store(run_dir, net.client_addr)
            nodes.extra_args = gateway_args(s3)
        if "rocketmq-delay-txn" in args.workloads:  # check-backs every 5 s, not 30: a short run sees several
            nodes.extra_args = [*nodes.extra_args, *DELAY_TXN_ARGS]
        for i in nodes.ids:
            nodes.start_gateway(i)
        for topic, partitions in ((TOPIC, PARTITIONS), (TXN_TOPIC, TXN_PARTITIONS), (RMQ_TOPIC, RMQ_QUEUES),
                                  (JAVA_TOPIC, JAVA_PARTITIONS), (JAVA_RMQ_TOPIC, JAVA_PARTITIONS)):
            create_topic(nodes.bootstrap, topic, partitions)
        if diskless:
            for topic in (DISKLESS_TOPIC, DISKLESS_RMQ_TOPIC):
                create_topic(nodes.bootstrap, topic, PARTITIONS, config={"diskless.enable": "true"})
        if "java-" in args.workloads:
            compile_java(run_dir)
        if "rocketmq-delay-txn" in args.workloads:
            create_topic(nodes.bootstrap, DT_TOPIC, DT_QUEUES)
        if "go-rocketmq" in args.workloads:
            create_topic(nodes.bootstrap, GO_RMQ_TOPIC, GO_RMQ_QUEUES)
            rmqgo_binary()
        t0 = time.monotonic()
        loads = start_loads(args.workloads.split(","), nodes, t0, args.seed, run_dir)
        stop = threading.Event()
        threads = [load.start(stop) for load in loads.values()]
        wait_for_start([w for w in loads.values() if isinstance(w, ProcessWorkload)])  # the JVMs take seconds
        nemesis = Nemesis(nodes, plan, args.fault_s, args.heal_s, t0).start()
        nemesis.finished.wait()
        crashed = heal_everything(nodes)
        time.sleep(args.heal_s)
        stop.set()
        for t in threads:
            t.join()
        for load in loads.values():
            load.finish()
        with open(os.path.join(run_dir, "history.json"), "w") as f:  # kept even if a final read fails
            json.dump({"seed": args.seed, "plan": plan, "nemesis": nemesis.events,
                       "nemesis_error": None if nemesis.error is None else repr(nemesis.error),
                       "ops": {n: w.history for n, w in loads.items()}}, f)
        workloads = check_loads(loads, nodes, args.plant_loss, s3, run_dir, nemesis.events)
        leaders = check_leaders(nodes.kafka_addrs, [TOPIC, TXN_TOPIC, RMQ_TOPIC, JAVA_TOPIC, JAVA_RMQ_TOPIC]
                                + ([DISKLESS_TOPIC, DISKLESS_RMQ_TOPIC] if diskless else []))
        workloads["metadata"] = {"label": "metadata: every gateway's own Metadata answer, leaders after healing",
                                 "history": leaders.pop("history"), "result": leaders, "per_fault": False}
        explain_duplicates(workloads, nodes, run_dir)  # stops the gateways: the last step that needs them
        with open(os.path.join(run_dir, "history.json"), "w") as f:
            json.dump({"seed": args.seed, "plan": plan, "nemesis": nemesis.events, "workloads": workloads}, f)
        dead = [f"g{i} exited {code} (see g{i}.log)" for i, code in crashed if code != EXIT_DURABILITY_LOST]
        errors = ([] if nemesis.error is None else [repr(nemesis.error)]) + \
            ([f"gateways found dead after the schedule (crashed), restarted: {', '.join(dead)}"] if dead else [])
        stopped = [f"g{i}" for i, code in crashed if code == EXIT_DURABILITY_LOST]
        if stopped:  # a disk error stops a gateway (exit 3), as Kafka halts on a failed log dir: the contract
            workloads["metadata"]["result"]["disk_stops"] = stopped
        return workloads, nemesis.events, "; ".join(errors) or None
    finally:
        nodes.stop_all(keep_data=args.keep_data)
        if nemesis is not None:
            nemesis.release()
        if s3 is not None:
            s3.stop()
        cleanup(args.prefix)
        cleanup_mounts(args.prefix)


def notes_of(workloads: dict, nemesis_error: str | None) -> list[str]:
    notes = [f"Nemesis error: {nemesis_error}." if nemesis_error else "The nemesis ran its whole schedule."]
    notes += [f"{n}: producer fatal error: {w['result']['producer_fatal']}." for n, w in workloads.items()
              if w["result"].get("producer_fatal")]
    if workloads.get("queue", {}).get("result", {}).get("duplicated_by"):
        r = workloads["queue"]["result"]
        notes.append(f"queue: values read twice, by cause (duplicates.json): {r['duplicated_by']}; re-sent by the "
                     f"client under a new producer epoch (not a gateway anomaly): {len(r['client_resent'])}; "
                     f"looked up on the stopped stores" + (f" ({', '.join(r['explained_killed'])} had to be killed, "
                     "their last ConsumeQueue units may be missing)" if r.get("explained_killed") else "") + ".")
    if "diskless" in workloads:
        r = workloads["diskless"]["result"]
        notes.append(f"diskless: {r['index_entries']} index entries in the bucket, {len(r['fenced'])} fencing anomalies "
                     f"(gaps, overlaps, a batch committed twice); the fencing acted (gateway logs): "
                     f"{r.get('fencing_events')}; values read twice, by cause (duplicates-diskless.json, "
                     f"from the index): {r.get('duplicated_by') or 'none'}.")
    if "group" in workloads:
        r = workloads["group"]["result"]
        notes.append(f"group: commit ticks that sent nothing, by reason: {r['idle_ticks']}; poll errors: "
                     f"{r['poll_errors'] or 'none'}; consumers replaced after {STUCK_S:g} s out of the group, at "
                     f"(s): {r['replaced_at'] or 'none'}" + (f"; {r['unclosed']}" if r.get("unclosed") else "") + ".")
    if "txn" in workloads:
        r = workloads["txn"]["result"]
        notes.append(f"txn: {r['committed']} commits and {r['aborted']} aborts acknowledged; {r['read']} records "
                     f"read committed; partitions not read to their end (position, end): {r['not_read_to_end'] or 'none'}.")
    if "rocketmq-delay-txn" in workloads:
        r = workloads["rocketmq-delay-txn"]["result"]
        notes.append(f"rocketmq-delay-txn: delayed sends ok/fail/info {r['delay_ops']}, halves {r['txn_ops']} "
                     f"(ok by decision {r['txn_ok_by_decision']}); check-backs answered {r['check_backs']}; delivered "
                     f"early while a clock jump held on the storing gateway (the contract): {len(r['early_clock'])}; "
                     f"read twice: {len(r['redelivered'])}; delayed deliveries past due (s): {r['delay_wait_past_due_s']}; "
                     f"waited {r['settled_s']} s for the last deliveries.")
    r = workloads["metadata"]["result"]
    if r.get("disk_stops"):
        notes.append(f"Stopped on a disk error (exit 3, as Kafka halts on a failed log dir: docs/faults.md) and restarted at the end: "
                     f"{', '.join(r['disk_stops'])}.")
    notes.append(f"metadata: the gateways agreed on every leader {r['converged_s']} s after the final heal."
                 if r["converged_s"] is not None else f"metadata: no agreement: {r['disagree'][:5]}.")
    return notes


def counted(value):
    """A result's lists as their lengths (also inside `unplanted`), for the one-line summary."""
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return {k: len(v) for k, v in value.items()}
    return len(value) if isinstance(value, list) else value


def main(argv=None) -> int:
    args = parse(argv)
    try:
        require_root_and_netns()
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    unknown = (set(args.faults.split(",")) - set(FAULTS)) | (set(args.workloads.split(",")) - set(WORKLOADS + OPTIONAL))
    if unknown:
        print(f"faults: unknown fault classes or workloads {sorted(unknown)}", file=sys.stderr)
        return 2
    run_dir = args.run_dir or f"/tmp/rocketgate-faults/{args.seed}-{int(time.time())}"
    os.makedirs(run_dir, exist_ok=True)
    cleanup_mounts(args.prefix)
    started = time.monotonic()
    workloads, events, nemesis_error = run(args, run_dir)
    report.write(args.report, header(args, run_dir, time.monotonic() - started), workloads, events,
                 notes_of(workloads, nemesis_error), rerun_args(args))
    summary = {n: {k: counted(v) for k, v in w["result"].items()} for n, w in workloads.items()}
    print(json.dumps(summary), flush=True)
    return 0 if all(w["result"]["valid"] for w in workloads.values()) and nemesis_error is None else 1


if __name__ == "__main__":
    sys.exit(main())
