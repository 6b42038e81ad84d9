"""Local clusters on free loopback ports, for tests/cluster and bench.cluster_bench: a private etcd
with one gateway process per node id (`start_cluster`), and Apache Kafka KRaft nodes formatted to
run side by side on this machine (`kraft_nodes`, to check a cluster test against the real thing)."""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import uuid

import waiting
from cluster.etcd_server import EtcdServer
from gateway_process import GatewayProcess, free_port, stop_all, wait_port

NODES = (1, 2, 3)


def require_etcd() -> None:
    """Skip the calling test when Debian's etcd-server is not installed."""
    if shutil.which("etcd") is None:
        import pytest
        pytest.skip("etcd not installed (make setup installs etcd-server)")


def start_etcd(base) -> EtcdServer:
    return EtcdServer(os.path.join(str(base), "etcd"), free_port(), free_port()).start()


class Cluster:
    """A started etcd and its gateways by node id; `stop` ends them all."""

    def __init__(self, etcd: EtcdServer, gateways: dict[int, GatewayProcess]) -> None:
        self.etcd, self.gateways = etcd, gateways

    @property
    def bootstrap(self) -> str:
        return ",".join(g.kafka_bootstrap for g in self.gateways.values())

    def stop(self) -> None:
        stop_all([*self.gateways.values(), self.etcd])  # etcd too when a gateway fails to stop


def wait_for(fn, timeout: float = 20.0, what: str = "condition"):
    """fn()'s first true value, polled every 0.1 s; AssertionError naming `what` after `timeout`."""
    return waiting.wait_for(fn, timeout, what, interval=0.1)


def start_cluster(base, nodes=NODES, extra_args=(), lease_ttl: int | None = 3, etcd: EtcdServer | None = None,
                  cluster_urls: dict[int, str] | None = None, gateway=GatewayProcess) -> Cluster:
    """etcd (base/etcd; or the one given) and one `gateway` per node id (data dir base/node<n>),
    advertised on 127.0.0.1 with the lease TTL given (None: the gateway's default). `cluster_urls`
    overrides a node's --cluster URL (a proxy in front of etcd). Whatever started is stopped again
    when a start fails."""
    os.makedirs(str(base), exist_ok=True)
    etcd = etcd or start_etcd(base)
    cluster = Cluster(etcd, {})
    ttl = ["--cluster-lease-ttl", str(lease_ttl)] if lease_ttl is not None else []
    try:
        for n in nodes:
            url = (cluster_urls or {}).get(n, etcd.url)
            cluster.gateways[n] = gateway(os.path.join(str(base), f"node{n}"), extra_args=[
                "--cluster", url, "--node-id", str(n), "--advertised-host", "127.0.0.1", *ttl, *extra_args]).start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


class KraftNode(GatewayProcess):
    """One formatted Apache Kafka node (broker and controller roles): stopped, killed and restarted
    as a gateway process is."""

    def __init__(self, node_id: int, kafka_port: int, cmd: list[str], workdir: str) -> None:
        self.node_id, self.kafka_port, self.cmd, self.data_dir = node_id, kafka_port, cmd, workdir
        self.log_path = os.path.join(workdir, "out.log")
        self.proc: subprocess.Popen | None = None
        self.signalled: subprocess.Popen | None = None  # (GatewayProcess.terminate's)

    def launch(self) -> "KraftNode":
        """Run it without waiting: a KRaft node opens its listener only once a quorum of voters is up."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT)
        return self

    def start(self, timeout: float = 180) -> "KraftNode":
        self.launch()
        try:
            wait_port(self.kafka_port, timeout, proc=self.proc)
        except BaseException:
            self.stop()
            raise
        return self

    STOPS_SIDE_BY_SIDE = False  # a broker's controlled shutdown needs the controller quorum up

    def stop(self, timeout: float = 30) -> int | None:
        return super().stop(timeout)


def kraft_nodes(classpath: str, base: str, size: int = 3, extra_props: dict | None = None) -> dict[int, KraftNode]:
    """`size` Kafka KRaft nodes (ids 1..size, all voters) formatted under base/kafka<n> with one
    cluster id, on free loopback ports; not started (launch them together, then wait)."""
    ports = {n: (free_port(), free_port()) for n in range(1, size + 1)}
    voters = ",".join(f"{n}@127.0.0.1:{c}" for n, (_, c) in ports.items())
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    java = [shutil.which("java") or "java", "-Xms256m", "-Xmx256m", "-XX:+UseSerialGC"]
    nodes = {}
    for n, (port, ctrl) in ports.items():
        work = os.path.join(base, f"kafka{n}")
        os.makedirs(work)
        props = {"process.roles": "broker,controller", "node.id": n, "controller.quorum.voters": voters,
                 "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctrl}",
                 "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
                 "inter.broker.listener.name": "PLAINTEXT",
                 "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "log.dirs": os.path.join(work, "logs"), "offsets.topic.replication.factor": 1,
                 "offsets.topic.num.partitions": 3, "transaction.state.log.replication.factor": 1,
                 "transaction.state.log.min.isr": 1, "group.initial.rebalance.delay.ms": 0, **(extra_props or {})}
        config = os.path.join(work, "server.properties")
        with open(config, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in props.items())
        subprocess.run([*java, "-cp", classpath, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                        "-c", config], check=True, capture_output=True, timeout=180)
        nodes[n] = KraftNode(n, port, [*java, f"-Dkafka.logs.dir={work}", "-cp", classpath, "kafka.Kafka", config],
                             work)
    return nodes


def start_kraft(nodes: dict[int, KraftNode], timeout: float = 180) -> None:
    """Launch every node, then wait for each listener (one opens only once a quorum of voters is up)."""
    for node in nodes.values():
        node.launch()
    for node in nodes.values():
        wait_port(node.kafka_port, timeout)
