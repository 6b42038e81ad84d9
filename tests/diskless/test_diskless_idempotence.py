"""Idempotent producers on a diskless topic (docs/diskless.md, "Where each semantic's state lives"):
a retried batch (same producer id, epoch and sequence) gets its first offset again and is not stored
twice, on the live gateway and after a kill -9 with the data dir wiped, since the producers' state
is rebuilt from the index entries in the bucket."""
from __future__ import annotations

import os
import shutil
import sys

from acked_records import read_topic
from codec.kafka import records
from codec.kafka.apis import INIT_PRODUCER_ID, PRODUCE
from test_diskless_kafka import FAST_WAL, create_topic

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kafka"))
from kafka_raw import RawClient, produce_body, produce_error  # noqa: E402


def _batch(value: bytes, pid: int, epoch: int, seq: int) -> bytes:
    return records.build_batch([(1_700_000_000_000, None, value, [])], base_timestamp=1_700_000_000_000,
                               producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def _produce(bootstrap: str, batch: bytes) -> tuple[int, int]:
    client = RawClient(bootstrap, timeout=30)
    try:
        return produce_error(client.call(PRODUCE.key, 9, produce_body("idem", 0, batch)))
    finally:
        client.close()


def test_a_retried_batch_is_stored_once_even_after_a_wiped_data_dir(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    create_topic(g.kafka_bootstrap, "idem", partitions=1)
    client = RawClient(g.kafka_bootstrap, timeout=30)
    init = client.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": None, "transaction_timeout_ms": -1,
                                                  "producer_id": -1, "producer_epoch": -1})
    client.close()
    assert init["error_code"] == 0, init
    pid, epoch = init["producer_id"], init["producer_epoch"]
    first, second = _batch(b"one", pid, epoch, 0), _batch(b"two", pid, epoch, 1)
    assert _produce(g.kafka_bootstrap, first) == (0, 0)
    assert _produce(g.kafka_bootstrap, second) == (0, 1)
    assert _produce(g.kafka_bootstrap, second) == (0, 1)  # the retry: same offset, not stored again
    g.kill9()
    shutil.rmtree(g.data_dir)
    g.start()
    assert _produce(g.kafka_bootstrap, second) == (0, 1)  # still recognised: the state is in the index
    assert _produce(g.kafka_bootstrap, _batch(b"three", pid, epoch, 2)) == (0, 2)
    assert read_topic(g.kafka_bootstrap, "idem") == [b"one", b"two", b"three"]
