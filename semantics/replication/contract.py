"""The replication contract between the cluster layer, the data path and the transport.

A node is named by its remoting address, `NodeAddress` = "host:port" (the listener replicas fetch
from). The cluster layer (assignment in etcd) drives `ReplicaManager.become_leader` /
`become_follower` / `stop_replica` and persists what `on_isr_change` reports; the transport (the
private remoting requests of gateway.remoting.replica_fetch) carries `FetchRequest` / `FetchAnswer`
and the epoch-end exchange.
"""
from __future__ import annotations

import dataclasses
from typing import Protocol

NodeAddress = str  # "host:port" of a gateway's remoting listener

# Errors a fetch or epoch-end answer carries (Kafka's names).
NONE = ""
NOT_LEADER = "NOT_LEADER_OR_FOLLOWER"  # the asked node does not lead this queue
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"  # the asker's epoch is older than the leader's
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"  # the asker's epoch is newer: the asked leader is stale
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"  # the fetch offset is past the leader's log end or below its start


class StaleEpoch(Exception):
    """A role change with an epoch older than the one this node already knows for the queue."""


class NotLeader(Exception):
    """A write waited for replication on a queue this node no longer leads (or was fenced on)."""


@dataclasses.dataclass(slots=True)
class FetchRequest:
    topic: str
    queue_id: int
    offset: int  # the follower's log end: it holds every entry before it
    epoch: int  # the leader epoch the follower believes in
    replica: NodeAddress  # the follower's own address (its id in the ISR)
    max_bytes: int = 1 << 20
    max_wait_ms: int = 500
    high_watermark: int = 0  # the follower's: the leader answers at once when its own is higher


@dataclasses.dataclass(slots=True)
class FetchAnswer:
    error: str
    epoch: int = -1  # the leader's epoch
    high_watermark: int = 0
    log_end: int = 0  # the leader's log end (after an OFFSET_OUT_OF_RANGE: where to truncate)
    entries: list = dataclasses.field(default_factory=list)  # StoredMessage, in queue order
    epochs: list = dataclasses.field(default_factory=list)  # the leader's [(epoch, start offset)]
    log_start: int = 0  # the leader's log start (after an OFFSET_OUT_OF_RANGE below it: where to start)


class ReplicaTransport(Protocol):
    """How a follower reaches its leader (gateway.remoting.replica_client implements it)."""

    async def fetch(self, leader: NodeAddress, request: FetchRequest) -> FetchAnswer: ...

    async def epoch_end(self, leader: NodeAddress, topic: str, queue_id: int, epoch: int,
                        replica: NodeAddress, current_epoch: int) -> tuple[str, int, int]:
        """(error, epoch, end offset): OffsetsForLeaderEpoch for one queue; `current_epoch` is the
        asker's (a leader in another epoch answers an error, as for a fetch)."""
        ...
