"""Topic ids stay what they were: the name-based UUID (version 5) in the gateway's namespace, which
`gateway.kafka.topics.topic_id` now computes on the bytes instead of through `uuid.uuid5`."""
from __future__ import annotations

import uuid

import pytest

from gateway.kafka import topics


def test_known_id():
    assert topics.topic_id("orders").hex() == "a3e2778e3b045c8f9e79229377b8a2a5"  # as ids were before


@pytest.mark.parametrize("name", ["", "a", "orders", "%DLQ%group-1", "%RETRY%g", "ü-topic", "x" * 249,
                                  "__consumer_offsets", "rmq_sys_TRACE_DATA"])
def test_same_as_uuid5(name):
    expected = uuid.uuid5(uuid.UUID("6b1f5c8e-4d0a-4e53-9a6f-2f6d1c3b7a90"), name)
    got = uuid.UUID(bytes=topics.topic_id(name))
    assert got == expected and got.version == 5 and got.variant == uuid.RFC_4122
