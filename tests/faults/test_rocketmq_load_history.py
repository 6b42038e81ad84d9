"""The native RocketMQ workload records which broker acknowledged each send and the stored message
id (store host, CommitLog offset): its queue id is broker-local in a cluster, so without them the
history cannot say which gateway answered (seed 69739, docs/faults.md "Findings of the eighth
stop"). Against one real gateway process."""
from __future__ import annotations

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from rocketmq_load import RocketMQWorkload  # noqa: E402


def test_every_acknowledged_send_names_its_broker_and_stored_message_id(gateway):
    start = time.monotonic()
    workload = RocketMQWorkload(gateway.namesrv, lambda: time.monotonic() - start)
    stop = threading.Event()
    thread = workload.start(stop)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and sum(op["type"] == "ok" for op in workload.history) < 5:
        time.sleep(0.1)
    stop.set()
    thread.join(10)
    workload.finish()
    acked = [op for op in workload.history if op["type"] == "ok"]
    assert len(acked) >= 5, workload.history[-4:]
    assert all(op["broker"] and len(op["msg_id"]) == 32 for op in acked), acked[:2]
