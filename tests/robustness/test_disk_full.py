"""Disk full (issue 18): the data dir on a small tmpfs. Sends are refused the way RocketMQ refuses
them (SERVICE_NOT_AVAILABLE, "the broker's disk is full [...]") and Kafka Produce with
KAFKA_STORAGE_ERROR; reads keep working; the gateway stays up (no SIGBUS); once space is freed,
writes resume by themselves."""
from __future__ import annotations

import os
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer as KafkaProducer

from client import Admin, Message, MQBrokerError, Producer
from codec.remoting import ResponseCode
from gateway_process import GatewayProcess

FS_SIZE = 32 << 20
BODY = os.urandom(60_000)


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def start_gateway(tmp_path, mnt, ratio: int, file_size: str) -> GatewayProcess:
    g = GatewayProcess(str(mnt / "data"), extra_args=[
        "--commitlog-file-size", file_size, "--index-slots", "1000", "--index-entries", "4000",
        "--disk-max-used-space-ratio", str(ratio)])
    g.log_path = str(tmp_path / "gateway.log")  # not on the small filesystem
    return g.start()


def kafka_produce(g, topic: str, value: bytes) -> KafkaError | None:
    """One record, no retries; the delivery error (None when stored)."""
    p = KafkaProducer({"bootstrap.servers": g.kafka_bootstrap, "retries": 0, "message.timeout.ms": 10000,
                       "enable.idempotence": False})
    result = []
    p.produce(topic, value, partition=0, on_delivery=lambda err, msg: result.append(err))
    p.flush(15)
    assert result, "no delivery report"
    return result[0]


def fill_until_refused(producer: Producer, topic: str) -> MQBrokerError:
    for _ in range(FS_SIZE // len(BODY) + 20):
        try:
            producer.send(Message(topic, BODY))
        except MQBrokerError as exc:
            return exc
    pytest.fail("the disk never filled")


@pytest.mark.parametrize("ratio, file_size, cause", [(75, "4m", "limit 75 %)"), (95, "8m", "No space left")],
                         ids=["used-space-ratio", "allocation-fails"])
def test_disk_full_refuses_writes_keeps_reads_and_resumes(tmp_path, small_fs, ratio, file_size, cause):
    ballast = small_fs / "ballast"
    ballast.write_bytes(bytes(6 << 20))  # space an operator frees later
    g = start_gateway(tmp_path, small_fs, ratio, file_size)
    admin = Admin(g.namesrv).start()
    producer = Producer("disk-full-pg", g.namesrv, retry_times=0).start()
    try:
        admin.create_topic("DiskT", queues=1)
        assert kafka_produce(g, "DiskT", b"first") is None
        refusal = fill_until_refused(producer, "DiskT")
        assert refusal.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "the broker's disk is full [CL:" in refusal.remark
        err = kafka_produce(g, "DiskT", b"refused")
        assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR, err

        # Reads keep working: the first record comes back to a Kafka consumer.
        c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": "disk-full-reader",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["DiskT"])
        try:
            first = None
            deadline = time.monotonic() + 20
            while first is None and time.monotonic() < deadline:
                m = c.poll(1.0)
                if m is not None and m.error() is None:
                    first = m.value()
            assert first == b"first"
        finally:
            c.close()

        # Space comes back: writes resume without a restart.
        ballast.unlink()
        deadline = time.monotonic() + 20
        while True:
            try:
                producer.send(Message("DiskT", b"after"))
                break
            except MQBrokerError:
                assert time.monotonic() < deadline, "writes did not resume"
                time.sleep(0.5)
        assert kafka_produce(g, "DiskT", b"after-kafka") is None
        assert g.proc.poll() is None, "the gateway died"
        log = open(g.log_path, encoding="utf-8", errors="replace").read()
        assert "Traceback" not in log
        assert "disk full" in log and cause in log and "writes resume" in log
    finally:
        producer.shutdown()
        admin.shutdown()
        g.stop()

