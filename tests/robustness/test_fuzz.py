"""The bounded, seeded fuzzer (issue 18) against both ports of a real gateway: frames recorded from
librdkafka and the native RocketMQ client (JSON and ROCKETMQ header serializations) are mutated and
sent; the gateway must stay up, log no traceback (a traceback is our bug, client input is
answered or the connection closed), and still serve real clients afterwards.
`make fuzz` runs it longer: FUZZ_FRAMES (per port), FUZZ_SEED."""
from __future__ import annotations

import os
import time

from confluent_kafka import Consumer, Producer as KafkaProducer

from client import ROCKETMQ, ConsumeFrom, LitePullConsumer, Message, Producer
from fuzz import RecordingProxy, fuzz

FRAMES = int(os.environ.get("FUZZ_FRAMES", "1500"))
SEED = int(os.environ.get("FUZZ_SEED", "18"))
PROXY_HOST = "127.0.0.2"


def record_kafka(bootstrap: str, topic: str) -> None:
    p = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "lz4"})
    for i in range(20):
        p.produce(topic, b"v%d" % i, key=b"k%d" % i, headers=[("TAGS", b"t"), ("h", b"x")], partition=i % 2)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-g", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 20
    while got < 20 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    try:
        c.commit(asynchronous=False)  # an OffsetCommit frame for the corpus (auto-commit may have sent it)
    except Exception:  # noqa: BLE001 - "no offset stored" when auto-commit just did
        pass
    c.close()
    assert got == 20


def record_remoting(namesrv: str, topic: str) -> None:
    for kw in ({}, {"serialize_type": ROCKETMQ}):
        p = Producer(f"fuzz-pg{len(kw)}", namesrv, **kw).start()
        for i in range(5):
            p.send(Message(topic, b"r%d" % i, tags="t", keys=f"key{i}", properties={"a": str(i)}))
        p.shutdown()
        c = LitePullConsumer(f"fuzz-cg{len(kw)}", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, **kw)
        c.subscribe(topic, "t")
        c.start()
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            got.extend(c.poll(1.0))
        c.shutdown()
        assert len(got) >= 5


def test_fuzzed_frames_from_real_clients_do_not_hurt_the_gateway(gateway_factory):
    g = gateway_factory(extra_args=["--advertised-host", PROXY_HOST])
    kafka = RecordingProxy((PROXY_HOST, g.kafka_port), ("127.0.0.1", g.kafka_port))
    remoting = RecordingProxy((PROXY_HOST, g.remoting_port), ("127.0.0.1", g.remoting_port))
    try:
        record_kafka(f"{PROXY_HOST}:{g.kafka_port}", "FuzzK")
        record_remoting(f"{PROXY_HOST}:{g.remoting_port}", "FuzzR")
        corpus_k, corpus_r = list(kafka.frames), list(remoting.frames)
        assert len(corpus_k) >= 10 and len(corpus_r) >= 10

        fuzz(g.kafka_port, corpus_k, FRAMES, SEED)
        fuzz(g.remoting_port, corpus_r, FRAMES, SEED + 1)

        assert g.proc.poll() is None, "the gateway died"
        log = open(g.log_path, errors="replace").read()
        assert "Traceback" not in log, log[log.find("Traceback") - 2000:][:6000]
        # Real clients are still served (their routes name the proxies' address).
        record_kafka(f"{PROXY_HOST}:{g.kafka_port}", "FuzzK2")
        record_remoting(f"{PROXY_HOST}:{g.remoting_port}", "FuzzR2")
    finally:
        kafka.close()
        remoting.close()
