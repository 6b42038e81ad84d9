"""What a compaction pass logs: an INFO line naming the topics when an operator's topic was
compacted; a pass that only compacted internal topics (the offsets topic, rewritten every pass
while groups commit) logs at DEBUG, not every log.cleaner.backoff.ms at INFO."""
from __future__ import annotations

import logging
import types

import pytest

from semantics import compaction

COMPACTED = {"cleanup.policy": "compact"}


class _Topics:
    def __init__(self, names):
        self._names = names

    def names(self):
        return list(self._names)

    def get(self, name):
        return types.SimpleNamespace(attributes=COMPACTED)


class _Store:
    """Only what Compactor.compact_all asks of the store before each queue's pass."""

    def __init__(self, names):
        self.topics = _Topics(names)

    def queues(self, name):
        return [0]

    def expiring_before(self, now_ms, within_ms):
        return 0


@pytest.fixture
def every_pass_rewrites(monkeypatch):
    def compact(self, policy, now_ms, carry_below, stats):
        stats.rewrites += 1
        stats.removed += 3
    monkeypatch.setattr(compaction.QueueCompactor, "compact", compact)


@pytest.mark.parametrize("topics, level", [
    (["__consumer_offsets"], logging.DEBUG),
    (["__consumer_offsets", "__transaction_state"], logging.DEBUG),
    (["orders", "__consumer_offsets"], logging.INFO),
])
def test_pass_log_level(every_pass_rewrites, caplog, topics, level):
    caplog.set_level(logging.DEBUG, logger="rocketgate")
    compaction.Compactor(_Store(topics), clock=None).compact_all(now_ms=0)
    lines = [r for r in caplog.records if r.getMessage().startswith("compaction of ")]
    assert [r.levelno for r in lines] == [level]
    assert ", ".join(topics) in lines[0].getMessage()
