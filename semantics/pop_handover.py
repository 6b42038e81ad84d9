"""Handing POP's in-flight state over from one POP owner of diskless queues to the next
(docs/diskless.md, "POP through several gateways"): the owner publishes what is in flight (leases
with their invisible time, receipt and delivery count, and what was finished in the window), and a
gateway that starts serving POP of those queues (it took the lease, or the owner stopped
answering) adopts it through its engine's public export / import (semantics.pop_inflight), so a
message popped at the old owner stays invisible until its time, its receipt still acks it and its
deliveries still count. At-least-once remains: what changed after the last publish (at most one
beat) is not handed over."""
from __future__ import annotations

import json
from typing import Callable

from semantics.pop import PopEngine


def inflight(engine: PopEngine, keep: Callable[[str], bool]) -> bytes:
    """The engine's in-flight state of the topics `keep` accepts, as the bytes to publish."""
    return json.dumps({"states": engine.export_inflight(keep)}, separators=(",", ":")).encode()


def adopt(engine: PopEngine, data: bytes, known: Callable[[str], bool], now_ms: int) -> int:
    """Merge a published in-flight state into `engine` (topics `known` here only); how many leases
    still invisible it adopted. Adopting the same state twice changes nothing."""
    return engine.import_inflight(json.loads(data).get("states", ()), known, now_ms)
