"""`python -m gateway.local_cluster --nodes N`: a local cluster on one machine (docs/cluster.md): one
private etcd and N gateways (node ids 1..N, Kafka ports 9092.., remoting ports 9876..), each with its
own data dir under --base-dir, until Ctrl-C or SIGTERM, which stop the whole tree. Extra arguments
after `--` go to every gateway."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from cluster.etcd_server import EtcdServer
from gateway.process_tree import Stop, die_with_parent, stop_all


def _args(argv):
    p = argparse.ArgumentParser(prog="python -m gateway.local_cluster", description=__doc__)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--base-dir", default="./cluster-data")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--kafka-port", type=int, default=9092, help="of node 1; node i gets this + i - 1")
    p.add_argument("--remoting-port", type=int, default=9876, help="of node 1; node i gets this + i - 1")
    p.add_argument("--etcd-port", type=int, default=2379, help="etcd's client port (its peer port is + 1)")
    p.add_argument("gateway_args", nargs="*", help="more arguments for every gateway (after --)")
    return p.parse_args(argv)


def gateway_command(args, node: int, cluster_url: str) -> list[str]:
    return [sys.executable, "-m", "gateway", "--data-dir", os.path.join(args.base_dir, f"node{node}"),
            "--host", args.host, "--kafka-port", str(args.kafka_port + node - 1),
            "--remoting-port", str(args.remoting_port + node - 1), "--cluster", cluster_url,
            "--node-id", str(node), "--advertised-host", args.host, *args.gateway_args]


def main(argv=None) -> int:
    stop = Stop()
    args = _args(argv)
    os.makedirs(args.base_dir, exist_ok=True)
    etcd = EtcdServer(os.path.join(args.base_dir, "etcd"), args.etcd_port, args.etcd_port + 1,
                      preexec_fn=die_with_parent)
    gateways: list[subprocess.Popen] = []
    try:
        etcd.start()
        print(f"etcd: {etcd.url} (log {etcd.log_path})", flush=True)
        for node in range(1, args.nodes + 1):
            if stop.signal is not None:
                break
            gateways.append(subprocess.Popen(gateway_command(args, node, etcd.url), preexec_fn=die_with_parent))
            print(f"node {node}: kafka {args.host}:{args.kafka_port + node - 1}, "
                  f"remoting {args.host}:{args.remoting_port + node - 1}", flush=True)
        print("Ctrl-C (or SIGTERM) stops the cluster", flush=True)
        while not stop.sleep(0.2):  # a terminal's Ctrl-C reaches the gateways too: the flag comes first
            if any(g.poll() is not None for g in gateways):
                return 1  # a gateway ended by itself: its log says why
        print(f"received {signal.Signals(stop.signal).name}, stopping the cluster", flush=True)
        return 0
    finally:
        stop_all(gateways, etcd)


if __name__ == "__main__":
    sys.exit(main())
