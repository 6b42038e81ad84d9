"""`python -m gateway.admin` end to end against a real gateway: every subcommand, tables and --json,
and the exit codes of its one-line errors (1 refused / not found, 2 usage, 3 unreachable)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer, TopicPartition

from client import Admin, Message, Producer
from dead_letters import dead_lettering
from gateway_process import ROOT, GatewayProcess, free_port


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    http_port = free_port()
    g = GatewayProcess(str(tmp_path_factory.mktemp("admin") / "data"), extra_args=["--http-port", str(http_port)])
    g.http = f"127.0.0.1:{http_port}"
    g.start()
    yield g
    g.stop()


def admin(gw, *args, http: str | None = "gw") -> subprocess.CompletedProcess:
    endpoints = ["--bootstrap", gw.kafka_bootstrap, "--remoting", gw.namesrv]
    if http:
        endpoints += ["--http", gw.http if http == "gw" else http]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETGATE_")}
    return subprocess.run([sys.executable, "-m", "gateway.admin", *endpoints, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def ok_json(gw, *args):
    done = admin(gw, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def failed(gw, code: int, *args, http: str | None = "gw") -> str:
    done = admin(gw, *args, http=http)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.startswith("rocketgate: error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_help_lists_every_command(gw):
    done = admin(gw, "--help")
    assert done.returncode == 0
    for noun in ("topics", "groups", "offsets", "query", "dlq"):
        assert noun in done.stdout


def test_topics_create_list_describe_delete(gw):
    created = ok_json(gw, "topics", "create", "adm-t", "--partitions", "2", "--config", "retention.ms=60000")
    assert created["created"] == "adm-t"
    assert {"topic": "adm-t", "partitions": 2} in ok_json(gw, "topics", "list")
    table = admin(gw, "topics", "list").stdout.splitlines()
    assert table[0].split() == ["TOPIC", "PARTITIONS"] and any(line.split() == ["adm-t", "2"] for line in table)
    assert [r["partition"] for r in ok_json(gw, "topics", "describe", "adm-t")] == [0, 1]
    assert "already exists" in failed(gw, 1, "topics", "create", "adm-t")
    ok_json(gw, "topics", "delete", "adm-t")
    assert "adm-t" not in [r["topic"] for r in ok_json(gw, "topics", "list")]
    assert "does not exist" in failed(gw, 1, "topics", "describe", "adm-t")
    failed(gw, 2, "topics", "create", "x", "--config", "novalue")


def _produce_and_commit(gw, topic: str, group: str, count: int, commit_at: int) -> None:
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    for i in range(count):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 30
    while len(got) < commit_at and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m)
    c.commit(message=got[commit_at - 1], asynchronous=False)
    c.close()


def test_groups_lag_and_offset_resets(gw):
    ok_json(gw, "topics", "create", "adm-k", "--partitions", "1")
    _produce_and_commit(gw, "adm-k", "adm-g", count=5, commit_at=2)
    groups = {g["group"]: g for g in ok_json(gw, "groups", "list")}
    assert groups["adm-g"]["lag"] == 3 and groups["adm-g"]["topics"] == ["adm-k"]
    rows = ok_json(gw, "groups", "describe", "adm-g")
    assert [(r["topic"], r["queue"], r["committed"], r["end"], r["lag"]) for r in rows] == [("adm-k", 0, 2, 5, 3)]
    assert "LAG" in admin(gw, "groups", "describe", "adm-g").stdout.splitlines()[0]

    def committed():
        return [r["committed"] for r in ok_json(gw, "groups", "describe", "adm-g")]

    assert ok_json(gw, "offsets", "reset", "adm-g", "adm-k", "--to", "earliest")[0]["offset"] == 0
    assert committed() == [0]
    ok_json(gw, "offsets", "reset", "adm-g", "adm-k", "--to", "latest")
    assert committed() == [5]
    ok_json(gw, "offsets", "reset", "adm-g", "adm-k", "--to", "2000-01-01T00:00:00")
    assert committed() == [0]  # every record is newer
    failed(gw, 2, "offsets", "reset", "adm-g", "adm-k", "--to", "yesterday")
    assert "no committed offsets" in failed(gw, 1, "groups", "describe", "nobody-g")

    found = ok_json(gw, "query", "key", "adm-k", "k3")
    assert [(m["body"], m["offset"]) for m in found] == [("v3", 3)]
    assert "no message with key" in failed(gw, 1, "query", "key", "adm-k", "missing")


def test_group_names_that_need_quoting(gw):
    ok_json(gw, "topics", "create", "adm-odd", "--partitions", "1")
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "odd group/%41"})
    c.commit(offsets=[TopicPartition("adm-odd", 0, 0)], asynchronous=False)
    c.close()
    assert [(r["group"], r["topic"]) for r in ok_json(gw, "groups", "describe", "odd group/%41")] == \
        [("odd group/%41", "adm-odd")]
    assert ok_json(gw, "dlq", "list", "odd group/%41") == []


def test_query_by_msgid_and_dead_letters(gw):
    with Admin(gw.namesrv) as a:
        a.create_topic("adm-dlq", queues=1)
    with Producer("adm-pg", gw.namesrv) as p:
        sent = [p.send(Message("adm-dlq", b"dead%d" % i, keys="dk%d" % i, tags="T")) for i in range(3)]
    found = ok_json(gw, "query", "msgid", sent[1].offset_msg_id)
    assert (found["body"], found["keys"], found["tags"], found["topic"]) == ("dead1", "dk1", "T", "adm-dlq")
    failed(gw, 1, "query", "msgid", "nonsense")

    with dead_lettering("adm-cg", gw.namesrv, "adm-dlq"):
        deadline = time.monotonic() + 30
        while len(ok_json(gw, "dlq", "list", "adm-cg")) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    letters = ok_json(gw, "dlq", "list", "adm-cg")
    assert sorted(m["keys"] for m in letters) == ["dk0", "dk1", "dk2"] and {m["topic"] for m in letters} == {"adm-dlq"}

    one = ok_json(gw, "dlq", "resend", "adm-cg", "--msg-id", letters[0]["msg_id"])
    assert [(r["msg_id"], r["topic"]) for r in one] == [(letters[0]["msg_id"], "adm-dlq")]
    everything = ok_json(gw, "dlq", "resend", "adm-cg", "--all")
    assert sorted(r["msg_id"] for r in everything) == sorted(m["msg_id"] for m in letters)
    offsets = sorted(r["offset"] for r in one + everything)
    assert offsets == [3, 4, 5, 6]  # four new copies after the three originals
    assert "has no dead letters" in failed(gw, 1, "dlq", "resend", "nobody-g", "--all")


def test_unreachable_gateway_and_missing_http(gw):
    closed = f"127.0.0.1:{free_port()}"
    assert "cannot reach the gateway's HTTP API" in failed(gw, 3, "groups", "list", http=closed)
    assert "--http" in failed(gw, 2, "groups", "list", http=None)
    done = subprocess.run([sys.executable, "-m", "gateway.admin", "--remoting", closed, "dlq", "resend", "g",
                           "--msg-id", "7F00000100002A9F0000000000000000"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 3 and "cannot reach the remoting listener" in done.stderr
    failed(gw, 2, "topics", "frobnicate")
