"""The harness's duplicates explainer (run.explain_duplicates) reads the stores only after the gateways
stopped. A running gateway under `--flush sync` keeps a ConsumeQueue unit appended less than 0.5 s after
the last checkpoint round in memory until its next flush or its stop; looked up in the live data dir, the
copy there was not found and a client's re-send was classed "unexplained" (seed 2614: 464 such). One real
gateway, one value stored twice under two producer ids (what a client re-send looks like), the second
copy still only in memory: the explainer must class it `client_resend`."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kafka"))
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from duplicates import explain_kept  # noqa: E402
from gateway_process import GatewayProcess  # noqa: E402
from kafka_raw import RawClient, produce_body, produce_error  # noqa: E402
from nodes import Nodes  # noqa: E402
from run import TOPIC, explain_duplicates  # noqa: E402

from codec.kafka import records  # noqa: E402
from codec.kafka.apis import INIT_PRODUCER_ID, PRODUCE  # noqa: E402
from store.tool.files import consume_queues  # noqa: E402

CHECKPOINT_ROUND_S = 0.5  # store/flush.py DERIVED_FLUSH_INTERVAL


def _producer_id(client: RawClient) -> int:
    init = client.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})
    assert init["error_code"] == 0, init
    return init["producer_id"]


def _send(client: RawClient, value: int, pid: int) -> int:
    batch = records.build_batch([(1000, None, str(value).encode(), [])], base_timestamp=1000, producer_id=pid,
                                producer_epoch=0, base_sequence=0)
    error, offset = produce_error(client.call(PRODUCE.key, 8, produce_body(TOPIC, 0, batch)))
    assert error == 0
    return offset


def _stored_twice_second_in_memory(g: GatewayProcess) -> tuple[int, list[dict]]:
    """A value stored twice (two producer ids), its second copy not yet in the ConsumeQueue file: tried
    again (a new value) when the machine was too slow to send it within one checkpoint round."""
    client = RawClient(g.kafka_bootstrap, timeout=30)
    try:
        for value in range(1, 11):
            first, second = _producer_id(client), _producer_id(client)
            time.sleep(CHECKPOINT_ROUND_S + 0.1)  # the first copy's flush runs a checkpoint round
            offsets = [_send(client, value, first), _send(client, value, second)]
            if consume_queues(g.data_dir)[(TOPIC, 0)].max_offset <= offsets[1]:
                return value, [{"partition": 0, "offset": o, "value": value} for o in offsets]
    finally:
        client.close()
    raise AssertionError("every second copy was written at once (the machine too slow for one round?)")


def test_a_client_resend_still_in_memory_is_explained_after_the_stop(tmp_path):
    g = GatewayProcess(str(tmp_path / "g1"), flush="sync").start()
    try:
        admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[TOPIC].result(30)
        value, final_read = _stored_twice_second_in_memory(g)
        nodes = Nodes.__new__(Nodes)  # the harness's nodes without namespaces: this one gateway as g1
        nodes.run_dir, nodes.ids, nodes.procs = str(tmp_path), [1], {"g1": g.proc}
        result = {"duplicated": [value], "reordered": [], "lost": [], "unexpected": [], "final_read": final_read}
        workloads = {"queue": {"history": [], "result": result}}
        explain_duplicates(workloads, nodes, str(tmp_path))
        assert result["duplicated_by"] == {"client_resend": 1}
        assert (result["duplicated"], result["client_resent"], result["valid"]) == ([], [value], True)
        assert g.proc.poll() is not None and "explained_killed" not in result  # stopped cleanly
        shutil.copytree(g.data_dir, tmp_path / "kept-g1")  # as --keep-data: explained again from the copy
        with open(tmp_path / "history.json", "w") as f:
            json.dump({"workloads": workloads}, f)
        assert explain_kept(str(tmp_path)) == {"client_resend": 1}
    finally:
        g.stop()
