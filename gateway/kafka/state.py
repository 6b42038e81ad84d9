"""Kafka-side shared state of one gateway process: group coordinator, producer ids, transactions."""
from __future__ import annotations

from semantics import transactions
from semantics.kafka_groups import Coordinator
from semantics.producer_state import ProducerState, TransactionalProducers


class KafkaState:
    """Made with the App (`app.kafka`); registers the "kafka" transaction checker."""

    def __init__(self, app) -> None:
        self.coordinator = Coordinator()
        self.producers = ProducerState(app.store)
        self.txns = TransactionalProducers(app, self.producers)
        transactions.register_checker(app, "kafka", self.txns.check)


def kafka_state(app) -> KafkaState:
    """The app's KafkaState."""
    return app.kafka
