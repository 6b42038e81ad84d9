"""DescribeProducers (61): the idempotent/transactional producers a partition holds state for, and
the expiry of idle producer state (Kafka's producer.id.expiration.ms) as a service."""
from __future__ import annotations

import logging

import trio

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler

log = logging.getLogger("rocketgate")

EXPIRATION_CHECK_MS = 600_000  # Kafka's producer.id.expiration.check.interval.ms


def active_producers(app, topic: str, partition: int, now_ms: int) -> list[dict]:
    """The partition's producers whose last batch is younger than producer.id.expiration.ms (Kafka
    judges by the batch's max timestamp), newest state per producer id."""
    expiration = app.config.producer_id_expiration_ms
    out = []
    for pid, (epoch, last_seq, last_ts) in sorted(app.kafka.producers.describe(topic, partition).items()):
        if now_ms - last_ts >= expiration:
            continue
        out.append({"producer_id": pid, "producer_epoch": epoch, "last_sequence": last_seq,
                    "last_timestamp": last_ts, "coordinator_epoch": -1, "current_txn_start_offset": -1})
    return out


@handler(apis.DESCRIBE_PRODUCERS)
async def describe_producers(ctx: RequestContext):
    app = ctx.app
    now = app.clock.now_ms()
    out = []
    for t in ctx.request["topics"]:
        name = t["name"]
        cfg = topics.existing(app, name)
        parts = []
        for index in t["partition_indexes"]:
            if not topics.has_partition(cfg, index):
                parts.append({"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION,
                              "active_producers": []})
                continue
            if not app.ownership.owns(name, index):  # Kafka: only the leader knows its producers
                parts.append({"partition_index": index, "error_code": errors.NOT_LEADER_OR_FOLLOWER,
                              "active_producers": []})
                continue
            parts.append({"partition_index": index, "error_code": errors.NONE,
                          "active_producers": active_producers(app, name, index, now)})
        out.append({"name": name, "partitions": parts})
    return {"topics": out}


class ProducerExpiry:
    """Forgets idle producers' in-memory sequence state every EXPIRATION_CHECK_MS (a service)."""

    def __init__(self, producers, clock, expiration_ms: int, interval_ms: int = EXPIRATION_CHECK_MS) -> None:
        self.producers, self.clock = producers, clock
        self.expiration_ms, self.interval_ms = expiration_ms, min(interval_ms, expiration_ms)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.clock.sleep(self.interval_ms / 1000)
            gone = self.producers.expire(self.clock.now_ms(), self.expiration_ms)
            if gone:
                log.info("producer state: %d idle producer partitions expired", gone)
