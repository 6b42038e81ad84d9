"""Kafka-side shared state of one gateway process: group coordinators (classic, KIP-848, share,
streams),
producer ids, transactions."""
from __future__ import annotations

import gateway.kafka.topics as topics
from gateway.kafka.diskless_txn import DisklessTxns
from gateway.kafka.fetch_sessions import SLOTS, FetchSessionCache
from gateway.kafka.metadata import OFFSETS_TOPIC, partition_count_of
from semantics import topic_configs, transactions
from semantics.client_telemetry import ClientTelemetry
from semantics.kafka_consumer_groups import ConsumerGroups
from semantics.kafka_groups import Coordinator
from semantics.kafka_streams_groups import StreamsGroups
from semantics.group_configs import GroupConfigs
from semantics.share_groups import ShareGroups
from semantics.share_partitions import SharePartitions
from semantics.producer_clients import ProducerClients
from semantics.producer_state import ProducerState, TransactionalProducers


SYSTEM = ("RMQ_SYS_", "SCHEDULE_TOPIC_", "TBW102", "%")  # RocketMQ's own topics: no regex matches them


class KafkaState:
    """Made with the App (`app.kafka`); registers the "kafka" transaction checker."""

    def __init__(self, app) -> None:
        self.coordinator = Coordinator()  # classic groups
        # KIP-227 incremental fetch sessions, bounded as Kafka's max.incremental.fetch.session.cache.slots
        self.fetch_sessions = FetchSessionCache(getattr(app.config, "max_incremental_fetch_session_cache_slots", SLOTS))

        def partition_count(name: str) -> int:
            if name == OFFSETS_TOPIC:  # listed with its partitions, so assignable as on Kafka
                return partition_count_of(app, name)
            cfg = topics.existing(app, name)
            return topics.partition_count(cfg) if cfg is not None else 0

        def regex_candidates() -> list[str]:
            """Kafka topics a regex subscription may match: not RocketMQ's system topics; Kafka's own
            internal __consumer_offsets is (Kafka 4.x resolves a regex over every topic, internal ones too)."""
            names = [n for n in app.store.topics.names() if topics.legal_name(n) and not n.startswith(SYSTEM)
                     and n != OFFSETS_TOPIC]  # a store topic too once mirrored (gateway/kafka/offsets_topic.py)
            return [*names, OFFSETS_TOPIC]

        self.consumer_groups = ConsumerGroups(partition_count, regex_candidates)  # KIP-848 groups
        # KIP-932 share groups: the coordinator, and the share partitions on the app's pop engine
        self.group_configs = GroupConfigs(app.store, {  # share.* and streams.* group configs, one store
            "streams.num.standby.replicas": str(app.config.streams_num_standby_replicas)})
        self.share_groups = ShareGroups(partition_count, configs=self.group_configs)
        self.shares = SharePartitions(app.pop, self.share_groups)
        self.shared_group_configs = None  # a cluster's: the configs kept in etcd (gateway.cluster.group_configs)
        self.share_offsets = None  # a cluster's: share-partition state at other leaders (gateway.cluster.share_offsets)
        self.streams_created: list[str] = []  # internal topics the streams coordinator made (to publish)

        def create_internal_topic(name: str, partitions: int, configs: dict) -> str | None:
            """A Kafka Streams repartition or changelog topic (KIP-1071); why not, or None."""
            if not topics.legal_name(name) or partitions <= 0:
                return f"cannot create {name!r} with {partitions} partitions"
            why = next(filter(None, (topic_configs.problem(k, v, app.config.store_max_message_bytes)
                                     for k, v in configs.items())), None)
            if why is None:
                app.ownership.expect_topic(name, 1)
                topics.create(app, name, partitions, configs)
                self.streams_created.append(name)
            return why

        self.streams_groups = StreamsGroups(partition_count, regex_candidates, create_internal_topic,  # KIP-1071
                                            self.group_configs)
        self.producers = ProducerState(app.store, app.config_writer)
        self.producer_clients = ProducerClients()  # producer id -> the client it was handed to (the console)
        self.txns = TransactionalProducers(app, self.producers)
        self.cluster_txns = None  # a cluster member's transactions over etcd (gateway.cluster.txns)
        transactions.register_checker(app, "kafka", self.txns.check)
        self.diskless_txns = DisklessTxns(app)  # transactions' batches for diskless partitions
        self.diskless_txns.resume_left_open(self.txns)
        config = app.config
        self.telemetry = ClientTelemetry(  # KIP-714 client metrics
            [p for p in config.kafka_telemetry_metrics.split(",") if p], config.kafka_telemetry_interval_ms)


def kafka_state(app) -> KafkaState:
    """The app's KafkaState."""
    return app.kafka
