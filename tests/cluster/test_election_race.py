"""An election that loses to an in-sync set change (etcd's set no longer holds the chosen replica:
an in-sync write in the same epoch came after this gateway's view) is decided again from the view
once the watch has brought etcd's set. Before, coordination's ValueError escaped the cluster
service's nursery and ended the gateway: two of three gateways at once in the fault harness
(docs/faults.md, "Java workloads and the linearizability checker"). The roles alone, no process."""
from __future__ import annotations

import trio

import gateway.cluster.replicas as replicas
from cluster.model import QueueAssignment
from gateway.cluster.replicas import ReplicaRoles


class _View:
    def __init__(self) -> None:
        self.queues = {("t", 0): QueueAssignment(1, (1, 2, 3), (1, 2, 3), 4)}  # leader 1 is gone

    def live(self):
        return [2, 3]


class _Etcd:
    """etcd's own in-sync set is [3]: 2 fell out (same epoch) after the view above."""

    def __init__(self, view: _View) -> None:
        self.view, self.proposed = view, []

    async def elect_leader(self, topic, qid, leader, expected_epoch):
        self.proposed.append(leader)
        if leader != 3:
            self.view.queues[(topic, qid)] = QueueAssignment(1, (1, 2, 3), (3,), 4)  # the watch catches up
            raise ValueError(f"node {leader} is not in the in-sync set [3]")
        return QueueAssignment(3, (1, 2, 3), (3,), 5)


class _Node:
    def __init__(self) -> None:
        self.view = _View()
        self.coordination = _Etcd(self.view)


def test_an_election_lost_to_an_in_sync_change_is_decided_again_not_fatal(monkeypatch):
    monkeypatch.setattr(replicas, "ELECTION_RETRY_S", 0.01, raising=False)
    node = _Node()

    async def main():
        async with trio.open_nursery() as nursery:
            roles = ReplicaRoles(node, manager=None, nursery=nursery)
            roles._elect_where_leader_left()
    trio.run(main)
    assert node.coordination.proposed == [2, 3]
