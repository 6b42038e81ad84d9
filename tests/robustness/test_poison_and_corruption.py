"""Stored bytes are never trusted blindly (issue 18): a poison entry (an inner-batch entry whose body
is not a record batch, written straight into the store) and a byte flipped in a CommitLog entry
below the checkpoint are skipped by every reader (librdkafka, the native client), each logged once;
the consumers read everything around them; the gateway logs no traceback."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer

import store
from client import ConsumeFrom, LitePullConsumer
from codec.kafka import records
from codec.remoting import FrameReader, RemotingCommand, RequestCode, encode, message as M
from gateway_process import GatewayProcess
from interop.inner_batch import entry_message, index_info

FILE_SIZE = "4m"
TOPIC = "PoisonT"


def kafka_batch(values: list[bytes]) -> records.Batch:
    rows = [(int(time.time() * 1000), None, v, []) for v in values]
    return records.parse_batches(records.build_batch(rows, base_timestamp=rows[0][0]))[0]


def append_batch(s, values: list[bytes]) -> None:
    b = kafka_batch(values)
    s.append(entry_message(TOPIC, 0, b, index_info(b), {}, int(time.time() * 1000), False))


def kafka_read_all(g, topic: str, want: int, timeout: float = 30.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": f"g-{topic}-{time.monotonic_ns()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "check.crcs": True})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m.value())
    finally:
        c.close()
    return got


def native_read_all(g, topic: str, want: int, timeout: float = 30.0) -> list[bytes]:
    c = LitePullConsumer(f"n-{topic}", g.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe(topic, "*")
    c.start()
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            got.extend(m.body for m in c.poll(1.0))
    finally:
        c.shutdown()
    return got


def runtime_info(g) -> dict:
    """GET_BROKER_RUNTIME_INFO's table (our robustness counters are in it)."""
    with socket.create_connection(("127.0.0.1", g.remoting_port), timeout=10) as sock:
        sock.sendall(encode(RemotingCommand(code=RequestCode.GET_BROKER_RUNTIME_INFO, opaque=7)))
        reader = FrameReader()
        while (resp := reader.next_command()) is None:
            reader.feed(sock.recv(65536))
    return json.loads(resp.body)["table"]


def gateway_log_is_clean(g) -> str:
    log = g.log()
    assert "Traceback" not in log
    return log


@pytest.fixture
def gw_factory(tmp_path):
    started = []

    def make(data_dir, *extra) -> GatewayProcess:
        g = GatewayProcess(str(data_dir), extra_args=["--commitlog-file-size", FILE_SIZE, *extra])
        started.append(g)
        return g.start()

    yield make
    for g in started:
        g.stop()


def test_poison_inner_batch_is_skipped_by_every_reader(tmp_path, gw_factory):
    data = tmp_path / "data"
    s = store.open(str(data), store.StoreConfig(commitlog_file_size=4 << 20))
    s.topics.create(TOPIC, 1, 1)
    append_batch(s, [b"a0", b"a1"])
    s.append(store.Message(TOPIC, 0, b"not a record batch at all", sys_flag=M.INNER_BATCH_FLAG, batch_count=3))
    s.append(store.Message(TOPIC, 0, b"native-1"))
    append_batch(s, [b"b0", b"b1", b"b2"])
    s.close()
    want = [b"a0", b"a1", b"native-1", b"b0", b"b1", b"b2"]

    g = gw_factory(data)
    assert kafka_read_all(g, TOPIC, len(want)) == want
    assert native_read_all(g, TOPIC, len(want)) == want
    log = gateway_log_is_clean(g)
    assert log.count("skipped entry at CommitLog offset") == 1  # one line per entry, not per request
    assert int(runtime_info(g)["skippedEntries"]) >= 2  # counted per skip (two readers)
    assert g.proc.poll() is None


def test_byte_flip_below_the_checkpoint_is_quarantined(tmp_path, gw_factory):
    data = tmp_path / "data"
    g = gw_factory(data)
    p = KafkaProducer({"bootstrap.servers": g.kafka_bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(300):
        p.produce("FlipT", b"v%03d" % i, partition=0)
        p.poll(0)
    assert p.flush(20) == 0
    g.stop()  # clean: the checkpoints are past every entry

    s = store.open(str(data), store.StoreConfig(commitlog_file_size=4 << 20))
    entries = list(s.iterate("FlipT", 0))
    victim = entries[len(entries) // 2][1]
    s.close()
    path = os.path.join(data, "commitlog", f"{0:020d}")
    at = victim.physical_offset + M.BODY_AT + records.HEADER_SIZE + 2  # inside the first record
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0xFF]))
    victim_values = {rec.value for rec in records.decode_records(
        kafka_batch_from_body(victim.body).records_bytes(), victim.batch_count)}
    want = [b"v%03d" % i for i in range(300) if b"v%03d" % i not in victim_values]

    g.start()
    assert kafka_read_all(g, "FlipT", len(want)) == want
    assert native_read_all(g, "FlipT", len(want)) == want
    log = gateway_log_is_clean(g)
    assert "quarantined the entry at CommitLog offset %d" % victim.physical_offset in log
    assert runtime_info(g)["quarantinedEntries"] == "1"
    g.stop()

    # --verify finds it at start, before any reader looks (and keeps it across restarts).
    os.unlink(os.path.join(data, "config", "quarantine.json"))
    g.extra_args.append("--verify")
    g.start()
    log = gateway_log_is_clean(g)
    assert "quarantined the entry at CommitLog offset %d" % victim.physical_offset in log
    assert "verify: checked 300 CommitLog entries, 1 quarantined" in log or "1 quarantined" in log
    assert kafka_read_all(g, "FlipT", len(want)) == want


def kafka_batch_from_body(body: bytes) -> records.Batch:
    return records.parse_batches(body)[0]
