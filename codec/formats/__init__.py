"""Every stored and wire layout of the project, declared once with construct: the source of truth
for docs/formats.md (`python -m codec.formats.doc`), the store tool (`rocketgate store`) and the
agreement tests that hold the hot paths' precompiled `struct` code to them (tests/formats).

Families: `message` (CommitLog entry, blank marker, batch items, ids), `store` (ConsumeQueue,
IndexFile, checkpoints, config files), `remoting` (RemotingCommand frames), `kafka` (headers,
RecordBatch, record), `framing` (Kafka size prefix, gRPC prefix, HTTP/2 frame header, xerial
snappy), `offsets_topic` (the `__consumer_offsets` records the gateway mirrors), `schema_registry`
(the serializers' frame and the `_schemas` records)."""
from __future__ import annotations

from codec.formats import (framing, kafka, message, offsets_topic, remoting,  # noqa: F401 - each registers
                           schema_registry, store)
from codec.formats.common import LAYOUTS, Layout

__all__ = ["LAYOUTS", "Layout", "framing", "kafka", "message", "offsets_topic", "remoting", "schema_registry",
           "store"]
