"""CreateTopics answers byte for byte as the gateway gave them before the configs they list were
cached (issue 18): v5 and v7, a topic without configs, one with Kafka configs set, and validate_only (no configs
listed). The
digests were captured from the code before the change; the decoded answers are checked too."""
from __future__ import annotations

import hashlib

import pytest
from gateway_process import GatewayProcess

from codec.kafka import protocol
from tests.kafka.kafka_raw import RawClient

CREATE_TOPICS = 19
CASES = {  # name: (version, configs, validate_only), created in this order on one gateway
    "plain-v7": (7, [], False),
    "set-v7": (7, [("retention.ms", "1000"), ("cleanup.policy", "compact"), ("max.message.bytes", "2000")], False),
    "plain-v5": (5, [], False),
    "set-v5": (5, [("segment.ms", "60000")], False),
    "check-v7": (7, [("retention.ms", "1000")], True),
    # a filtered view of "plain-v7": its filter.* attributes are listed read-only after Kafka's configs
    "view-v7": (7, [("filter.source.topic", "plain-v7"), ("filter.tag.expression", "a || b")], False),
}
DIGESTS = {  # sha256 of each answer frame (correlation ids 1..6), from the code before the cache
    "plain-v7": "c600174c7f2526f807c450adc90727d4f881cbfa5016dcfea49b40c964d58133",
    "set-v7": "b999ffc4c711e5e872a4e6d1ac63e72f5c5305e891473583aa5f5443892ffee7",
    "plain-v5": "d9c52f5168c4925df3cdab43c4a1d053b1a81e1888822001a7380116e9f4863b",
    "set-v5": "2f9a70276e5d4940af734d28716ee4eb3869f774bb4217360650c442443aa62a",
    "check-v7": "841c80ab3fc9157e4679ab62184a4502dac56a25eabafc10aeeafda6995b0e9d",
    "view-v7": "e522c4b90aba32e7ab08f5cb00415024d41862879e7a13f30132b735de2f132a",
}


def frame(client: RawClient, version: int, name: str, configs: list, validate_only: bool) -> bytes:
    client.correlation += 1
    body = {"topics": [{"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs]}],
            "timeout_ms": 30000, "validate_only": validate_only}
    client.send_raw(protocol.request_frame(CREATE_TOPICS, version, client.correlation, body))
    return client.recv_frame()


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, bytes]:
    """Each case's answer frame, all from one gateway, in the order of CASES (the view's base first)."""
    g = GatewayProcess(str(tmp_path_factory.mktemp("create-answers") / "data")).start()
    client = RawClient(g.kafka_bootstrap)
    try:
        return {case: frame(client, version, case, configs, validate_only)
                for case, (version, configs, validate_only) in CASES.items()}
    finally:
        client.close()
        g.stop()


@pytest.mark.parametrize("case", list(CASES))
def test_answer_unchanged(answers, case):
    version, configs, validate_only = CASES[case]
    raw = answers[case]
    _corr, resp = protocol.decode_response(CREATE_TOPICS, version, raw)
    topic = resp["topics"][0]
    assert topic["error_code"] == 0, topic
    listed = {c["name"]: c["value"] for c in topic["configs"]}
    if validate_only:
        assert listed == {}
    else:
        assert len(listed) == 33 + 2 * case.startswith("view") and all(listed[k] == v for k, v in configs)
    assert hashlib.sha256(raw).hexdigest() == DIGESTS[case], (case, raw.hex())
