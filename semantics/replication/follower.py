"""The follower's side of replication (Kafka's ReplicaFetcherThread, RocketMQ's HAClient): one task
per followed queue long-polls the leader and appends what it answers at the same queue offsets.

Before the first fetch in an epoch, the epoch rule cuts a suffix the leader does not have (Kafka's
OffsetsForLeaderEpoch): ask the leader where our latest epoch ended in its log, truncate there,
and repeat with the epoch it answered until both agree. An answer from a leader in another epoch
than ours is dropped (fencing): a stale leader's entries never reach this store. So is any answer
that arrives after this node's role for the queue changed: a task of an older role never cuts the
log a newer role writes (seed 69739: an epoch-end answer held up by a one-way partition arrived
after this node had become the leader and cut 45 acknowledged entries).
"""
from __future__ import annotations

import logging

import trio

from codec.remoting.message import MessageFormatError
from semantics.replication.contract import (NONE, OFFSET_OUT_OF_RANGE, FetchRequest, ReplicaTransport)
from semantics.replication.epochs import UNDEFINED
from store.replica import ReplicaGap, start_queue_at

log = logging.getLogger("rocketgate.replication")
RETRY_S = 0.2  # after an error answer or an unreachable leader
FETCH_MAX_BYTES = 1 << 20
FETCH_MAX_WAIT_MS = 500


class Follower:
    def __init__(self, manager, transport: ReplicaTransport) -> None:
        self.manager = manager
        self.transport = transport
        self._nursery: trio.Nursery | None = None
        self._running: set = set()
        manager.follower = self

    def start(self, topic: str, queue_id: int) -> None:
        """Follow the queue (its role was just set); a task of an older role stops by itself."""
        if self._nursery is not None:
            self._nursery.start_soon(self._follow, topic, queue_id)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for (topic, qid), r in list(self.manager.roles.items()):
                if r.role == "follower":
                    nursery.start_soon(self._follow, topic, qid)
            task_status.started()
            await trio.sleep_forever()

    def _current(self, key, generation: int):
        r = self.manager.roles.get(key)
        return r if r is not None and r.role == "follower" and r.generation == generation else None

    async def _follow(self, topic: str, queue_id: int) -> None:
        key = (topic, queue_id)
        r = self.manager.roles.get(key)
        if r is None or r.role != "follower":
            return
        generation = r.generation
        truncated = False
        while self._current(key, generation) is not None:
            try:
                if not truncated:
                    await self._truncate_by_epoch(topic, queue_id, r, generation)
                    truncated = True
                    continue  # the role may have changed while it waited: checked again first
                await self._fetch_once(topic, queue_id, r, generation)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError,
                    trio.TooSlowError) as exc:
                log.debug("%s/%d: leader %s unreachable: %s", topic, queue_id, r.leader, exc)
                await trio.sleep(RETRY_S)
            except (ReplicaGap, MessageFormatError) as exc:
                log.warning("%s/%d: replication from %s: %s; fetching again", topic, queue_id, r.leader, exc)
                await trio.sleep(RETRY_S)
            except Exception:  # a bug here must not end the gateway: logged, retried a second later
                log.exception("%s/%d: replication from %s failed", topic, queue_id, r.leader)
                await trio.sleep(1.0)

    async def _truncate_by_epoch(self, topic: str, queue_id: int, r, generation: int) -> None:
        m, store = self.manager, self.manager.store
        asked = m.epochs.latest_epoch(topic, queue_id)
        while asked != UNDEFINED and self._current((topic, queue_id), generation) is not None:
            error, epoch, end = await self.transport.epoch_end(r.leader, topic, queue_id, asked, m.self_id,
                                                               r.epoch)
            if self._current((topic, queue_id), generation) is not r:
                return  # an answer for a role this node no longer has: it must not cut the log
            if error != NONE:
                log.debug("%s/%d: epoch end from %s: %s; retrying", topic, queue_id, r.leader, error)
                await trio.sleep(RETRY_S)
                continue
            ours = m.epochs.end_offset(topic, queue_id, asked, store.max_offset(topic, queue_id))[1]
            cut = min(end, ours) if epoch != UNDEFINED else min(r.high_watermark, ours)
            self._truncate(topic, queue_id, cut)
            if epoch == asked or epoch == UNDEFINED:
                return
            asked = epoch

    def _truncate(self, topic: str, queue_id: int, offset: int) -> None:
        store = self.manager.store
        if offset < store.max_offset(topic, queue_id):
            log.warning("%s/%d: truncating the diverged suffix [%d, %d)", topic, queue_id, offset,
                        store.max_offset(topic, queue_id))
            store.truncate_queue(topic, queue_id, offset)
            if self.manager.derive is not None:
                self.manager.derive.truncate(topic, queue_id, offset)
        self.manager.epochs.truncate_from_end(topic, queue_id, offset)

    async def _fetch_once(self, topic: str, queue_id: int, r, generation: int) -> None:
        m, store = self.manager, self.manager.store
        offset = store.max_offset(topic, queue_id)
        answer = await self.transport.fetch(r.leader, FetchRequest(
            topic, queue_id, offset, r.epoch, m.self_id, FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, r.high_watermark))
        if self._current((topic, queue_id), generation) is not r:
            return
        if answer.error == OFFSET_OUT_OF_RANGE and answer.epoch == r.epoch:
            if offset < answer.log_start:  # the leader no longer has our end (Kafka's truncateFullyAndStartAt)
                log.warning("%s/%d: the leader's log starts at %d, past our end %d: starting there", topic,
                            queue_id, answer.log_start, offset)
                start_queue_at(store, topic, queue_id, answer.log_start)
                if m.derive is not None:
                    m.derive.forget_queue(topic, queue_id)
            else:
                self._truncate(topic, queue_id, answer.log_end)
            return
        if answer.error != NONE or answer.epoch != r.epoch:  # fenced leader, or not (yet) the leader
            log.debug("%s/%d: fetch from %s: %s (epoch %d, ours %d)", topic, queue_id, r.leader, answer.error,
                      answer.epoch, r.epoch)
            await trio.sleep(RETRY_S)
            return
        if answer.entries:
            store.append_replicated(topic, queue_id, offset, answer.entries)
            if m.derive is not None:  # from each entry's header, as the leader derived it (same offsets)
                for e in answer.entries:
                    m.derive.appended(topic, queue_id, e.queue_offset, e)
        end = store.max_offset(topic, queue_id)
        m.epochs.replace(topic, queue_id, [tuple(p) for p in answer.epochs], end)
        hw = min(answer.high_watermark, end)
        if hw > r.high_watermark:
            r.high_watermark = hw
            if m.notify is not None:
                m.notify(topic, queue_id)
