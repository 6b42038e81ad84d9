"""Every stored and wire layout of the project, declared once with construct: the source of truth
for docs/formats.md (`python -m codec.formats.doc`), the store tool (`rocketgate store`) and the
agreement tests that hold the hot paths' precompiled `struct` code to them (tests/formats).

Families: `message` (CommitLog entry, blank marker, batch items, ids), `store` (ConsumeQueue,
IndexFile, checkpoints, config files), `remoting` (RemotingCommand frames), `kafka` (headers,
RecordBatch, record)."""
from __future__ import annotations

from codec.formats import kafka, message, remoting, store  # noqa: F401 - each registers its layouts
from codec.formats.common import LAYOUTS, Layout

__all__ = ["LAYOUTS", "Layout", "kafka", "message", "remoting", "store"]
