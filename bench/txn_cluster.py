"""The 3-gateway cluster target of the transaction anomaly checker (`python -m bench.txn_check --target
cluster`): three gateways on a private etcd (tests/cluster/clusters.py, 3 s leases). The workload's topic
is made first with replication factor 2 and every partition led by one of the two gateways that do not
coordinate transactional id `wl-0`; the faults hit that coordinator: `pause` SIGSTOPs it past its lease
(the others take its transactional ids over; it comes back fenced, then registers again), `kill9` kills
it and starts it again on its data once its lease has expired (a restart before would be refused).
With `victim="leader"` the faults hit a gateway that leads every partition instead (elections follow)."""
from __future__ import annotations

import os
import sys
import time

import trio
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import ROOT
from cluster.coordination import Coordination
from cluster.etcd import Etcd
from cluster.model import coordinator_of

sys.path.insert(0, os.path.join(ROOT, "tests"))  # gateway_process, as bench.cluster_bench
from tests.cluster.clusters import start_cluster  # noqa: E402

NODES = (1, 2, 3)
LEASE_TTL = 3
WATCHED_ID = "wl-0"


class TxnCluster:
    name = "cluster"

    def __init__(self, workdir: str, topic: str, partitions: int, victim: str = "coordinator",
                 layout: str = "kafka") -> None:
        self.workdir, self.topic, self.partitions, self.layout = workdir, topic, partitions, layout
        self.cluster = None
        coordinator = coordinator_of(WATCHED_ID, list(NODES))
        # "leader": the faults hit a gateway leading every partition instead (not wl-0's coordinator)
        self.victim = coordinator if victim == "coordinator" else min(n for n in NODES if n != coordinator)
        self.leads = victim == "leader"

    @property
    def bootstrap(self) -> str:
        return ",".join(g.kafka_bootstrap for g in self.cluster.gateways.values())

    def start(self) -> "TxnCluster":
        if self.cluster is not None:  # after kill9: the victim again, once etcd let its node id go
            time.sleep(LEASE_TTL + 2)
            self.cluster.gateways[self.victim].start()
            return self
        self.cluster = start_cluster(self.workdir, NODES, lease_ttl=LEASE_TTL,
                                     extra_args=["--cluster-txn-layout", self.layout])
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_topics([NewTopic(self.topic, self.partitions, 2)])[self.topic].result(30)
        others = [n for n in NODES if n != self.victim]
        trio.run(self._place, [self.victim, others[0]] if self.leads else others)
        time.sleep(1)  # every gateway's watch has the placement
        return self

    async def _place(self, others: list[int]) -> None:
        etcd = Etcd.from_url(self.cluster.etcd.url)
        try:
            for q in range(self.partitions):
                await Coordination(etcd).reassign(self.topic, q, others if q % 2 == 0 else others[::-1])
        finally:
            await etcd.aclose()

    def pids(self) -> list[int]:
        return [self.cluster.gateways[self.victim].proc.pid]

    def kill9(self) -> None:
        self.cluster.gateways[self.victim].kill9()

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
