"""An election that loses to an in-sync set change (etcd's set no longer holds the chosen replica:
an in-sync write in the same epoch came after this gateway's view) is decided again from the view
once the watch has brought etcd's set. Before, coordination's ValueError escaped the cluster
service's nursery and ended the gateway: two of three gateways at once in the fault harness
(docs/faults.md, "Java workloads and the linearizability checker"). And a role change whose
leader-epoch checkpoint cannot be written stops the gateway as a failed flush does. The roles alone,
no process."""
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


class _FullDisk:
    roles: dict = {}

    def become_leader(self, *args, **kwargs):
        raise OSError(28, "No space left on device")  # the leader-epoch checkpoint's write


def test_a_role_change_that_cannot_write_its_epoch_stops_the_gateway_as_a_failed_flush(monkeypatch):
    """Before: the OSError escaped the etcd watch's callback and ended the process with a traceback
    (exit 1, seen under the fault harness's disk-full and fsync-error); now the exit of a failed
    flush (gateway.flush.durability_lost: one CRITICAL line, exit 3)."""
    stopped = []
    monkeypatch.setattr(replicas, "durability_lost", stopped.append, raising=False)
    node = _Node()
    node.node_id = 2
    node.view.members = {}

    async def main():
        async with trio.open_nursery() as nursery:
            roles = ReplicaRoles(node, manager=_FullDisk(), nursery=nursery)
            roles._addr = lambda r: f"10.0.0.{r}:9876"
            roles._role("t", 0, 2, [1, 2, 3], [2, 3], 5)
    trio.run(main)
    assert [e.errno for e in stopped] == [28]
