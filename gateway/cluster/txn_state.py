"""The coordinator state of Kafka transactional ids in etcd (`txns/<id>`), read and changed by
compare-and-swap on the key's revision, with the last value this gateway read or wrote kept per id.

Why keep it: a transaction's changes follow one another on one key, mostly from this gateway (the
coordinator, and in a small cluster the partitions' leader too), so the value last seen is usually
still the key's. A change starts from it and its compare-and-swap proves it current (it fails, and
the key is read, when anyone wrote meanwhile): one etcd round trip per change instead of two. An
answer that writes nothing (a partition already added, a refusal) is never given from a kept value:
the key is read first, so a kept "Ongoing" never lets a fenced epoch's batch in."""
from __future__ import annotations

import dataclasses

import trio

from cluster.etcd import EtcdError
from semantics.producer_state import INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, NONE_ERR, UNKNOWN_PRODUCER_ID, \
    ClusterUnavailable

ETCD_TIMEOUT_S = 5.0
KEPT_IDS = 10_000  # values kept at most (the least recently used goes first): memory stays bounded


@dataclasses.dataclass(frozen=True)
class Seen:
    """A transactional id's state (None: no such id) at a revision of its key (0: absent)."""
    state: dict | None
    revision: int
    fresh: bool  # read or written just now; False: the kept value, which may be old


class TxnStates:
    """Reads and compare-and-swaps of `txns/<id>`, each bounded by ETCD_TIMEOUT_S."""

    def __init__(self, coordination) -> None:
        self.coordination = coordination
        self.kept: dict[str, tuple[dict | None, int]] = {}

    async def _etcd(self, call):
        try:
            with trio.fail_after(ETCD_TIMEOUT_S):
                return await call
        except (EtcdError, trio.TooSlowError) as exc:
            raise ClusterUnavailable(f"etcd: {exc}") from None

    async def read(self, txn_id: str) -> Seen:
        state, revision = await self._etcd(self.coordination.read_txn(txn_id))
        self._keep(txn_id, state, revision)
        return Seen(state, revision, True)

    def _keep(self, txn_id: str, state: dict | None, revision: int) -> None:
        self.kept.pop(txn_id, None)  # (re-inserted last: the dict's order is the order of use)
        self.kept[txn_id] = (state, revision)
        if len(self.kept) > KEPT_IDS:
            del self.kept[next(iter(self.kept))]

    def last(self, txn_id: str) -> Seen | None:
        """The value last read or written here, if any (not proof of the key's value now)."""
        kept = self.kept.get(txn_id)
        return None if kept is None else Seen(*kept, fresh=False)

    async def states(self, txn_ids=None) -> dict[str, dict]:
        return await self._etcd(self.coordination.txn_states(txn_ids))

    async def attempt(self, txn_id: str, change, seen: Seen):
        """One try of `change(a copy of the state or None) -> (new state or None: no write, result)`
        from `seen`: (result, the state now as Seen), or None when it must be tried again from a
        fresh read (the compare-and-swap lost, or a no-write answer from a kept value)."""
        new, result = change(dict(seen.state) if seen.state else None)
        if new is None:
            return (result, seen) if seen.fresh else None
        revision = await self._etcd(self.coordination.swap_txn(txn_id, seen.revision, new))
        if not revision:
            return None
        self._keep(txn_id, new, revision)
        return result, Seen(new, revision, True)

    async def update(self, txn_id: str, change, seen: Seen | None = None):
        """`attempt` until it lands, starting from `seen` (else a read): (result, the state now)."""
        while True:
            done = await self.attempt(txn_id, change, seen or await self.read(txn_id))
            if done is not None:
                return done
            seen = None


def producer_check(state: dict | None, pid: int, epoch: int) -> int:
    """Whether a request of producer (`pid`, `epoch`) may act on the id's `state`."""
    if state is None:
        return UNKNOWN_PRODUCER_ID
    if state["pid"] != pid or state["epoch"] != epoch:
        return INVALID_PRODUCER_EPOCH
    return NONE_ERR


def late_end(first: dict | None, now: dict, outcome: str) -> int | None:
    """A v1 EndTxn names no transaction, only a producer id and epoch, which all the producer's
    transactions share: it is for the transaction its first read of the key found. If another one
    is Ongoing now, that one ended meanwhile and this end is a late copy of its end (a request that
    waited in a gateway, e.g. for the Prepare's completion, while the client's retry was answered
    elsewhere and the client began the next transaction): it must not end the next one (seed 2615's
    txn 261, committed by a late copy of txn 256's commit before one of its records was written).
    The answer for it (none: not a late copy); Kafka's transactions v2 fence it by the epoch instead."""
    if now["state"] != "Ongoing" or (first is not None and first["state"] == "Ongoing"
                                     and first.get("started") == now.get("started")):
        return None
    over = first is not None and first["state"] in ("Prepare" + outcome, "Complete" + outcome)
    return NONE_ERR if over and first.get("marker") == [now["pid"], now["epoch"]] else INVALID_TXN_STATE
