"""Broker-side send flow control with real clients: the Java RocketMQ producer gets SYSTEM_BUSY
with RocketMQ's remarks; rocketmq-client 4.9 does not retry it, 5.2+ (5.3.3 here) retries it like
a real broker's refusal (retryResponseCodes has SYSTEM_BUSY since ISSUE #5838) up to
1 + retryTimesWhenSendFailed attempts, then throws MQClientException; Kafka producers (librdkafka, the Java
console producer) are answered with throttle_time_ms and deliver everything.

The conditions are forced: `--wait-time-mills-in-send-queue 0` makes every send "too long in the
queue"; `--store-write-delay-ms 300` (a throttled disk) with `--os-page-cache-busy-timeout-ms 100`
makes every write hold the store past the limit."""
import json

import pytest

from compat.harness import failure_context, run_on_gateway, start_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.tools import kafka_tool

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
    """Each write holds the store 300 ms (> 100): the next 300 ms of sends are refused, then one
    goes through again (and starts the next busy period)."""
    r, ctx = busy_send(tmp_path, version, SLOW_DISK, 6, 200)
    outcomes = r["outcomes"]
    assert outcomes[0]["ok"] and outcomes[0]["ms"] >= 300, (outcomes, ctx)
    refused = [o for o in outcomes if not o["ok"]]
    assert refused and all(o["code"] == 2 and o["remark"] == PC_REMARK for o in refused), outcomes
    assert sum(o["ok"] for o in outcomes) >= 2, outcomes  # flow control lasts a while, not forever
    if version == "4.9":  # no retry: exactly one attempt per send
        assert r["attempts"] == len(outcomes), r


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
