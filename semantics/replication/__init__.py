"""Replication of queues between gateways (docs/internals.md, "Replication"): roles, leader epochs,
the in-sync set, the high watermark, and the follower's copy loop. The cluster layer decides the
roles (`ReplicaManager.become_leader` / `become_follower` / `stop_replica`) and persists ISR changes
(`on_isr_change`); the gateway carries the fetches (gateway.remoting.replica_fetch)."""
from semantics.replication.contract import (FetchAnswer, FetchRequest, NodeAddress, NotLeader, ReplicaTransport,
                                            StaleEpoch)
from semantics.replication.follower import Follower
from semantics.replication.manager import DEFAULT_LAG_TIME_MS, FOLLOWER, LEADER, ReplicaManager

__all__ = ["DEFAULT_LAG_TIME_MS", "FOLLOWER", "LEADER", "FetchAnswer", "FetchRequest", "Follower", "NodeAddress",
           "NotLeader", "ReplicaManager", "ReplicaTransport", "StaleEpoch"]
