"""How a cluster keeps a copy of a Kafka transaction's end from acting on the producer's next one
(docs/cluster-txn-layout.md, "Late ends"). Under transactions v1 every transaction of a producer has
the same producer id and epoch, so neither an EndTxn nor a marker names the transaction it is for.

- **A retried EndTxn is answered, not held** (Kafka's coordinator): while its end is decided but not
  complete (PrepareCommit / PrepareAbort in etcd) it gets CONCURRENT_TRANSACTIONS at once (either
  outcome, as Kafka 4.3.1 answers while its markers wait), and the client asks again. Before, it waited here for the markers, up to 10 s, and such a waiting copy
  could outlive the client's next transaction's start (seed 2615).
- **Ends are numbered** (`ends` in the id's etcd state, one more at each Prepare), and each marker
  carries its end's number where Kafka's carries the coordinator epoch (the control record's value).
  A partition leader appends no marker for a producer whose last marker there has that number or a
  later one: a retried copy, or an old coordinator's arriving after the next transaction began
  there. Kafka refuses only an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED); its epoch
  belongs to a coordinator, ours to an end, so an equal one is a copy too.
- **Only the coordinator acts** (`coordinates`): a stale request read late by another gateway is
  refused NOT_COORDINATOR, as Kafka's brokers refuse one for an id they do not coordinate.
- **So are the producer's other requests** (`EndInProgress`): AddPartitionsToTxn, AddOffsetsToTxn,
  TxnOffsetCommit and InitProducerId that find the end decided and not complete get
  CONCURRENT_TRANSACTIONS (every version), as Kafka 4.3.1 answers them, unless this gateway's completion
  of that end hands it over within HAND_OVER_S (the usual case: markers delivered in milliseconds, and
  the request's write then replaces the Complete). Before, they waited up to 10 s for the markers and
  then answered COORDINATOR_NOT_AVAILABLE. A partition leader's check of a produced batch still waits
  (Kafka's leader too retries its coordinator's CONCURRENT_TRANSACTIONS before answering the produce).
"""
from __future__ import annotations

import contextlib

from gateway.cluster.txn_state import producer_check
from semantics.producer_state import NONE_ERR, ClusterUnavailable

CONCURRENT_TRANSACTIONS, NOT_COORDINATOR = 51, 16


def coordinates(node, txn_id: str) -> bool:
    """Whether this gateway may act as `txn_id`'s coordinator now (else NOT_COORDINATOR, as a Kafka
    broker that does not coordinate the id answers): FindCoordinator names it in its view of the live
    members, and its lease cannot have expired. A gateway that stalled with a client's request in its
    socket buffer, while the client moved to the coordinator, retried there and began its next
    transaction, reads that request late: a v1 EndTxn names no transaction and would end the next one
    (seed 74045's txn 305: committed with one of its three records). Checked before each request
    and again right before its write, as the view and the lease may change while etcd answers."""
    return not node.fenced() and node.coordinator(txn_id).node_id == node.node_id


HAND_OVER_S = 0.2  # how long a request that meets a decided end waits for this gateway's completion of it


class EndInProgress(Exception):
    """A request met its transactional id's end decided and not complete (`state`: that Prepare)."""

    def __init__(self, state: dict) -> None:
        super().__init__(state["state"])
        self.state = state

    def answer(self, pid: int, epoch: int) -> int:
        """The request's error: its producer's (fenced, another id) first, as Kafka checks, else
        CONCURRENT_TRANSACTIONS (the client retries)."""
        code = producer_check(self.state, pid, epoch)
        return code if code != NONE_ERR else CONCURRENT_TRANSACTIONS


def number_end(state: dict) -> None:
    """A Prepare is being written into `state`: its end gets the next number."""
    state["ends"] = state.get("ends", 0) + 1


def coordinator_epoch(state: dict) -> int | None:
    """The number a decided end's markers carry (None: decided before ends were numbered)."""
    return state.get("ends")


def fenced(last_mark: int | None, coordinator_epoch: int | None) -> bool:
    """Is a marker of end `coordinator_epoch` for a queue whose producer's last marker has
    `last_mark` an old or retried copy?"""
    return coordinator_epoch is not None and last_mark is not None and coordinator_epoch <= last_mark


def decided_answer(state: dict | None, pid: int, epoch: int, tv2: bool) -> int | None:
    """The answer to an EndTxn of (`pid`, `epoch`) that finds `state` (read just now) with its end
    decided and not complete, as Kafka 4.3's coordinator while it writes the markers (a transition to
    the Complete state pending): CONCURRENT_TRANSACTIONS, whichever outcome it asks, and the client asks
    again. None: not such an end (answered as before)."""
    if state is None or not state["state"].startswith("Prepare"):
        return None
    if tv2:  # the end bumped the epoch: a retry names the one before
        if list(state.get("previous") or ()) != [pid, epoch]:
            return None
    elif (code := producer_check(state, pid, epoch)) != NONE_ERR:
        return code  # (fenced: a coordinator's abort bumped the epoch)
    return CONCURRENT_TRANSACTIONS


async def handed_over(completions, txn_id: str, seen, begins: bool):
    """For a client's request that met the Prepare `seen`: that Prepare taken as completed when this
    gateway's completion of it delivers within HAND_OVER_S and the request `begins` a transaction (its
    write replaces the Complete: `Completions.delivered`); else EndInProgress, with the end's
    completion started here if none runs and this gateway coordinates the id (a restarted coordinator)."""
    if begins:
        with contextlib.suppress(ClusterUnavailable):
            after = await completions.delivered(txn_id, seen, HAND_OVER_S)
            if after is not None:
                return after
    completions.resume(txn_id, seen)
    raise EndInProgress(seen.state)
