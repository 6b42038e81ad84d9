"""What the pop engine (semantics.pop) hands out and takes back: a receipt names one delivery, an
`Acquired` is one pop's result."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Receipt:
    group: str
    topic: str
    queue_id: int
    offset: int
    pop_time: int


@dataclass
class Delivery:
    offset: int
    message: object  # store.StoredMessage (for an inner batch: the whole entry); None when raw is set
    count: int  # 1 on the first delivery
    raw: bytes | None = None  # the stored entry's bytes, not decoded (acquire(raw=True))


@dataclass
class Acquired:
    pop_time: int
    deadline: int
    deliveries: list[Delivery] = field(default_factory=list)
    rest: int = 0  # records left in the queue (not delivered, or available again)
    end_offset: int = 0  # CommitLog end of the logged op (0: nothing logged)
