"""KIP-932 share partitions on the pop engine: acquire records for a member, acknowledge them.

The share-partition state of (group, topic, partition) is the pop engine's (group, topic, queue)
state, so a Kafka share group and a RocketMQ POP group of the same name share the progress of a
queue (docs/mapping.md). Kafka's record states map onto the engine: AVAILABLE = never delivered,
released or past its lock; ACQUIRED = leased (deadline = now + `share.record.lock.duration.ms`);
ACKNOWLEDGED / ARCHIVED = finished. A record delivered `share.delivery.count.limit` times is
archived instead of being delivered again; REJECT archives at once.

Kafka acknowledges by offset, so this layer remembers which member holds each acquired offset (in
memory). KIP-932 persists no acquisition locks (the share-partition state has AVAILABLE,
ACKNOWLEDGED and ARCHIVED records only), so at start every
lease of a known share group is released (one logged op per partition) and comes again at once;
a RocketMQ POP lease keeps its invisible time across a restart, as RocketMQ's revive service only
revives a checkpoint once its time has passed. An acknowledgement batch is applied only if
every offset it names is held by the member under an unexpired lock (else INVALID_RECORD_STATE
and nothing changes).
"""
from __future__ import annotations

from typing import Callable

from semantics.pop import INIT_MAX, INIT_MIN, Receipt
from semantics.share_groups import ShareGroups
from semantics.share_sessions import ShareSessions

GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
KINDS = (GAP, ACCEPT, RELEASE, REJECT, RENEW)
SETTLE = {ACCEPT: "ack", RELEASE: "release", REJECT: "reject"}
NONE, INVALID_REQUEST, INVALID_RECORD_STATE = 0, 42, 121


class SharePartitions:
    def __init__(self, engine, groups: ShareGroups) -> None:
        self.engine = engine
        self.groups = groups
        self.sessions = ShareSessions()
        self.holders: dict[tuple[str, str, int], dict[int, str]] = {}  # (group, topic, p) -> offset -> member
        self.release_after_restart()

    def release_after_restart(self) -> int:
        """Make what share groups held before the restart available now (see the module docstring)."""
        end, now = 0, self.engine.clock()
        for group in self.groups.known():
            for topic, partition in self.engine.queues(group):
                state = self.engine.state(group, topic, partition)
                held = sorted(o for o, lease in state.leases.items() if lease.deadline > now)
                if held:
                    end = max(end, self.engine.settle(group, topic, partition, held, "release"))
        return end

    def lock_ms(self, group: str) -> int:
        return self.groups.int_config(group, "share.record.lock.duration.ms")

    def acquire(self, group: str, member: str, topic: str, partition: int, max_n: int, whole_batches: bool = False,
                end_for: Callable[[int], int] | None = None):
        """Lease up to `max_n` records to the member (with `whole_batches`, on to the end of the last
        stored batch, as Kafka's batch-optimized mode does): a `semantics.pop.Acquired` whose
        deliveries carry offsets only (the fetch sends the stored batches). `end_for(first, reach)`:
        the offset the lease stays below when it would start at `first` (a ShareFetch's max_bytes),
        `reach` the offset it cannot pass anyway (`max_n` new records)."""
        reset = self.groups.config(group, "share.auto.offset.reset")
        max_deliveries = self.groups.int_config(group, "share.delivery.count.limit")
        if end_for is not None:
            max_n = min(max_n, self._count_below(group, topic, partition, max_n, max_deliveries, end_for) or max_n)
        acquired = self.engine.acquire(group, topic, partition, max_n, self.lock_ms(group),
                                       init_mode=INIT_MIN if reset == "earliest" else INIT_MAX,
                                       max_deliveries=max_deliveries, messages=False, whole_batches=whole_batches)
        holders = self.holders.setdefault((group, topic, partition), {})
        state = self.engine.state(group, topic, partition)
        if state is not None and len(holders) > 2 * self.engine.max_window:
            for offset in [o for o in holders if o not in state.leases]:
                del holders[offset]
        for d in acquired.deliveries:
            holders[d.offset] = member
        return acquired

    def _count_below(self, group: str, topic: str, partition: int, max_n: int, max_deliveries: int, end_for) -> int:
        """How many records a lease takes to stay below `end_for(its first offset)`: the engine leases
        the records available again first (ascending, those delivered `max_deliveries` times aside),
        then new ones from `next`, to the end of a stored batch (`end_for` ends on a batch's end)."""
        state = self.engine.state(group, topic, partition)
        if state is None:
            again, following = [], self.engine.start_offset(group, topic, partition)
        else:
            now = self.engine.clock()
            again = [o for o in state.available(now) if state.leases[o].count < max_deliveries]
            following = state.next
        end = end_for(min(again[:1] + [following]), following + max_n)
        return sum(1 for o in again if o < end) + max(0, end - following)

    def acknowledge(self, group: str, member: str, topic: str, partition: int, batches: list) -> tuple[int, int]:
        """Apply acknowledgement batches ({first_offset, last_offset, acknowledge_types}); returns
        (error code, CommitLog end offset of the logged ops)."""
        by_type: dict[int, list[int]] = {}
        holders = self.holders.get((group, topic, partition), {})
        state = self.engine.state(group, topic, partition)
        now = self.engine.clock()
        for b in batches:
            first, last, types = b["first_offset"], b["last_offset"], b["acknowledge_types"]
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                return INVALID_REQUEST, 0
            for i, offset in enumerate(range(first, last + 1)):
                kind = types[0] if len(types) == 1 else types[i]
                if kind not in KINDS:
                    return INVALID_REQUEST, 0
                lease = state.leases.get(offset) if state is not None else None
                if kind == GAP and lease is None:
                    continue  # not a record (a transaction marker, a compacted offset): nothing held
                if lease is None or lease.deadline <= now or holders.get(offset) != member:
                    return INVALID_RECORD_STATE, 0
                by_type.setdefault(ACCEPT if kind == GAP else kind, []).append(offset)
        end = 0
        for kind, offsets in by_type.items():
            offsets = sorted(set(offsets))
            if kind == RENEW:
                for offset in offsets:
                    renewed = self.engine.renew(Receipt(group, topic, partition, offset, state.leases[offset].pop_time),
                                                self.lock_ms(group))
                    end = max(end, renewed[1] if renewed else 0)
                continue
            end = max(end, self.engine.settle(group, topic, partition, offsets, SETTLE[kind]))
            for offset in offsets:
                holders.pop(offset, None)
        return NONE, end

    def release_member(self, group: str, member: str) -> int:
        """Make every record the member holds available again (it left or closed its session)."""
        end = 0
        now = self.engine.clock()
        for (g, topic, partition), holders in self.holders.items():
            if g != group:
                continue
            state = self.engine.state(g, topic, partition)
            mine = [o for o, m in holders.items() if m == member]
            held = [o for o in mine if state is not None and o in state.leases and state.leases[o].deadline > now]
            for o in mine:
                del holders[o]
            if held:
                end = max(end, self.engine.settle(g, topic, partition, sorted(held), "release"))
        return end

    def connection_closed(self, group: str, member: str, session) -> None:
        """The connection that opened `session` ended (the consumer closed or died): as Kafka does,
        the session goes and the member's records are released, unless a newer session replaced it."""
        if self.sessions.sessions.get((group, member)) is session:
            self.forget_member(group, member)

    def forget_topic(self, topic: str, partitions: int) -> int:
        """A deleted topic's share-partition state goes from every share group (one made again under
        its name starts afresh, as Kafka's new topic id does); the CommitLog end of the logged drops."""
        end = 0
        for group in self.groups.known():
            for p in range(partitions):
                end = max(end, self.engine.drop(group, topic, p))
                self.holders.pop((group, topic, p), None)
                if self.engine.offsets is not None:  # where its acknowledgements had moved the start
                    self.engine.offsets.delete(group, topic, p)
        return end

    def forget_member(self, group: str, member: str) -> None:
        """The member left or expired: its session goes, its records are released."""
        self.sessions.close_member(group, member)
        self.release_member(group, member)
