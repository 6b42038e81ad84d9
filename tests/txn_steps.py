"""Steps of the Kafka transaction scenarios shared by plain and diskless topics' tests (confluent-kafka)."""
from __future__ import annotations

from confluent_kafka import TopicPartition


def aborted_with_offsets(p, topic: str, src: str, meta, records: int = 4) -> None:
    """One transaction of `records` records over partitions 0 and 1 of `topic` (values a0, a1, ...)
    that also sends the group offset 99 of `src`-0, aborted: none of it may be seen."""
    p.begin_transaction()
    for i in range(records):
        p.produce(topic, value=f"a{i}".encode(), partition=i % 2)
    p.flush(15)
    p.send_offsets_to_transaction([TopicPartition(src, 0, 99)], meta, 15)
    p.abort_transaction(15)
