"""Disk pressure while the object store is down (issue 32, "Faults"): a tiered gateway's data dir on
a small tmpfs, the real S3 server hung (SIGSTOP). Sealed files cannot be committed, so none is
deleted; the disk passes the used-space ratio and the existing flow control refuses writes:
RocketMQ SERVICE_NOT_AVAILABLE ("the broker's disk is full"), Kafka KAFKA_STORAGE_ERROR (both
retriable), while reads go on. Once the store answers again, uploads commit, local files go, writes
resume without a restart, and every acknowledged record is served once, in order, from offset 0
(the tier below the local start, the disk above)."""
from __future__ import annotations

import os
import subprocess
import time
import zlib

import pytest
from confluent_kafka import KafkaError, Producer as KafkaProducer

from client import Message, MQBrokerError, Producer
from codec.remoting import ResponseCode
from gateway_process import GatewayProcess
from tests.tier.test_tier_kafka import consume, create
from tests.tier.tier_gateway import FILE_SIZE, TIERED, bucket_keys, free_port, list_offset, local_files, metrics, \
    wait_for

FS_SIZE = 12 << 20
RATIO = 75
LOCAL_MS = 10_000
TOPIC = "pressure"
FILLER = os.urandom(60_000)


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


def kafka_send(gw, value: bytes) -> KafkaError | None:
    """One record, acks=all, no retries: the delivery error (None: acknowledged)."""
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "retries": 0, "message.timeout.ms": 10000,
                       "enable.idempotence": False})
    result = []
    p.produce(TOPIC, value, partition=0, on_delivery=lambda err, msg: result.append(err))
    p.flush(15)
    assert result, "no delivery report"
    return result[0]


@pytest.fixture
def gw(seaweed_s3, s3_bucket, small_fs, tmp_path):
    """A tiered gateway whose data dir is on the small filesystem (its log is not)."""
    http = free_port()
    g = GatewayProcess(str(small_fs / "data"), extra_args=[
        "--commitlog-file-size", FILE_SIZE, "--http-port", str(http), *seaweed_s3.tier_args(s3_bucket),
        "--index-slots", "1000", "--index-entries", "4000", "--disk-max-used-space-ratio", str(RATIO)])
    g.http = f"127.0.0.1:{http}"
    g.log_path = str(tmp_path / "gateway.log")
    try:
        yield g.start()
    finally:
        g.stop()


def fill_until_refused(producer, acked: list[bytes], first: int) -> MQBrokerError:
    """Send FILLER records until one is refused; the acknowledged ones (as stored) go to `acked`."""
    for i in range(first, first + FS_SIZE // len(FILLER) + 40):
        body = b"r%05d:" % i + FILLER
        try:
            producer.send(Message(TOPIC, body))
        except MQBrokerError as exc:
            return exc
        acked.append(zlib.compress(body, 5))  # as stored: the client compresses bodies over 4 KiB
    pytest.fail("the disk never filled")


def send(producer, acked: list[bytes], body: bytes) -> bool:
    """One small record; True (and noted in `acked`) when acknowledged."""
    try:
        producer.send(Message(TOPIC, body))
    except MQBrokerError:
        return False
    acked.append(body)
    return True


def manifests(seaweed_s3, bucket: str) -> set[int]:
    """Starts of the CommitLog files committed to the tier."""
    return {int(k.rsplit("/", 1)[1].split(".")[0]) for k in bucket_keys(seaweed_s3, bucket)
            if k.startswith("tier/manifests/")}


def test_disk_fills_while_store_down_writes_refused_nothing_lost_then_resume(gw, seaweed_s3, s3_bucket):
    create(gw, TOPIC, {"remote.storage.enable": "true", "local.retention.ms": str(LOCAL_MS)})
    acked: list[bytes] = []
    assert kafka_send(gw, b"k-first") is None
    acked.append(b"k-first")
    producer = Producer("pressure-pg", gw.namesrv, retry_times=0, send_timeout=10.0).start()
    for i in range(40):  # ~9 files, most committed before the store goes down, none old enough to go
        body = b"r%05d:" % i + FILLER
        producer.send(Message(TOPIC, body))
        acked.append(zlib.compress(body, 5))
    wait_for(lambda: len(manifests(seaweed_s3, s3_bucket)) >= 3, 30, "files committed")
    committed_before = manifests(seaweed_s3, s3_bucket)  # a round under way may commit one more
    seaweed_s3.pause()
    try:
        first_before = local_files(gw)[0]
        refusal = fill_until_refused(producer, acked, 100)
        assert refusal.code == ResponseCode.SERVICE_NOT_AVAILABLE  # a code RocketMQ's producers retry
        assert "the broker's disk is full [CL:" in refusal.remark
        err = kafka_send(gw, b"k-refused")
        assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR, err  # retriable in Kafka
        assert consume(gw, TOPIC, 0, 3) == acked[:3]  # local data still served
        # what waits for the store, counted while a round hangs on it (the old gauge read 0 or 1); a
        # sealed file counts once the flush reached its end, so the gauge is waited for
        waiting = [f for f in local_files(gw)[:-1] if f not in committed_before]
        assert len(waiting) >= 10, waiting
        lag = wait_for(lambda: (n := metrics(gw)[("rocketgate_tier_upload_lag_files", ())]) >= len(waiting) - 2 and n,
                       15, f"the upload-lag gauge to count the {len(waiting)} files waiting")
        assert lag <= len(waiting), (lag, waiting)

        # The files committed before the outage go once local.retention.ms passed, the store still
        # down; writes resume, fill the disk again, and are refused again: the rest is uncommitted.
        wait_for(lambda: local_files(gw)[0] > first_before, LOCAL_MS / 1000 + 20,
                 "the committed files to go while the store is down")
        wait_for(lambda: send(producer, acked, b"r-between"), 30, "sends taken again while the store is down")
        fill_until_refused(producer, acked, 1000)
        kept = local_files(gw)[0]
        time.sleep(3)  # local deletion and failed upload rounds go on meanwhile
        assert local_files(gw)[0] == kept, "a file deleted before its upload was committed"
    finally:
        seaweed_s3.resume()
    committed = manifests(seaweed_s3, s3_bucket)  # a file deleted while uncommitted can never be
    assert set(range(0, kept, 256 << 10)) <= committed, "a file deleted before its upload was committed"

    wait_for(lambda: local_files(gw)[0] > kept, 120, "the files committed after the outage to go")
    wait_for(lambda: send(producer, acked, b"r-after"), 60, "RocketMQ sends to be taken again")
    assert kafka_send(gw, b"k-after") is None
    acked.append(b"k-after")
    producer.shutdown()

    end = list_offset(gw, TOPIC, 0, -1)
    assert list_offset(gw, TOPIC, 0, -2) == 0 < list_offset(gw, TOPIC, 0, -4)
    got = consume(gw, TOPIC, 0, end)
    assert len(got) == end and len(set(got)) == len(got), "a record served twice"
    assert [v for v in got if v in set(acked)] == acked, "an acknowledged record lost or out of order"
    assert gw.proc.poll() is None, "the gateway died"
    log = gw.log()
    assert "disk full" in log and "writes resume" in log and "Traceback" not in log
