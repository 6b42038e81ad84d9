"""A failing fdatasync (issue 26's fsync-error fault): the gateway runs with tests/faults/fsync_fault.c
preloaded, which fails fsync and fdatasync with EIO while a trigger file exists. Linux may drop the
dirty pages of a failed writeback and answer the next fdatasync with success, so a write whose
flush failed must never be acknowledged, even once the device works again: the gateway stops
(exit 3) instead of retrying, and a restart serves every write it did acknowledge."""
from __future__ import annotations

import os
import shutil
import sys
import threading

import pytest

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gateway_process import GatewayProcess

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "faults"))
import fsync_fault  # noqa: E402

TOPIC = "fsync"


def produce(g: GatewayProcess, value: bytes) -> KafkaError | None:
    """One acks=all record, no retries; its delivery error (None when acknowledged)."""
    p = Producer({"bootstrap.servers": g.kafka_bootstrap, "acks": "all", "retries": 0,
                  "enable.idempotence": False, "message.timeout.ms": 5000})
    result = []
    p.produce(TOPIC, value, partition=0, on_delivery=lambda err, msg: result.append(err))
    p.flush(15)
    assert result, "no delivery report"
    return result[0]


def read_values(g: GatewayProcess) -> list[bytes]:
    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": "fsync-reader", "enable.auto.commit": False})
    try:
        end = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1]
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got = []
        while len(got) < end:
            msg = c.poll(10)
            assert msg is not None, f"read {len(got)} of {end}"
            if not msg.error():
                got.append(msg.value())
        return got
    finally:
        c.close()


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the shim (make faults-tools)")
def test_a_write_whose_fdatasync_failed_is_never_acknowledged(tmp_path, monkeypatch):
    lib = fsync_fault.build(str(tmp_path))
    trigger = str(tmp_path / "fail-fsync")
    for key, value in fsync_fault.preload_env(lib, trigger, {}).items():
        monkeypatch.setenv(key, value)
    g = GatewayProcess(str(tmp_path / "data"), flush="sync").start()
    healer = None
    try:
        admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[TOPIC].result(10)
        assert produce(g, b"before") is None
        fsync_fault.fail(trigger)
        healer = threading.Timer(1.0, fsync_fault.heal, [trigger])  # the device works again soon
        healer.start()
        during = produce(g, b"during")
        assert during is not None, "acknowledged although its fdatasync failed"
        assert g.proc.wait(15) == 3, g.log()
        assert "may not be on disk" in g.log()
        g.stop()
        healer.join()
        g.start()
        assert b"before" in read_values(g)  # what was acknowledged survives
    finally:
        if healer is not None:
            healer.cancel()
        fsync_fault.heal(trigger)
        g.stop()
