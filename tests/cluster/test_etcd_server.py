"""The private single-member etcd (`cluster.etcd_server`: `--shards`, `gateway.local_cluster`, tests)
runs on one Go P (GOMAXPROCS=1): it serves a few keys, and more Ps only let Go's scheduler spin on a
machine whose cores belong to the shards (docs/performance.md, "Shards": idle CPU 0.30 -> 0.22 %)."""
from __future__ import annotations


def test_private_etcd_runs_on_one_core(etcd_server):
    with open(f"/proc/{etcd_server.proc.pid}/environ", "rb") as f:
        env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    assert env.get(b"GOMAXPROCS") == b"1"
