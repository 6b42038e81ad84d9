"""The aborted-transaction index (Kafka's .txnindex: interop.txn_visibility, cached in
config/kafkaAbortedTxns.json) is trimmed by retention: an aborted transaction whose marker lies below its
queue's log start (DeleteRecords, retention.ms/bytes, the store's file retention) is dropped, as Kafka's
index goes with the segment that held it, and is not brought back from the op log at a restart. Before,
the index only grew. Gateway only: the index is internal (Kafka answers nothing below the log start)."""
from __future__ import annotations

import json
import os

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from gateway_process import TEST_SHARDS
from kafka_target import eventually
from test_txn_layout import _producer, _topic, _transaction

from interop.txn_visibility import TxnVisibility


def _cached(g, topic: str, want: list) -> None:
    """The cache names the topic's aborted transactions `want` ([first, marker] each), else raises."""
    with open(os.path.join(g.data_dir, "config", "kafkaAbortedTxns.json")) as f:
        assert [e[3:] for e in json.load(f)["aborted"] if e[0] == topic] == want


def test_trim_drops_only_transactions_whose_marker_is_below_the_log_start():
    v = TxnVisibility()
    v.add_aborted("t", 0, 7, 0, 2)  # records 0-1, marker 2
    v.add_aborted("t", 0, 7, 5, 8)  # 5-7, marker 8
    v.add_aborted("t", 0, 9, 3, 9)  # 3-8 (another producer), marker 9
    assert v.trim("t", 0, 8) == 1  # marker 8 is at the log start: still named
    assert v.aborted_in("t", 0, 0, 100) == [(9, 3), (7, 5)]
    assert v.trim("t", 0, 10) == 2 and v.aborted == {}


@pytest.mark.skipif(TEST_SHARDS > 1, reason="reads one gateway's config/kafkaAbortedTxns.json: shards (a cluster) keep "
                    "no such cache, each member derives the aborted index from its queues' logs (gateway/cluster/txn_layout.py)")
def test_delete_records_trims_the_aborted_index_and_a_restart_keeps_it_trimmed(gateway_factory):
    g = gateway_factory(flush="sync")
    topic = _topic(g.kafka_bootstrap)
    p = _producer(g.kafka_bootstrap)
    _transaction(p, topic, ["a0", "a1"], False)  # 0-1, marker 2
    _transaction(p, topic, ["c0"], True)  # 3, marker 4
    _transaction(p, topic, ["a2"], False)  # 5, marker 6
    eventually(lambda: _cached(g, topic, [[0, 2], [5, 6]]))
    admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
    admin.delete_records([TopicPartition(topic, 0, 3)])[TopicPartition(topic, 0, 3)].result(30)
    eventually(lambda: _cached(g, topic, [[5, 6]]))
    g.kill9()
    os.remove(os.path.join(g.data_dir, "config", "kafkaAbortedTxns.json"))  # rebuilt from the op log
    g.start()
    eventually(lambda: _cached(g, topic, [[5, 6]]))
