"""A RocketMQ push consumer that turns every message into a dead letter, for the tests of what
happens to dead letters (resend, `dlq` admin commands, metrics)."""
from __future__ import annotations

import contextlib

from client import ConsumeFrom, ConsumeStatus, PushConsumer


@contextlib.contextmanager
def dead_lettering(group: str, namesrv: str, topic: str):
    """Consume `topic` as `group` from its first offset and reject each message once: with
    max_reconsume_times=0 it goes straight to %DLQ%<group>. Yields the list of messages seen;
    the consumer is shut down on exit."""
    seen: list = []

    def reject(msgs):
        seen.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER

    consumer = PushConsumer(group, namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=0)
    consumer.subscribe(topic)
    consumer.register_listener(reject)
    consumer.start()
    try:
        yield seen
    finally:
        consumer.shutdown()
