"""Broker-side send flow control with real clients: the Java RocketMQ producer gets SYSTEM_BUSY
with RocketMQ's remarks; rocketmq-client 4.9 does not retry it, 5.2+ (5.3.3 here) retries it like
a real broker's refusal (retryResponseCodes has SYSTEM_BUSY since ISSUE #5838) up to
1 + retryTimesWhenSendFailed attempts, then throws MQClientException; Kafka producers (librdkafka, the Java
console producer) are answered with throttle_time_ms and deliver everything.

The conditions are forced, never timed: `--wait-time-mills-in-send-queue 0` makes every send "too
long in the queue"; the stalled-disk seam `--store-write-hold-file F` (store.seams: every store write
waits while F exists) holds the store for as long as the test wants, so sends are refused while it is
held and taken again once the test releases it. `--store-write-delay-ms 300` (a throttled disk) with
`--os-page-cache-busy-timeout-ms 100` makes every write slow, for the Kafka throttling tests."""
import json
import os
import time

import pytest

from compat.harness import failure_context, run_on_gateway, start_gateway
from compat.jvm import ROCKETMQ_CLIENTS, ScenarioRun
from compat.tools import kafka_tool
from shard_aware import one_queue_each

pytestmark = pytest.mark.timeout(600)
ATTEMPTS = {"4.9": 1, "5": 3}  # per refused send: 4.9 gives up at once, 5.3 after 1 + 2 retries
SLOW_DISK = ["--os-page-cache-busy-timeout-ms", "100", "--store-write-delay-ms", "300"]
PC_REMARK = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
QUEUE_REMARK = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "


def busy_send(directory, version, gateway_args, n, pause_ms):
    with run_on_gateway(directory, ROCKETMQ_CLIENTS[version], "compat.RocketCompat",
                        lambda gw: [gw.namesrv, "fc", f"busy_send:fc-topic:{n}:{pause_ms}"],
                        gateway_args=gateway_args) as results:
        r = results["busy_send"]
        return r, failure_context(results.gw)


@pytest.mark.parametrize("version", ["4.9", "5"])
def test_send_that_waited_too_long_is_refused(tmp_path, version):
    r, ctx = busy_send(tmp_path, version, ["--wait-time-mills-in-send-queue", "0"], 3, 0)
    assert [o["ok"] for o in r["outcomes"]] == [False] * 3, (r, ctx)
    assert all(o["code"] == 2 and o["remark"].startswith(QUEUE_REMARK) for o in r["outcomes"]), r
    assert all(o.get("gave_up", False) == (version == "5") for o in r["outcomes"]), r
    assert r["attempts"] == 3 * ATTEMPTS[version], r


@pytest.mark.parametrize("version", ["4.9", "5"])
def test_store_held_too_long_refuses_sends_for_a_while(tmp_path, version):
    """A Kafka record's write is held (the stalled-disk seam) on every broker (one, or each shard:
    a broker's flow control is its own, and the seam holds every shard's writes): every RocketMQ
    send meanwhile is refused with PC_SYNCHRONIZED; once the test releases the store, the held
    records are acknowledged and sends go through again. Used to be timed (300 ms writes, 200 ms
    pauses): under load no send was refused."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    hold = str(tmp_path / "hold-store-writes")
    gw = start_gateway(tmp_path, ["--store-write-hold-file", hold, "--os-page-cache-busy-timeout-ms", "1",
                                  "--wait-time-mills-in-send-queue", "60000"])  # a loaded machine: no queue refusals
    brokers = one_queue_each()
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    admin.create_topics([NewTopic("fc-held", brokers, 1)])["fc-held"].result(30)
    held = Producer({"bootstrap.servers": gw.kafka_bootstrap, "message.timeout.ms": 300000})
    delivered = []
    try:
        for p in range(brokers):
            held.produce("fc-held", b"held", partition=p, on_delivery=lambda err, _m: delivered.append(err))
        held.flush(30)  # the topic exists and the records are stored: the seam is armed after them
        assert delivered == [None] * brokers, delivered
        open(hold, "w").close()
        for p in range(brokers):
            held.produce("fc-held", b"held-2", partition=p, on_delivery=lambda err, _m: delivered.append(err))
        _wait_for_log(gw, "store write held while", held, count=brokers)
        log_dir = str(tmp_path / "logs")
        args = lambda n: [gw.namesrv, "fc", f"busy_send:fc-topic:{n}:0"]  # noqa: E731
        refused = ScenarioRun(ROCKETMQ_CLIENTS[version], "compat.RocketCompat", args(3), log_dir)["busy_send"]
        os.unlink(hold)
        assert held.flush(60) == 0 and delivered == [None] * 2 * brokers, delivered  # acknowledged once released
        taken = ScenarioRun(ROCKETMQ_CLIENTS[version], "compat.RocketCompat", args(2), log_dir)["busy_send"]
    finally:
        if os.path.exists(hold):
            os.unlink(hold)
        gw.stop()
    ctx = failure_context(gw)
    assert [o["ok"] for o in refused["outcomes"]] == [False] * 3, (refused, ctx)
    assert all(o["code"] == 2 and o["remark"] == PC_REMARK for o in refused["outcomes"]), refused
    assert all(o.get("gave_up", False) == (version == "5") for o in refused["outcomes"]), refused
    assert refused["attempts"] == 3 * ATTEMPTS[version], refused
    assert [o["ok"] for o in taken["outcomes"]] == [True, True], (taken, ctx)  # for a while, not forever


def _wait_for_log(gw, text: str, producer, timeout: float = 60.0, count: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while gw.log().count(text) < count:
        assert time.monotonic() < deadline, f"no {text!r} in the gateway log" + failure_context(gw)
        producer.poll(0.05)


@pytest.fixture(scope="module")
def slow_gw(tmp_path_factory):
    g = start_gateway(tmp_path_factory.mktemp("slow-disk"), SLOW_DISK)
    yield g
    g.stop()


def test_librdkafka_is_throttled_and_delivers_everything(slow_gw):
    from confluent_kafka import Producer
    stats = []
    p = Producer({"bootstrap.servers": slow_gw.kafka_bootstrap, "linger.ms": 0, "statistics.interval.ms": 100,
                  "stats_cb": stats.append, "message.timeout.ms": 60000})
    errors = []
    for i in range(10):
        p.produce("fc-kafka", b"v%d" % i, on_delivery=lambda err, _m: err and errors.append(err))
        p.poll(0.05)
    assert p.flush(60) == 0 and not errors, errors
    p.poll(0.3)  # one more statistics round
    throttle = max(b["throttle"]["max"] for s in stats for b in json.loads(s)["brokers"].values())
    assert throttle > 0, "librdkafka saw no throttle_time_ms"


def test_java_console_producer_is_not_timed_out(slow_gw, tmp_path):
    lines = [f"c{i}" for i in range(8)]
    r = kafka_tool("kafka-console-producer", ["--bootstrap-server", slow_gw.kafka_bootstrap, "--topic", "fc-java",
                                              "--producer-property", "request.timeout.ms=20000"],
                   str(tmp_path), input="\n".join(lines) + "\n")
    assert r.returncode == 0 and "Exception" not in r.stderr, r.stderr[-3000:]
    r = kafka_tool("kafka-console-consumer", ["--bootstrap-server", slow_gw.kafka_bootstrap, "--topic", "fc-java",
                                              "--from-beginning", "--max-messages", str(len(lines)),
                                              "--timeout-ms", "60000"], str(tmp_path))
    assert sorted(r.stdout.split()) == sorted(lines), r.stdout + r.stderr[-2000:]
