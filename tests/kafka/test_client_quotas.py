"""KIP-13 client quotas: kafka-configs sets and describes them (AlterClientQuotas 49,
DescribeClientQuotas 48), and librdkafka clients over a producer_byte_rate / consumer_byte_rate are
slowed (throttle_time_ms, the connection muted) while other client ids are not. Checked against
Kafka 4.3 first (KAFKA_REFERENCE_BOOTSTRAP). Timing bounds are loose lower bounds only."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_target import eventually, target  # noqa: F401 (fixture)
from test_kafka_admin_cli import _ok, kafka_configs

RATE = 200_000  # bytes per second
PAYLOAD = b"q" * 10_000
MESSAGES = 400  # 4 MB: 2 MB over the quota's 10-window allowance, ~10 s at the quota


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _set(target, kind: str, client_id: str, key: str, value: int) -> None:
    _ok(kafka_configs(target, "--alter", "--add-config", f"{key}={value}", "--entity-type", kind,
                      "--entity-name", client_id), "kafka-configs --alter")
    eventually(lambda: _has(_describe(target, "--entity-type", kind, "--entity-name", client_id), f"{key}="))
    time.sleep(1.0)  # Kafka's broker applies the controller's quota record a little later


def _describe(target, *entity: str) -> str:
    return _ok(kafka_configs(target, "--describe", *entity), "kafka-configs --describe")


def _has(text: str, part: str) -> str:
    assert part in text, text
    return text


def test_kafka_configs_sets_describes_and_deletes_quotas(target):
    client, user = _name("qc"), _name("qu")
    _ok(kafka_configs(target, "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048",
                      "--entity-type", "clients", "--entity-name", client), "alter client")
    _ok(kafka_configs(target, "--alter", "--add-config", "producer_byte_rate=5", "--entity-type", "users",
                      "--entity-name", user, "--entity-type", "clients", "--entity-default"), "alter user+default")
    out = eventually(lambda: _has(_describe(target, "--entity-type", "clients", "--entity-name", client), "1024"))
    assert f"Quota configs for client-id '{client}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0" in out
    out = eventually(lambda: _has(_describe(target, "--entity-type", "users", "--entity-name", user,
                                            "--entity-type", "clients"), "producer_byte_rate"))
    assert f"Quota configs for user-principal '{user}', the default client-id are producer_byte_rate=5.0" in out
    _ok(kafka_configs(target, "--alter", "--delete-config", "producer_byte_rate", "--entity-type", "clients",
                      "--entity-name", client), "delete")
    out = eventually(lambda: _has(_describe(target, "--entity-type", "clients", "--entity-name", client),
                                  "are consumer_byte_rate=2048.0\n"))
    assert "producer_byte_rate" not in out
    for value, message in (("1.5", "producer_byte_rate cannot be a fractional value."),
                           ("0", "Quota producer_byte_rate must be greater than 0")):
        bad = kafka_configs(target, "--alter", "--add-config", f"producer_byte_rate={value}", "--entity-type",
                            "clients", "--entity-name", client)
        assert bad.returncode != 0 and f"InvalidRequestException: {message}" in bad.stdout + bad.stderr


@pytest.mark.parametrize("entity, ops, message", [
    ([], [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    ([("user", "")], [("producer_byte_rate", 1.0)], "Empty user not supported"),
    ([("bogus", "x")], [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: bogus"),
    ([("client-id", "x")], [("foo", 1.0)], "Invalid configuration key foo"),
    ([("client-id", "x")], [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)],
     "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=x})"),
])
def test_alter_refusals_as_kafka(target, entity, ops, message):
    body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                         "ops": [{"key": k, "value": v, "remove": False} for k, v in ops]}], "validate_only": True}
    entry = target.raw().call(49, 1, body)["entries"][0]
    assert (entry["error_code"], entry["error_message"]) == (42, message)


@pytest.mark.parametrize("components, code, message", [
    ([("client-id", 0, "x"), ("client-id", 0, "y")], 42,
     "Entity type client-id cannot appear more than once in the filter."),
    ([("bogus", 0, "x")], 35, "Unsupported entity type bogus"),
    ([("user", 7, "x")], 42, "Unknown match type 7"),
    ([("user", 1, "x")], 42, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
])
def test_describe_refusals_as_kafka(target, components, code, message):
    body = {"components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
            "strict": False}
    answer = target.raw().call(48, 1, body)
    assert (answer["error_code"], answer["error_message"]) == (code, message)
    assert answer["entries"] is None  # as Kafka: null, not an empty list


def test_kafka_configs_describes_users_without_sasl(target):
    """`--entity-type users` also asks for SCRAM credentials: without SASL users Kafka (and the
    gateway without --authorizer acl) answers that none exist, so the tool prints only the quotas."""
    user, unknown = _name("qu"), _name("nobody")
    _set(target, "users", user, "producer_byte_rate", 4096)
    line = f"Quota configs for user-principal '{user}' are producer_byte_rate=4096.0\n"
    assert line in _describe(target, "--entity-type", "users")
    assert _describe(target, "--entity-type", "users", "--entity-name", user) == line
    assert _describe(target, "--entity-type", "users", "--entity-name", unknown) == ""


def test_describe_scram_credentials_of_unknown_and_repeated_users(target):
    answer = target.raw().call(50, 0, {"users": [{"name": "q-twice"}, {"name": "q-twice"}, {"name": "q-none"}]})
    assert (answer["error_code"], answer["error_message"]) == (0, "")
    # Kafka answers in its HashMap's order: compared as a set
    results = answer["results"]
    assert sorted((r["user"], r["error_code"], r["error_message"], r["credential_infos"]) for r in results) == [
        ("q-none", 91, "Attempt to describe a user credential that does not exist: q-none", []),
        ("q-twice", 92, "Cannot describe SCRAM credentials for the same user twice in a single request: q-twice", [])]


def _topic(target) -> str:
    name = _name("quota")
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(15)
    return name


def _produce(target, topic: str, client_id: str) -> tuple[float, list[int]]:
    """(seconds to produce and flush MESSAGES, throttle times librdkafka reported)."""
    throttles: list[int] = []
    p = Producer({"bootstrap.servers": target.bootstrap, "client.id": client_id, "linger.ms": 5,
                  "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000))})
    began = time.monotonic()
    for _ in range(MESSAGES):
        while True:
            try:
                p.produce(topic, PAYLOAD)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(120) == 0
    elapsed = time.monotonic() - began
    p.poll(0.5)  # throttle callbacks still queued
    return elapsed, throttles


def test_producer_byte_rate_slows_that_client_only(target):
    topic = _topic(target)
    slow, free = _name("slow-producer"), _name("free-producer")
    _set(target, "clients", slow, "producer_byte_rate", RATE)
    _, free_throttles = _produce(target, topic, free)
    elapsed, throttles = _produce(target, topic, slow)
    print(f"quota-figures produce: {elapsed:.1f}s, throttle max {max(throttles, default=0)} ms, {len(throttles)} times")
    total = MESSAGES * len(PAYLOAD)
    # at the quota the bytes take total / RATE (20 s); the first 10 windows' worth pass unthrottled
    assert elapsed >= (total / RATE - 11) * 0.5, elapsed
    assert throttles and max(throttles) > 0, throttles
    assert not [t for t in free_throttles if t > 0], free_throttles


def _consume(target, topic: str, client_id: str, count: int) -> tuple[float, list[int]]:
    throttles: list[int] = []
    c = Consumer({"bootstrap.servers": target.bootstrap, "client.id": client_id, "group.id": _name("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000))})
    c.subscribe([topic])
    began, seen = None, 0
    deadline = time.monotonic() + 120
    try:
        while seen < count and time.monotonic() < deadline:
            for m in c.consume(500, 1.0):
                if m.error() is None:
                    began = began or time.monotonic()
                    seen += 1
        assert seen == count
        return time.monotonic() - began, throttles
    finally:
        c.close()


def test_consumer_byte_rate_slows_that_client_only(target):
    topic = _topic(target)
    _produce(target, topic, _name("filler"))
    slow, free = _name("slow-consumer"), _name("free-consumer")
    _set(target, "clients", slow, "consumer_byte_rate", RATE)
    _, free_throttles = _consume(target, topic, free, MESSAGES)
    elapsed, throttles = _consume(target, topic, slow, MESSAGES)
    print(f"quota-figures fetch: {elapsed:.1f}s, throttle max {max(throttles, default=0)} ms, {len(throttles)} times")
    total = MESSAGES * len(PAYLOAD)
    assert elapsed >= (total / RATE - 11) * 0.5, elapsed
    assert throttles and max(throttles) > 0, throttles
    assert not [t for t in free_throttles if t > 0], free_throttles


def test_a_throttled_connection_is_not_read_for_the_throttle_time(target):
    """KIP-219: the Produce answer comes at once with throttle_time_ms; the next request on that
    connection (here ApiVersions) is answered only once the throttle time is over."""
    from codec.kafka import protocol
    from codec.kafka.records import build_batch
    from kafka_raw import produce_body

    topic, client_id = _topic(target), _name("muted")
    _set(target, "clients", client_id, "producer_byte_rate", 1000)
    raw = target.raw()
    # 15 KB against 1,000 B/s measured over 10 s: 5 s more than the window
    batch = build_batch([(int(time.time() * 1000), None, b"m" * 15_000, [])])
    raw.send_raw(protocol.request_frame(0, 9, 1, produce_body(topic, 0, batch), client_id=client_id))
    _, answer = protocol.decode_response(0, 9, raw.recv_frame())
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    throttle_s = answer["throttle_time_ms"] / 1000
    assert throttle_s >= 3.0, answer["throttle_time_ms"]
    began = time.monotonic()
    raw.send_raw(protocol.request_frame(18, 3, 2, {}, client_id=client_id))
    protocol.decode_response(18, 3, raw.recv_frame())
    assert time.monotonic() - began >= throttle_s * 0.8
