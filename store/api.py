"""The store's contract (docs/internals.md, "Store API"): its settings, results and errors, and
`MessageStore`, the Protocol the facade (`store.store.Store`) satisfies, one method per table row."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

from codec.remoting import message as M
from store.errors import EntryTooLarge, MessageTooLarge, StoreError, StoreFull  # noqa: F401 - part of the API

if TYPE_CHECKING:
    from store.config import TopicTable
    from store.dispatch import Dispatcher, DispatchRequest


@dataclass
class StoreConfig:
    commitlog_file_size: int = 1 << 30
    cq_units_per_file: int = 300_000
    index_slots: int = 5_000_000
    index_entries: int = 20_000_000
    flush: str = "async"  # or "sync"; the store itself only records it, the gateway runs the flusher
    file_reserved_hours: float = 72
    max_message_size: int = 4 << 20
    store_host: tuple = ("127.0.0.1", 10911)
    disk_max_used_space_ratio: float = 0.75  # refuse writes (StoreFull) above this (clamped to 10..95 %)
    write_delay_ms: int = 0  # tests and benchmarks only: every write sleeps this long (a throttled disk)
    write_hold_file: str | None = None  # tests only: writes wait while this file exists (store.seams)


class AppendResult:
    """Where an append went; `end_offset` is the CommitLog offset just past the entry."""

    __slots__ = ("physical_offset", "queue_offset", "count", "size", "store_timestamp", "end_offset", "_host")

    def __init__(self, physical_offset, queue_offset, count, size, store_timestamp, end_offset, host=None):
        self.physical_offset = physical_offset
        self.queue_offset = queue_offset
        self.count = count
        self.size = size
        self.store_timestamp = store_timestamp
        self.end_offset = end_offset
        self._host = host or ("127.0.0.1", 0)

    @property
    def msg_id(self) -> str:
        return M.make_msg_id(self._host[0], self._host[1], self.physical_offset)

    def __repr__(self) -> str:
        return (f"AppendResult(physical_offset={self.physical_offset}, queue_offset={self.queue_offset}, "
                f"count={self.count}, size={self.size}, end_offset={self.end_offset})")


class RawEntry:
    """An entry read with `raw=True` that needed no decoding: its exact bytes and the header fields a
    reader forwarding them looks at (an inner batch or an unusual entry still comes decoded)."""
    __slots__ = ("raw", "sys_flag", "topic", "queue_id", "queue_offset")

    def __init__(self, raw: bytes, sys_flag: int, topic: str, queue_id: int, queue_offset: int) -> None:
        self.raw, self.sys_flag, self.topic, self.queue_id, self.queue_offset = raw, sys_flag, topic, queue_id, queue_offset


@dataclass
class ReadResult:
    entries: list  # [(queue_offset, StoredMessage, or RawEntry if read with raw=True)]
    next_offset: int
    min_offset: int
    max_offset: int


@runtime_checkable
class MessageStore(Protocol):
    """What the layers above may call (RocketMQ's MessageStore). See docs/internals.md for each row."""

    topics: TopicTable
    flushed_offset: int
    trusted_from: int
    write_began: float | None
    flush_began: float | None
    last_flush_s: float

    # lifecycle and dispatch
    def recover(self) -> None: ...
    def add_dispatcher(self, dispatcher: Dispatcher) -> None: ...

    def set_write_observer(self, observe) -> None: ...

    def set_flush_observer(self, observe) -> None: ...
    def dispatch(self, requests: Sequence[DispatchRequest]) -> None: ...
    def close(self) -> None: ...

    # writing
    def append(self, msg: M.Message) -> AppendResult: ...
    def append_many(self, msgs: Sequence[M.Message]) -> list[AppendResult]: ...
    def append_replicated(self, topic: str, queue_id: int, queue_offset: int,
                          entries: Sequence[M.StoredMessage]) -> list[AppendResult]: ...
    def truncate_queue(self, topic: str, queue_id: int, offset: int) -> int: ...
    def flush(self) -> None: ...
    def delete_expired(self, now_ms: int | None = None) -> int: ...

    # reading by CommitLog position
    @property
    def max_physical_offset(self) -> int: ...
    @property
    def min_physical_offset(self) -> int: ...
    def read_entry(self, phys: int, size: int) -> bytes: ...
    def open_entry_range(self, phys: int, size: int) -> tuple[int, int] | None: ...
    def get(self, phys: int) -> M.StoredMessage | None: ...
    def disk_status(self) -> tuple[float, bool]: ...
    def is_quarantined(self, phys: int) -> bool: ...
    def quarantined(self) -> dict[int, str]: ...
    def verify(self) -> int: ...

    # reading by queue
    def min_offset(self, topic: str, queue_id: int) -> int: ...
    def max_offset(self, topic: str, queue_id: int) -> int: ...
    def queues(self, topic: str) -> list[int]: ...
    def units(self, topic: str, queue_id: int, start: int, max_count: int) -> list[tuple[int, int, int]]: ...
    def entry_end(self, topic: str, queue_id: int, offset: int, phys: int, hi: int) -> int: ...
    def read(self, topic: str, queue_id: int, start: int, max_count: int = 32, max_bytes: int = 4 << 20,
             tag_filter=None, raw: bool = False, end: int | None = None) -> ReadResult: ...
    def iterate(self, topic: str, queue_id: int, start: int = 0,
                end: int | None = None) -> Iterator[tuple[int, M.StoredMessage]]: ...
    def offset_for_timestamp(self, topic: str, queue_id: int, ts_ms: int) -> int: ...
    def query_by_key(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0,
                     end_ms: int | None = None) -> list[M.StoredMessage]: ...

    # compaction
    def rewrite(self, topic: str, queue_id: int, start: int, end: int, body: bytes) -> AppendResult: ...
    def expiring_before(self, now_ms: int, within_ms: int) -> int: ...

    # config files
    def delete_records(self, topic: str, queue_id: int, offset: int) -> int: ...

    def write_config(self, name: str, obj) -> None: ...
    def read_config(self, name: str, default=None): ...
