"""`rocketgate cluster ...`: the cluster as etcd holds it (members, a topic's assignment) and an
operator's reassignment of a queue (docs/cluster.md). Talks to etcd directly (--etcd)."""
from __future__ import annotations

import os
import sys

import trio

import gateway.cluster.move as queue_move
from cluster.coordination import Coordination
from cluster.etcd import Etcd, EtcdError
from gateway.admin.endpoints import AdminError
from gateway.shards import ETCD_URL_FILE


def _with_etcd(url: str, fn):
    async def main():
        try:
            etcd = Etcd.from_url(url)
        except ValueError as exc:
            raise AdminError(str(exc)) from None
        try:
            return await fn(Coordination(etcd))
        except EtcdError as exc:
            raise AdminError(str(exc)) from None
        finally:
            await etcd.aclose()
    return trio.run(main)


def members(args):
    async def fn(c: Coordination):
        found, *_ = await c.load()
        return [{"node": m.node_id, "host": m.host, "kafka_port": m.kafka_port, "remoting_port": m.remoting_port}
                for _, m in sorted(found.items())]
    return _with_etcd(_etcd_url(args), fn), ["node", "host", "kafka_port", "remoting_port"]


def assignment(args):
    async def fn(c: Coordination):
        _, topics, queues, _, _ = await c.load()
        if args.topic not in topics:
            raise AdminError(f"topic {args.topic!r} has no assignment in the cluster")
        return [{"topic": args.topic, "queue": q, "leader": a.leader, "replicas": ",".join(map(str, a.replicas)),
                 "isr": ",".join(map(str, a.isr)), "epoch": a.epoch}
                for q in range(topics[args.topic].queues) if (a := queues.get((args.topic, q))) is not None]
    return _with_etcd(_etcd_url(args), fn), ["topic", "queue", "leader", "replicas", "isr", "epoch"]


def reassign(args):
    try:
        replicas = [int(n) for n in args.replicas.split(",") if n.strip()]
    except ValueError:
        raise AdminError(f"--replicas {args.replicas!r}: node ids separated by commas") from None
    if not replicas or len(set(replicas)) != len(replicas):
        raise AdminError("--replicas needs distinct node ids, the new leader first")

    async def fn(c: Coordination):
        live, *_ = await c.load()
        missing = [n for n in replicas if n not in live]
        if missing:
            raise AdminError(f"node(s) {missing} are not live members")
        try:
            a = await c.reassign(args.topic, args.queue, replicas)
        except KeyError as exc:
            raise AdminError(str(exc.args[0])) from None
        return {"topic": args.topic, "queue": args.queue, "leader": a.leader, "replicas": list(a.replicas),
                "epoch": a.epoch}
    return _with_etcd(_etcd_url(args), fn), None


def move(args):
    def progress(step, a):
        print(f"{args.topic}/{args.queue}: {step} (leader {a.leader}, replicas {list(a.replicas)}, "
              f"in sync {list(a.isr)}, epoch {a.epoch})", file=sys.stderr, flush=True)

    async def fn(c: Coordination):
        a = await queue_move.move(c, args.topic, args.queue, args.to, args.timeout, progress)
        return {"topic": args.topic, "queue": args.queue, "leader": a.leader, "replicas": list(a.replicas),
                "epoch": a.epoch}
    return _with_etcd(_etcd_url(args), fn), None


def _etcd_url(args) -> str:
    """--etcd, or the private etcd of `--shards N` on --data-dir (the supervisor writes its URL there)."""
    if args.data_dir is None:
        return args.etcd
    try:
        with open(os.path.join(args.data_dir, ETCD_URL_FILE)) as f:
            return f.read().strip()
    except OSError as exc:
        raise AdminError(f"{args.data_dir} has no running shards' etcd ({exc.strerror}): start "
                         f"python -m gateway --shards N --data-dir {args.data_dir}") from None


def add_commands(nouns, command, parser_class, env) -> None:
    """The `cluster` noun of gateway.admin.cli."""
    verbs = nouns.add_parser("cluster", help="members and queue assignment (etcd)").add_subparsers(
        dest="verb", required=True, parser_class=parser_class)
    for name, fn, text in (("members", members, "the live gateways"),
                           ("assignment", assignment, "a topic's queues: leader, replicas, in-sync, epoch"),
                           ("reassign", reassign, "set a queue's replicas: --replicas 2,1 (the first leads)"),
                           ("move", move, "move a queue with its data to node --to (copied, then led there)")):
        p = command(verbs, name, fn, text)
        p.add_argument("--etcd", default=env("ROCKETGATE_CLUSTER", "etcd://127.0.0.1:2379"),
                       help="the cluster's etcd, etcd://HOST:PORT[,HOST:PORT] (env ROCKETGATE_CLUSTER)")
        p.add_argument("--data-dir", help="the data dir of python -m gateway --shards N: its private etcd "
                                          "(instead of --etcd)")
        if name != "members":
            p.add_argument("topic")
        if name in ("reassign", "move"):
            p.add_argument("queue", type=int)
        if name == "move":
            p.add_argument("--to", type=int, required=True, help="the node id that leads the queue afterwards "
                           "(shard i of --shards N: node i + 1)")
            p.add_argument("--timeout", type=float, default=60.0, help="seconds for --to to copy the queue")
        if name == "reassign":
            p.add_argument("--replicas", required=True, help="node ids, the new leader first")
