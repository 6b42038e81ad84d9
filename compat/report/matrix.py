"""The cross-protocol matrix: every producer client the project has × every consumer client.

Each producer writes three records (key `k-<i>`, value `<producer>-<i>`, tag/header `TagX`) to its own topic;
each consumer reads that topic from the start in its own group and must see the three values and keys.
On the gateway all pairs run (a Kafka producer read by a RocketMQ consumer and the reverse); on the real
brokers only same-protocol pairs exist, so their cells show what the clients themselves do.
"""
from __future__ import annotations

import os
import time
import uuid

from compat.jvm import ROCKETMQ_CLIENTS, ScenarioRun
from compat.report.suite import FAIL, PASS, SuiteRun
from compat.tools import kafka_tool, kcat, kcat_json_lines

N = 3
KAFKA, ROCKETMQ = "kafka", "rocketmq"


def _records(producer: str) -> list[tuple[str, str]]:
    return [(f"k-{i}", f"{producer}-{i}") for i in range(N)]


# ---- producers: (system, topic, log_dir) -> list of (key, value) actually sent ----

def produce_confluent(system, topic, log_dir):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": system.bootstrap})
    sent = _records("confluent-kafka")
    for k, v in sent:
        p.produce(topic, key=k.encode(), value=v.encode(), partition=0, headers=[("TAGS", b"TagX")])
    assert p.flush(30) == 0, "records left unsent"
    return sent


def produce_kafka_python(system, topic, log_dir):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=system.bootstrap)
    sent = _records("kafka-python")
    for k, v in sent:
        p.send(topic, key=k.encode(), value=v.encode(), partition=0, headers=[("TAGS", b"TagX")]).get(30)
    p.close()
    return sent


def produce_kcat(system, topic, log_dir):
    sent = _records("kcat")
    for k, v in sent:
        r = kcat(["-P", "-b", system.bootstrap, "-t", topic, "-p", "0", "-k", k, "-H", "TAGS=TagX"], input=v.encode())
        assert r.returncode == 0, r.stderr.decode()
    return sent


def produce_java_kafka(system, topic, log_dir):
    sent = _records("java-kafka")
    lines = "".join(f"{k}|{v}\n" for k, v in sent)
    r = kafka_tool("kafka-console-producer", ["--bootstrap-server", system.bootstrap, "--topic", topic,
                                              "--property", "parse.key=true", "--property", "key.separator=|"],
                   log_dir, input=lines)
    assert r.returncode == 0, r.stderr[-500:]
    return sent


def produce_native(system, topic, log_dir):
    from client import Message, Producer
    sent = _records("native-python")
    with Producer(f"pg-{uuid.uuid4().hex[:8]}", system.namesrv) as p:
        for k, v in sent:
            p.send(Message(topic, v.encode(), tags="TagX", keys=[k]))
    return sent


def produce_java_rocketmq(version):
    def produce(system, topic, log_dir):
        run = ScenarioRun(ROCKETMQ_CLIENTS[version], "compat.RocketCompat",
                          [system.namesrv, f"mp{uuid.uuid4().hex[:6]}", f"cross_produce:{topic}"], log_dir)
        run["cross_produce"]
        return [(f"ck-{i}", f"cross-{i}") for i in range(3)]
    return produce


# ---- consumers: (system, topic, expected count, log_dir) -> list of (key, value) received ----

def consume_confluent(system, topic, n, log_dir):
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": system.bootstrap, "group.id": f"cg-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    got = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 40
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(((m.key() or b"").decode(), m.value().decode()))
    finally:
        c.close()
    return got


def consume_kafka_python(system, topic, n, log_dir):
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=system.bootstrap, group_id=f"cg-{uuid.uuid4().hex[:8]}",
                      auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=30000)
    got = []
    try:
        for m in c:
            got.append(((m.key or b"").decode(), m.value.decode()))
            if len(got) >= n:
                break
    finally:
        c.close()
    return got


def consume_kcat(system, topic, n, log_dir):
    r = kcat(["-C", "-b", system.bootstrap, "-G", f"cg-{uuid.uuid4().hex[:8]}", "-o", "beginning", "-c", str(n),
              "-J", "-X", "auto.offset.reset=earliest", topic], timeout=60)
    return [(m.get("key") or "", m.get("payload") or "") for m in kcat_json_lines(r.stdout)]


def consume_java_kafka(system, topic, n, log_dir):
    r = kafka_tool("kafka-console-consumer", ["--bootstrap-server", system.bootstrap, "--topic", topic,
                                              "--group", f"cg-{uuid.uuid4().hex[:8]}", "--from-beginning",
                                              "--max-messages", str(n), "--timeout-ms", "40000",
                                              "--property", "print.key=true", "--property", "key.separator=|"],
                   log_dir)
    return [tuple(line.split("|", 1)) for line in r.stdout.splitlines() if "|" in line]


def consume_native(system, topic, n, log_dir):
    from client import ConsumeFrom, LitePullConsumer
    c = LitePullConsumer(f"cg-{uuid.uuid4().hex[:8]}", system.namesrv, auto_commit=False,
                         consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    got = []
    try:
        c.assign(c.fetch_queues(topic))
        deadline = time.monotonic() + 40
        while len(got) < n and time.monotonic() < deadline:
            got += [(" ".join(m.keys or []) if isinstance(m.keys, list) else m.keys or "", m.body.decode())
                    for m in c.poll(1.0)]
    finally:
        c.shutdown()
    return got


def consume_java_rocketmq(version):
    def consume(system, topic, n, log_dir):
        run = ScenarioRun(ROCKETMQ_CLIENTS[version], "compat.RocketCompat",
                          [system.namesrv, f"mc{uuid.uuid4().hex[:6]}", f"cross_consume:{topic}:*:{n}"], log_dir,
                          timeout=120)
        return [(m["keys"] or "", m["body"]) for m in run["cross_consume"]["received"]]
    return consume


# (name, protocol, function)
PRODUCERS = [("confluent-kafka", KAFKA, produce_confluent), ("kafka-python", KAFKA, produce_kafka_python),
             ("kcat", KAFKA, produce_kcat), ("Java kafka-clients 4 (console producer)", KAFKA, produce_java_kafka),
             ("native Python RocketMQ", ROCKETMQ, produce_native)] + [
    (f"Java rocketmq-client {v}", ROCKETMQ, produce_java_rocketmq(v)) for v in sorted(ROCKETMQ_CLIENTS)]
CONSUMERS = [("confluent-kafka", KAFKA, consume_confluent), ("kafka-python", KAFKA, consume_kafka_python),
             ("kcat", KAFKA, consume_kcat), ("Java kafka-clients 4 (console consumer)", KAFKA, consume_java_kafka),
             ("native Python RocketMQ", ROCKETMQ, consume_native)] + [
    (f"Java rocketmq-client {v}", ROCKETMQ, consume_java_rocketmq(v)) for v in sorted(ROCKETMQ_CLIENTS)]


def create_rocketmq_topic(system, topic: str) -> None:
    """RocketMQ producers write to a topic created first (4 queues), as an operator would: RocketMQ's own
    auto-creation goes through the TBW102 route, which only the Java client uses."""
    from client import Admin
    with Admin(system.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    time.sleep(1.0)  # the broker registers the new route with its name server


def _reason(e: Exception) -> str:
    """The exception, with a Java client's exception line when the error carries a stack trace."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    java = next((x for x in lines[1:] if "Exception" in x or "Error" in x), "")
    return f"{type(e).__name__}: {lines[0] if lines else ''} {java}".strip()


def run(systems: dict, log_dir: str) -> SuiteRun:
    """`systems` maps protocol -> started System serving it (the gateway for both, or each real broker)."""
    name = "gateway" if len({id(s) for s in systems.values()}) == 1 else "real brokers"
    result = SuiteRun("cross-protocol matrix", name)
    started = time.monotonic()
    os.makedirs(log_dir, exist_ok=True)
    for p_name, p_proto, produce in PRODUCERS:
        if p_proto not in systems:
            continue
        topic = f"mx-{p_name.split()[0].replace('-', '')[:12]}-{uuid.uuid4().hex[:6]}"
        pairs = [(c_name, consume) for c_name, c_proto, consume in CONSUMERS
                 if c_proto in systems and systems[c_proto] is systems[p_proto]]
        try:
            if p_proto == ROCKETMQ:
                create_rocketmq_topic(systems[p_proto], topic)
            sent = produce(systems[p_proto], topic, log_dir)
        except Exception as e:  # noqa: BLE001 - the report records any client failure as the cell's reason
            for c_name, _ in pairs:
                result.add(f"{p_name} → {c_name}", FAIL, f"producer failed: {_reason(e)}")
            continue
        for c_name, consume in pairs:
            cell = f"{p_name} → {c_name}"
            try:
                got = consume(systems[p_proto], topic, len(sent), log_dir)
                if sorted(got) == sorted(sent):
                    result.add(cell, PASS)
                else:
                    result.add(cell, FAIL, f"expected {sorted(sent)}, got {sorted(got)}")
            except Exception as e:  # noqa: BLE001
                result.add(cell, FAIL, _reason(e))
    result.seconds = time.monotonic() - started
    return result
