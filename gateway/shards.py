"""`python -m gateway --shards N`: one gateway process per core (docs/shards.md). The supervisor starts
a private etcd (under DATA_DIR/etcd) and N shards, each a gateway of a local cluster with its own store
(DATA_DIR/shard-<i>, node id i + 1), pinned to one core; with `--cluster etcd://...` no private etcd:
the shards join that cluster as its members, node ids --node-id + i. Shard 0 takes the configured
ports (9092, 9876, ...), the others free ports the OS picks at the supervisor's start, kept across
restarts. The cluster places each queue on one shard (replication factor 1 by default: a shard owns
its queues). A shard that ends by itself is started again (backoff 1 s doubling to 30 s; reset once
it ran 60 s); SIGTERM or SIGINT stop the whole tree (each shard flushes) and the supervisor exits 0.
A one-process gateway's data dir is moved into shard-0 first (gateway.shard_data)."""
from __future__ import annotations

import dataclasses
import json
import os
import secrets
import signal
import subprocess
import sys
import time

import trio

from cluster.etcd import Etcd, EtcdError
from cluster.etcd_server import EtcdServer
from cluster.model import member_key
from gateway.cluster import shared_security
from gateway.config import GatewayConfig
from gateway.data_dir import DataDirError, take
from gateway.process_tree import Stop, die_with_parent, free_port, stop_all
from gateway.shard_data import SHARED_TABLES, ShardDataError, move_into_shard_0

FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
HEALTHY_AFTER_S = 60.0  # a shard that ran this long starts again without waiting
INTER_BROKER_FILE = "inter-broker.json"  # in DATA_DIR: the private cluster's inter-broker credential
ETCD_URL_FILE = "etcd-url"  # in DATA_DIR while the private etcd runs: `rocketgate cluster ... --data-dir DATA_DIR`
_PORT_FLAGS = {"kafka_port": "--kafka-port", "remoting_port": "--remoting-port", "grpc_port": "--grpc-port",
               "http_port": "--http-port", "schema_registry_port": "--schema-registry-port"}


class ShardsError(Exception):
    """The shards cannot start; the message is the one line to print."""


@dataclasses.dataclass
class Shard:
    index: int
    node_id: int
    command: list[str]
    core: int
    ports: dict[str, int]
    proc: subprocess.Popen | None = None
    started: float = 0.0
    backoff: float = FIRST_BACKOFF_S
    restart_at: float = 0.0

    def start(self) -> None:
        core = self.core

        def pin_and_die_with_parent() -> None:
            die_with_parent()
            try:
                os.sched_setaffinity(0, {core})
            except OSError:
                pass  # the core left our affinity set: run unpinned rather than not at all

        self.proc = subprocess.Popen(self.command, preexec_fn=pin_and_die_with_parent)
        self.started = time.monotonic()


def check(config: GatewayConfig) -> None:
    """What the shards do not support yet: ShardsError."""
    if config.cluster is not None and config.node_id < 1:
        raise ShardsError("--shards with --cluster needs --node-id B >= 1: shard i is node B + i of the cluster "
                          "(docs/shards.md)")
    if config.listeners:
        raise ShardsError("--shards with --listener is not supported yet (docs/shards.md)")


class PortPicker:
    """Free ports for the other shards and the private etcd, each handed out once and never one of
    the configured ports: those are shard 0's, not bound yet when the supervisor picks, so the OS
    may offer one of them (or one port twice in a row); two listeners on one port would crash-loop
    the later shard."""

    def __init__(self, config: GatewayConfig) -> None:
        self.host = config.host
        self.taken = {getattr(config, field) for field in _PORT_FLAGS} - {None}

    def __call__(self, host: str | None = None) -> int:
        while True:
            port = free_port(host or self.host)
            if port not in self.taken:
                self.taken.add(port)
                return port


def shard_ports(config: GatewayConfig, index: int, pick: PortPicker) -> dict[str, int]:
    """Shard 0: the configured ports; another shard: a free port for each port the configuration opens."""
    ports = {}
    for field in _PORT_FLAGS:
        port = getattr(config, field)
        if port is not None:
            ports[field] = port if index == 0 else pick()
    return ports


def without_shards(argv: list[str]) -> list[str]:
    """The user's arguments less --shards (a pinned shard sees one core: N > 1 would not parse there)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--shards":
            skip = True
        elif not arg.startswith("--shards="):
            out.append(arg)
    return out


def metrics_peers(config: GatewayConfig, ports: list[dict[str, int]]) -> list[str]:
    """Shard 0's --shard-metrics: the other shards' HTTP host:port (none without --http-port)."""
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    host = f"[{host}]" if ":" in host else host
    return [f"{host}:{p['http_port']}" for p in ports[1:] if "http_port" in p]


def shard_node_id(config: GatewayConfig, index: int) -> int:
    """Shard i's node id: i + 1 in the private cluster, --node-id + i in a --cluster of many machines."""
    return config.node_id + index if config.cluster is not None else index + 1


def shard_command(config: GatewayConfig, argv: list[str], index: int, ports: dict[str, int],
                  cluster_url: str, peers: list[str] = ()) -> list[str]:
    """The user's arguments, then this shard's (argparse keeps the last value of an option)."""
    cmd = [sys.executable, "-m", "gateway", *without_shards(argv),
           "--data-dir", os.path.join(config.data_dir, f"shard-{index}"),
           "--node-id", str(shard_node_id(config, index)),
           "--cluster", cluster_url, "--advertised-host", config.advertised_host or config.host,
           "--shared-security"]
    for field, port in ports.items():
        cmd += [_PORT_FLAGS[field], str(port)]
    if index == 0 and peers:
        cmd += ["--shard-metrics", ",".join(peers)]
    if config.cluster is None:  # the private cluster: each %DLQ% topic on one shard (gateway.cluster.dead_letters)
        cmd += ["--whole-dlq"]
    if config.tier_url is None and config.cluster is None:  # one table catalog for the shards of this machine
        cmd += ["--shared-tables", os.path.join(config.data_dir, SHARED_TABLES)]
    return cmd


def private_inter_broker(config: GatewayConfig) -> list[str]:
    """With --authorizer acl, the private etcd and no --inter-broker-credentials: the flag naming a
    credential made once for this data dir (a random secret, DATA_DIR/inter-broker.json, mode 0600).
    The shards are a cluster, which with ACLs needs one to sign their forwards (docs/security.md);
    the user configured one gateway, not a cluster, so the supervisor provides it. Else no flag."""
    if config.cluster is not None or config.authorizer != "acl" or config.inter_broker is not None:
        return []
    path = os.path.join(config.data_dir, INTER_BROKER_FILE)
    if not os.path.exists(path):
        staging = path + ".tmp"
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"accessKey": "rg-shards", "secretKey": secrets.token_urlsafe(32)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(staging, path)
    return ["--inter-broker-credentials", path]


def release_member(etcd_url: str, node_id: int) -> None:
    """Revoke a dead shard's etcd lease, so its restart registers at once instead of waiting for the
    lease to expire (--cluster-lease-ttl). Safe: the supervisor has reaped the process that held it."""
    async def revoke() -> None:
        etcd = Etcd.from_url(etcd_url)
        try:
            kv = await etcd.get(member_key(node_id))
            if kv is not None and kv.lease:
                await etcd.lease_revoke(kv.lease)
        finally:
            await etcd.aclose()
    try:
        trio.run(revoke)
    except (EtcdError, OSError) as exc:
        print(f"shards: could not release node {node_id}'s lease ({exc}); it expires by itself",
              file=sys.stderr, flush=True)


def seed_security(etcd_url: str, data_dir: str) -> None:
    """Shard 0's users and ACLs into etcd unless it has some: the one set every shard takes
    (gateway.cluster.shared_security). A failure leaves it to the shards (each publishes its own
    files where etcd has none)."""
    try:
        shared_security.seed_sync(etcd_url, os.path.join(data_dir, "shard-0", "config"))
    except (EtcdError, OSError) as exc:
        print(f"shards: could not seed the shared users and ACLs ({exc})", file=sys.stderr, flush=True)


def _restart_dead(shards: list[Shard], now: float, etcd_url: str) -> None:
    for shard in shards:
        if shard.proc is None:
            if now >= shard.restart_at:
                print(f"shards: starting shard {shard.index} again", file=sys.stderr, flush=True)
                shard.start()
            continue
        status = shard.proc.poll()
        if status is None:
            continue
        if now - shard.started >= HEALTHY_AFTER_S:
            shard.backoff = FIRST_BACKOFF_S
        print(f"shards: shard {shard.index} (pid {shard.proc.pid}) ended with status {status}; "
              f"starting it again in {shard.backoff:g} s", file=sys.stderr, flush=True)
        release_member(etcd_url, shard.node_id)
        shard.proc, shard.restart_at = None, now + shard.backoff
        shard.backoff = min(shard.backoff * 2, MAX_BACKOFF_S)


def main(config: GatewayConfig, argv: list[str]) -> int:
    stop = Stop()
    try:
        check(config)
        lock = take(config.data_dir, what="shard supervisor")
    except (ShardsError, DataDirError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        moved = move_into_shard_0(config.data_dir)
    except (ShardDataError, OSError) as exc:
        lock.release()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if moved:
        print(f"shards: moved the one-process store of {config.data_dir} into shard-0 ({len(moved)} entries); "
              f"its topics stay on shard 0, new ones spread over every shard", flush=True)
    pick = PortPicker(config)
    etcd = None
    if config.cluster is None:  # a private etcd; with --cluster the shards join that one
        etcd = EtcdServer(os.path.join(config.data_dir, "etcd"), pick("127.0.0.1"), pick("127.0.0.1"),
                          preexec_fn=die_with_parent)
    cores = sorted(os.sched_getaffinity(0))
    shards: list[Shard] = []
    try:
        if etcd is not None:
            etcd.start()
            with open(os.path.join(config.data_dir, ETCD_URL_FILE), "w") as f:
                f.write(etcd.url + "\n")
        etcd_url = etcd.url if etcd is not None else config.cluster
        argv = [*argv, *private_inter_broker(config)]
        seed_security(etcd_url, config.data_dir)
        ports = [shard_ports(config, index, pick) for index in range(config.shards)]
        peers = metrics_peers(config, ports)
        for index in range(config.shards):
            shards.append(Shard(index, shard_node_id(config, index),
                                shard_command(config, argv, index, ports[index], etcd_url, peers),
                                cores[index % len(cores)], ports[index]))
        for shard in shards:
            if stop.signal is not None:
                break
            shard.start()
            ports = ", ".join(f"{f.removesuffix('_port')} {p}" for f, p in shard.ports.items())
            print(f"shard {shard.index}: node {shard.node_id}, core {shard.core}, {ports}", flush=True)
        while not stop.sleep(0.2):  # a terminal's Ctrl-C reaches the shards too: the flag comes first
            _restart_dead(shards, time.monotonic(), etcd_url)
        print(f"received {signal.Signals(stop.signal).name}, stopping the shards", flush=True)
        return 0
    finally:
        stop_all([s.proc for s in shards if s.proc is not None], etcd)
        if etcd is not None:
            try:
                os.unlink(os.path.join(config.data_dir, ETCD_URL_FILE))
            except FileNotFoundError:
                pass
        lock.release()
