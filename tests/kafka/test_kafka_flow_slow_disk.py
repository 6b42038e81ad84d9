"""A slow disk must not stall the gateway through Kafka Produce either: while a produce's store write
is blocked (`--store-write-delay-ms`, a throttled disk on demand; Apache Kafka has no such switch, so
this runs against the gateway only), Metadata on another connection is still answered, and a Produce
that comes while the write has held the store past `--os-page-cache-busy-timeout-ms` is stored
after it and answered with throttle_time_ms (Kafka's way to make the producer back off). The order
of the answers is what is asserted (the write lasts 1.5 s, the other requests come 0.6 s into it),
not their latency."""
import threading
import time

from kafka_raw import RawClient, produce_body, produce_error

from codec.kafka import records
from codec.kafka.apis import METADATA, PRODUCE

DELAY_S = 1.5
TOPIC = "SlowK"


def _batch(value: bytes) -> bytes:
    return records.build_batch([(1000, None, value, [])], base_timestamp=1000)


def _metadata(client: RawClient) -> int:
    resp = client.call(METADATA.key, 9, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True,
                                         "include_topic_authorized_operations": False})
    return resp["topics"][0]["error_code"]


def test_metadata_and_throttled_produces_do_not_wait_for_a_blocked_write(gateway_factory):
    g = gateway_factory(extra_args=["--store-write-delay-ms", str(int(DELAY_S * 1000)),
                                    "--os-page-cache-busy-timeout-ms", "300"])
    producer = RawClient(g.kafka_bootstrap, timeout=30)
    assert _metadata(producer) == 0
    first = producer.call(PRODUCE.key, 9, produce_body(TOPIC, 0, _batch(b"one"), acks=1))  # the disk is seen slow
    assert produce_error(first) == (0, 0)
    assert first["throttle_time_ms"] > 0  # it held the store (and the loop) 1.5 s: back off that long
    time.sleep(DELAY_S + 0.1)  # the busy period that write started is over

    answered = []  # (what, error code), in the order the answers arrived

    def slow_produce():
        resp = producer.call(PRODUCE.key, 9, produce_body(TOPIC, 0, _batch(b"two"), acks=1))
        answered.append(("slow produce", produce_error(resp)[0]))

    sender = threading.Thread(target=slow_produce)
    sender.start()
    time.sleep(0.6)  # the write is in progress, past the 300 ms busy limit
    answered.append(("metadata", _metadata(RawClient(g.kafka_bootstrap, timeout=30))))
    late = RawClient(g.kafka_bootstrap, timeout=30).call(PRODUCE.key, 9, produce_body(TOPIC, 0, _batch(b"three"),
                                                                                        acks=1))
    answered.append(("throttled produce", produce_error(late)[0]))
    sender.join(30)
    assert answered == [("metadata", 0), ("slow produce", 0), ("throttled produce", 0)]
    assert produce_error(late) == (0, 2)  # stored after the slow one
    assert late["throttle_time_ms"] >= 300  # the write it found in progress had held the store that long
