"""`rocketgate store dump|verify|rebuild` on stores written by a real gateway process (kafka-python
and the native RocketMQ client), clean and damaged: a torn CommitLog tail, a flipped body byte, a
lost ConsumeQueue (verify exits 1 naming it; rebuild restores it and a gateway serves every record)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from client import Message, Producer
from gateway_process import GatewayProcess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAFKA_TOPIC, ROCKET_TOPIC, VIEW_TOPIC, N = "tool-kafka", "tool-rocket", "tool-view", 60


def tool(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway.admin", "store", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A data dir written by a gateway (stopped cleanly), and what verify said while it was live."""
    data = str(tmp_path_factory.mktemp("tool") / "data")
    gw = GatewayProcess(data).start()
    try:
        kp = KafkaProducer(bootstrap_servers=gw.kafka_bootstrap, linger_ms=5)
        for i in range(N):
            kp.send(KAFKA_TOPIC, key=b"k%d" % i, value=b"kafka-%d" % i, partition=i % 2,
                    headers=[("h", b"%d" % i)])
        kp.flush()
        kp.close()
        with Producer("tool-pg", gw.namesrv) as p:
            for i in range(N):
                p.send(Message(ROCKET_TOPIC, b"rocket-%d" % i, tags="TagA" if i % 3 else "TagB", keys=[f"key{i}"]))
        admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
        admin.create_topics([NewTopic(VIEW_TOPIC, 4, 1, config={  # a filtered view: units point at the base's entries
            "filter.source.topic": ROCKET_TOPIC, "filter.tag.expression": "TagA"})])[VIEW_TOPIC].result(15)
        live = tool("verify", data, "--json")
    finally:
        gw.stop()
    return data, live


def _copy(made, tmp_path) -> str:
    dst = str(tmp_path / "data")
    shutil.copytree(made[0], dst)
    return dst


def test_verify_is_clean_on_a_live_and_a_stopped_gateway(made):
    data, live = made
    assert live.returncode == 0, live.stdout + live.stderr
    r = tool("verify", data, "--json")
    assert r.returncode == 0, r.stdout
    report = json.loads(r.stdout)
    assert report["ok"] and report["damage"] == []
    assert report["counts"]["entries"] >= N + 2  # the RocketMQ messages plus at least one batch per partition
    assert report["counts"]["index entries"] >= N  # every RocketMQ key
    text = tool("verify", data)
    assert text.returncode == 0 and text.stdout.startswith("OK:")
    view_units = sum(int(tool("dump", data, "--topic", VIEW_TOPIC, "--queue", str(q), "--json").stdout.count("\n"))
                     for q in range(4))
    assert view_units == len([i for i in range(N) if i % 3])  # verified against the base topic's entries


def test_dump_a_queue_deep_iteration_shows_every_kafka_record(made):
    data, _ = made
    values = []
    for partition in (0, 1):
        r = tool("dump", data, "--topic", KAFKA_TOPIC, "--queue", str(partition), "--deep-iteration",
                 "--print-data-log", "--json")
        assert r.returncode == 0, r.stderr
        for line in r.stdout.splitlines():
            item = json.loads(line)
            if not item.get("same_entry"):
                assert item["inner_batch"] and item["topic"] == KAFKA_TOPIC
                values += [(rec["offset"], rec["key"], rec["value"], rec["headers"]) for rec in item["records"]]
    assert sorted(v[2] for v in values) == sorted(f"kafka-{i}" for i in range(N))
    assert all(v[3] == [{"key": "h", "value": v[2].split("-")[1]}] and v[1] == "k" + v[2].split("-")[1]
               for v in values)


def test_dump_a_commitlog_range_prints_rocketmq_messages(made):
    data, _ = made
    r = tool("dump", data, "--print-data-log")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if f"topic: {ROCKET_TOPIC} " in ln]
    assert len(lines) == N and "body: rocket-0" in lines[0] and '"TAGS": "TagB"' in lines[0]


def _last_commitlog_file(data):
    d = os.path.join(data, "commitlog")
    return os.path.join(d, sorted(os.listdir(d))[-1])


def test_a_torn_commitlog_tail_is_damage(made, tmp_path):
    data = _copy(made, tmp_path)
    path = _last_commitlog_file(data)
    os.truncate(path, os.path.getsize(path) - 10)
    r = tool("verify", data)
    assert r.returncode == 1
    assert "DAMAGE CommitLog" in r.stdout and "torn tail" in r.stdout


def test_a_flipped_body_byte_is_damage(made, tmp_path):
    data = _copy(made, tmp_path)
    _flip_rocket_body(data)
    r = tool("verify", data, "--json")
    assert r.returncode == 1
    damage = json.loads(r.stdout)["damage"]
    assert any(d["what"] == "body CRC mismatch" for d in damage), damage


def test_a_lost_consume_queue_is_damage_and_rebuild_restores_it(made, tmp_path):
    data = _copy(made, tmp_path)
    shutil.rmtree(os.path.join(data, "consumequeue", KAFKA_TOPIC, "1"))
    shutil.rmtree(os.path.join(data, "consumequeue", ROCKET_TOPIC))
    r = tool("verify", data)
    assert r.returncode == 1
    assert f"DAMAGE ConsumeQueue {KAFKA_TOPIC}/1: missing" in r.stdout
    assert f"DAMAGE ConsumeQueue {ROCKET_TOPIC}/0: missing" in r.stdout
    rb = tool("rebuild", data, "--json")
    assert rb.returncode == 0, rb.stderr
    assert json.loads(rb.stdout)["entries"] >= N + 2
    assert not any("rebuild-old" in n for n in os.listdir(data))
    assert tool("verify", data).returncode == 0
    gw = GatewayProcess(data).start()
    try:
        c = KafkaConsumer(bootstrap_servers=gw.kafka_bootstrap, auto_offset_reset="earliest",
                          consumer_timeout_ms=5000, enable_auto_commit=False)
        c.assign([TopicPartition(KAFKA_TOPIC, 0), TopicPartition(KAFKA_TOPIC, 1)]
                 + [TopicPartition(ROCKET_TOPIC, q) for q in range(4)])
        got = sorted(m.value.decode() for m in c)
        c.assign([TopicPartition(VIEW_TOPIC, q) for q in range(4)])  # views: backfilled by the gateway at start
        c.seek_to_beginning()
        view = sorted(m.value.decode() for m in c)
        c.close()
    finally:
        gw.stop()
    assert got == sorted([f"kafka-{i}" for i in range(N)] + [f"rocket-{i}" for i in range(N)])
    assert view == sorted(f"rocket-{i}" for i in range(N) if i % 3)


def _flip_rocket_body(data, needle=b"rocket-7"):
    path = _last_commitlog_file(data)
    at = open(path, "rb").read().index(needle)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"R")


def test_an_index_entry_with_a_foreign_key_hash_is_damage(made, tmp_path):
    data = _copy(made, tmp_path)
    index_dir = os.path.join(data, "index")
    path = os.path.join(index_dir, sorted(n for n in os.listdir(index_dir) if n.isdigit())[0])
    entry1 = 40 + 4 * 5_000_000 + 20  # entry 1 (entry 0 is never used), the gateway's default slots
    with open(path, "r+b") as f:
        f.seek(entry1)
        f.write(b"\x00\x00\x00\x01")  # key hash 1: no key of the entry it points at
    r = tool("verify", data)
    assert r.returncode == 1
    assert "DAMAGE IndexFile" in r.stdout and "#1: key hash 1 is none of the keys" in r.stdout
    assert "is not in the index" in r.stdout  # the entry's own key lost its index entry


def test_a_unit_pointing_at_another_entry_is_damage(made, tmp_path):
    data = _copy(made, tmp_path)
    qdir = os.path.join(data, "consumequeue", ROCKET_TOPIC, "0")
    path = os.path.join(qdir, sorted(os.listdir(qdir))[0])
    raw = bytearray(open(path, "rb").read())
    raw[3 * 20:4 * 20] = raw[0:20]  # unit 3 points at the entry of offset 0
    open(path, "wb").write(bytes(raw))
    r = tool("verify", data)
    assert r.returncode == 1
    assert f"DAMAGE ConsumeQueue {ROCKET_TOPIC}/0@3: points at the entry of offsets 0+1" in r.stdout


def test_an_entry_the_gateway_quarantined_is_reported(made, tmp_path):
    """The robustness path: a flipped bit below the checkpoint, found by a gateway's --verify start
    and quarantined (served to no client); verify still exits 1 and names it quarantined."""
    data = _copy(made, tmp_path)
    _flip_rocket_body(data)
    gw = GatewayProcess(data, extra_args=["--verify"]).start()
    gw.stop()
    quarantine = json.load(open(os.path.join(data, "config", "quarantine.json")))["entries"]
    assert len(quarantine) == 1
    r = tool("verify", data, "--json")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    (phys,) = quarantine
    assert {"where": f"CommitLog {phys}", "what": "body CRC mismatch"} in report["damage"]
    assert report["counts"]["quarantined entries"] == 1


def test_rebuild_refuses_a_locked_data_dir(made, tmp_path):
    lock = pytest.importorskip("store.lock", reason="store/lock.py (the data-dir lock) is not merged yet")
    data = _copy(made, tmp_path)
    held = lock.acquire(data, what="gateway")
    try:
        r = tool("rebuild", data)
        assert r.returncode == 3 and "locked" in r.stderr
        v = tool("verify", data)
        assert v.returncode == 0 and "reading it live" in v.stderr
    finally:
        held.release()


def test_rebuild_refuses_to_cut_a_commitlog_damaged_before_its_tail(made, tmp_path):
    """A replay from the start stops at the first bad entry and recovery cuts the CommitLog there:
    rebuild checks first and refuses, leaving every file as it was."""
    data = _copy(made, tmp_path)
    _flip_rocket_body(data)
    path = _last_commitlog_file(data)
    size, queues = os.path.getsize(path), sorted(os.listdir(os.path.join(data, "consumequeue")))
    r = tool("rebuild", data)
    assert r.returncode == 1 and "a rebuild would cut it" in r.stderr and "body CRC mismatch" in r.stderr
    assert os.path.getsize(path) == size and sorted(os.listdir(os.path.join(data, "consumequeue"))) == queues


def test_rebuild_cuts_a_torn_tail_as_recovery_does(made, tmp_path):
    data = _copy(made, tmp_path)
    path = _last_commitlog_file(data)
    os.truncate(path, os.path.getsize(path) - 10)
    r = tool("rebuild", data, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cut_at"] is not None
    assert tool("verify", data).returncode == 0  # the torn entry is gone, the rest is whole
