"""AsyncLitePullConsumer: the application polls. Pull tasks fill one buffer that `poll` drains;
`seek` (and a broker-initiated offset reset) moves a queue, and `commit` stores the polled positions
(every `persist_interval` seconds with auto_commit)."""
from __future__ import annotations

import trio

from client.consumer import ConsumerBase
from client.errors import MQClientError
from client.model import MessageExt, MessageQueue

BUFFERED_PULLS = 64


class AsyncLitePullConsumer(ConsumerBase):
    """Pull-style consumer: `subscribe` (group-balanced) or `assign`, then `poll`, `seek`, `commit`."""

    consume_type = "CONSUME_ACTIVELY"

    def __init__(self, group: str, namesrv: str, *, auto_commit: bool = True, **kw) -> None:
        super().__init__(group, namesrv, **kw)
        self.auto_commit = auto_commit
        self._send, self._recv = trio.open_memory_channel(BUFFERED_PULLS)
        self.generation: dict[MessageQueue, int] = {}  # a buffered pull of an older generation is stale
        self.consumed: dict[MessageQueue, int] = {}    # position after the last polled message

    def assign(self, queues: list[MessageQueue]) -> None:
        self.assigned = list(queues)
        self.rebalance_soon()

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        return (await self.instance.route(topic, refresh=True)).subscribe_queues()

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages (empty after `timeout` seconds without any)."""
        with trio.move_on_after(timeout):
            while True:
                mq, gen, msgs, next_offset = await self._recv.receive()
                if gen == self.generation.get(mq, 0) and mq in self.tasks:
                    self.consumed[mq] = next_offset
                    return msgs
        return []

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Next poll returns this queue's messages from `offset` on (buffered ones are dropped)."""
        if mq not in self.tasks:
            raise MQClientError(f"{mq} is not assigned to this consumer")
        self._restart_pull(mq, offset)

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Commit the polled positions (or the given ones) to the broker."""
        self.offsets.update(offsets or self.consumed)
        await self.offset_store.persist(oneway=False, only=list(offsets or self.consumed))

    async def committed(self, mq: MessageQueue) -> int | None:
        """The group's committed offset of `mq` at the broker (None if it has none)."""
        return await self.offset_store.committed(mq, set_zero_if_not_found=False)

    async def shutdown(self) -> None:
        """With auto_commit, the positions of the last poll are committed before leaving."""
        if self.auto_commit and self.running:
            self.offsets.update(self.consumed)
        await super().shutdown()

    async def _persist_loop(self) -> None:
        while True:
            await trio.sleep(self.persist_interval)
            if self.auto_commit:
                await self.commit()

    async def rebalance(self) -> None:
        """Newly held queues are polled from their start offset; given-up ones are forgotten."""
        await super().rebalance()
        for mq in self.tasks:
            self.consumed.setdefault(mq, self.offsets[mq])
        for mq in list(self.consumed):
            if mq not in self.tasks:
                del self.consumed[mq]

    def _restart_pull(self, mq: MessageQueue, offset: int) -> None:
        """Messages polled-but-buffered for `mq` become stale (their generation is gone)."""
        self.generation[mq] = self.generation.get(mq, 0) + 1
        self.consumed[mq] = offset
        super()._restart_pull(mq, offset)

    async def _deliver(self, mq, msgs, next_offset, scope) -> None:
        await self._send.send((mq, self.generation.get(mq, 0), msgs, next_offset))

    def _advance(self, mq, offset) -> None:
        """Nothing to hand out up to `offset`: the polled position moves (commit() stores it)."""
        self.consumed[mq] = offset
