"""`python -m bench.cluster_produce_parse`: what the second parse of every cluster Produce costs. A
gateway in a cluster parses each partition's batches once more before the write turn, to find the
transactional ones and check their producer against etcd (`ClusterTxns.verify`, gateway/cluster/txns.py).

Two 1-member clusters run side by side, each a gateway with `--cluster` on its own etcd: "with" runs
this tree, "without" a copy of it (`git archive HEAD`) whose `verify` returns at once for a request
without a transactional id: the pass gone entirely, an upper bound of what any cheaper check saves.
Non-transactional Produce v9, acks=1, from the repo's raw client, one request at a time, in rounds
interleaved as bench.kafka_versions does; the gateway process's CPU (/proc) per GB of payload. Two
request shapes: one batch of 16 × 1 KiB records, and one record of 100 B (the pass's worst case:
per-request costs dominate)."""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time

from bench.brokers import ROOT, Gateway
from bench.kafka_versions import interleave, produce, save, topic_id
from bench.scenarios import create_topics
from cluster.etcd_server import EtcdServer
from codec.kafka import records
from gateway.process_tree import free_port
from tests.kafka.kafka_raw import RawClient

VERIFY_DOC_END = "partition's error.\"\"\"\n"
SKIP = "        if not txn_id:  # bench.cluster_produce_parse's 'without' variant\n            return NONE_ERR\n"
SHAPES = {"16 × 1 KiB per request": (16, 1024, 150), "1 × 100 B per request": (1, 100, 300)}  # (~1 s runs)


def without_tree(dst: str) -> str:
    """This tree's HEAD at `dst`, its verify answering at once when no transactional id is given."""
    os.makedirs(dst)
    archive = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dst], input=archive, check=True)
    path = os.path.join(dst, "gateway", "cluster", "txns.py")
    with open(path) as f:
        text = f.read()
    at = text.index("async def verify(")
    at = text.index(VERIFY_DOC_END, at) + len(VERIFY_DOC_END)
    with open(path, "w") as f:
        f.write(text[:at] + SKIP + text[at:])
    return dst


def member(work: str, name: str, tree: str) -> tuple[EtcdServer, Gateway]:
    etcd = EtcdServer(os.path.join(work, f"etcd-{name}"), free_port(), free_port()).start()
    gw = Gateway(os.path.join(work, name), tree=tree, extra_args=[
        "--cluster", etcd.url, "--node-id", "1", "--advertised-host", "127.0.0.1"])
    try:
        gw.start()
    except BaseException:
        etcd.stop()
        raise
    return etcd, gw


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cluster_produce_parse", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    args = p.parse_args(argv)
    load, values = [os.getloadavg()], {}
    print(f"load average at start: {load[0]}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-cluster-parse-") as work:
        trees = {"with": ROOT, "without": without_tree(os.path.join(work, "tree-without"))}
        started = []
        try:
            for name, tree in trees.items():
                started.append(member(work, name, tree))
            gws = {name: gw for name, (_etcd, gw) in zip(trees, started)}
            clients, topics, ids = {}, {}, {}
            for name, gw in gws.items():
                topics[name] = f"parse-{int(time.time())}"
                create_topics(gw.bootstrap, [topics[name]], 1)
                clients[name] = RawClient(gw.bootstrap, timeout=60)
                ids[name] = topic_id(clients[name], topics[name])
            now = int(time.time() * 1000)
            for shape, (count, size, requests) in SHAPES.items():
                batch = records.build_batch([(now, None, os.urandom(size), []) for _ in range(count)],
                                            base_timestamp=now)
                values[shape] = interleave(f"cluster produce, {shape}", {
                    name: (gw, lambda name=name: produce(clients[name], topics[name], ids[name], 9, batch,
                                                         requests, count, size))
                    for name, gw in gws.items()}, args.rounds)
            for c in clients.values():
                c.close()
        finally:
            for etcd, gw in started:
                gw.stop()
                etcd.stop()
    load.append(os.getloadavg())
    print(f"load average at the end: {load[-1]}", flush=True)
    save("cluster-produce-parse", {"rounds": args.rounds, "load": load}, values)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
