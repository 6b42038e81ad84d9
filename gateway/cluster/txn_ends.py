"""A partition leader's commits of Kafka transactions, kept until its in-sync replicas hold them
(docs/faults.md, fourth stop, finding 3). The halves are this gateway's alone: a commit appends their
records here, as the partition's leader, and the followers copy them. If this gateway loses the
partition first (fenced, another replica elected from the in-sync set), the new leader may lack
them, and this gateway's copy is then cut back to the new leader's log: the records are gone
although the end is decided, and a retried end found nothing left to do. So every commit appended
here stays *unconfirmed* until the in-sync replicas hold it; an end (the coordinator retries one
until it hears success) waits for them while this gateway leads the partition, and once another
leads it and this gateway's copy knows the next leader epoch, a record at or past that epoch's start
was cut: it is sent again, to the new leader as a due message (`committed_message` routes it)."""
from __future__ import annotations

import trio

from semantics.flow_control import append_in_turn
from semantics.replication.contract import NotLeader
from store.errors import StoreError

END_RETRIED = (StoreError, NotLeader)  # an end that meets one here is retried by its coordinator


class UnconfirmedCommits:
    def __init__(self, app, node) -> None:
        self.app, self.node = app, node
        # (topic, partition) -> [(leader epoch it was appended in, half offset, its queue offset)]
        self.commits: dict[tuple[str, int], list[tuple[int, int, int]]] = {}

    def _leader_epoch(self, topic: str, partition: int) -> int | None:
        """The epoch this gateway leads the partition in (None: it does not lead it, or it is not
        replicated: a commit appended then needs nothing more from here)."""
        if not (self.node.owns(topic, partition) and self.app.replication.replicates(topic, partition)):
            return None
        role = self.app.replication.role(topic, partition)
        return None if role is None else role.epoch

    async def end(self, topic: str, partition: int, half_offset: int, commit: bool):
        """`transactions.end_in_turn` of one half (its op's append result, or None); a commit whose
        record is appended here, as the partition's leader, is kept until confirmed."""
        leading, appended = self._leader_epoch(topic, partition), []
        _result, r = await self.app.transactions.end_in_turn(self.app.flow, half_offset, commit, appended=appended)
        if leading is not None and len(appended) == 2 and appended[0][0].topic == topic:  # the record, not
            # scheduled for the leader elsewhere (a due message: delivered into the leader's replicas)
            self.commits.setdefault((topic, partition), []).append((leading, half_offset, appended[0][1].queue_offset))
        return r

    async def confirm(self, partitions) -> None:
        """Return once every commit appended here on `partitions` is held by the partition's in-sync
        replicas (or sent again where it was cut); raises NotLeader while that is not known yet."""
        for tp in sorted(set(partitions) & set(self.commits)):
            if self.node.owns(*tp):
                end = max(q for _, _, q in self.commits[tp]) + 1
                await self.app.replicated(*tp, end)
                self._keep(tp, [c for c in self.commits.get(tp, ()) if c[2] >= end])  # (appended meanwhile)
                continue
            if not self.app.replication.replicates(*tp):  # no copy here to tell by: as before
                del self.commits[tp]
                continue
            left, cut = [], []
            for epoch, half_offset, queue_offset in self.commits[tp]:
                starts = [start for e, start in self.app.replication.epochs.entries(*tp) if e > epoch]
                if not starts:
                    left.append((epoch, half_offset, queue_offset))  # no later leader known here yet
                elif queue_offset >= starts[0]:
                    cut.append(half_offset)  # the new leader was elected without it
            self._keep(tp, left)
            with trio.CancelScope(shield=True):  # sent once: a closed connection must not cut this short
                for half_offset in cut:
                    await self._send_again(half_offset)
            if left:
                raise NotLeader(f"{tp[0]}/{tp[1]}: a commit's records not yet known to be kept")

    def _keep(self, tp, commits: list) -> None:
        if commits:
            self.commits[tp] = commits
        else:
            self.commits.pop(tp, None)

    async def _send_again(self, half_offset: int) -> None:
        tr = self.app.transactions
        [result] = await append_in_turn(self.app.flow, self.app.store, [tr.committed_message(tr.half(half_offset))])
        await self.app.durable(result.end_offset)
