"""An `Encoded` array value (`protocol.encoded_response_array`) puts the same bytes on the wire as
the list it was made from: flexible and classic versions, an empty list, nested arrays."""
from __future__ import annotations

import pytest

from codec.kafka import protocol
from codec.kafka.encoded import Encoded

CONFIGS = [{"name": "cleanup.policy", "value": "compact", "read_only": False, "config_source": 1,
            "is_sensitive": False},
           {"name": "retention.ms", "value": None, "read_only": True, "config_source": 5, "is_sensitive": False}]
METADATA_TOPICS = [{"error_code": 0, "name": "t", "is_internal": False, "partitions": [
    {"error_code": 0, "partition_index": 0, "leader_id": 0, "replica_nodes": [0], "isr_nodes": [0]}]}]


def topics(configs) -> dict:
    return {"topics": [{"name": "x", "num_partitions": 1, "replication_factor": 1, "error_code": 0,
                        "configs": configs}]}


@pytest.mark.parametrize("version", [5, 6, 7])
@pytest.mark.parametrize("configs", [CONFIGS, []])
def test_create_topics_configs(version, configs):
    encoded = protocol.encoded_response_array(19, version, ("topics", "configs"), configs)
    assert type(encoded) is Encoded
    assert bytes(protocol.response_frame(19, version, 3, topics(encoded))) == \
        bytes(protocol.response_frame(19, version, 3, topics(configs)))


@pytest.mark.parametrize("version", [1, 8, 9, 12])  # classic and flexible
def test_metadata_topics(version):
    encoded = protocol.encoded_response_array(3, version, ("topics",), METADATA_TOPICS)
    assert bytes(protocol.response_frame(3, version, 1, {"brokers": [], "topics": encoded})) == \
        bytes(protocol.response_frame(3, version, 1, {"brokers": [], "topics": METADATA_TOPICS}))
