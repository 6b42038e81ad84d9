"""Kafka transactions on a diskless topic in a 3-gateway cluster (docs/diskless.md, "Transactions"): the
batches are staged in the bucket before the Produce is answered, so the partitions' leader killed
with kill -9 after the sends were acknowledged loses nothing: EndTxn through the other gateways
commits every record exactly once and an abort leaves none (the client-visible facts are those
tests/diskless/test_diskless_txn_staged.py checks against Apache Kafka 4.3.1). And the stock Java
producer (kafka-clients 4.3.1: transactions v2, TxnOffsetCommit) on a diskless topic of the cluster
gives the facts Kafka 4.3.1 gives on a plain topic (tests/kafka/test_transactions_v2.py). A commit
cut short after its WAL append (its staged deletion refused by an S3 proxy) whose coordinator is
killed there is completed by the next coordinator without appending anything twice."""
from __future__ import annotations

import os
import sys
import threading

from confluent_kafka.admin import AdminClient

from acked_records import read_committed
from cluster.model import coordinator_of
from s3_refusing_proxy import RefusingProxy
from waiting import until
from test_diskless_cluster import create_diskless_topic, start_diskless_cluster
from test_diskless_txn_staged import _open
from clusters import wait_for  # (tests/cluster: on the path once test_diskless_cluster is imported)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kafka"))  # TxnCheck and its facts
from test_transactions_v2 import EXPECTED, check_classes, facts  # noqa: E402,F401 - check_classes is a fixture


def test_a_transaction_whose_leader_is_killed_commits_through_another_gateway(seaweed_s3, s3_bucket, tmp_path):
    cluster = start_diskless_cluster(seaweed_s3, s3_bucket, tmp_path)
    try:
        gws = cluster.gateways
        victim = create_diskless_topic(cluster, "dltc", 2).topics["dltc"].partitions[0].leader
        committing = _open(cluster.bootstrap, "dltc", "tid-dltc-c", "c", 6)  # both partitions
        aborting = _open(cluster.bootstrap, "dltc", "tid-dltc-a", "a", 3)
        gws[victim].kill9()  # the leader that took (some of) the batches
        live = ",".join(g.kafka_bootstrap for n, g in gws.items() if n != victim)
        admin = AdminClient({"bootstrap.servers": live})
        wait_for(lambda: all(p.leader not in (victim, -1) for p in
                             admin.list_topics("dltc", timeout=10).topics["dltc"].partitions.values()),
                 timeout=60, what="new leaders")
        committing.commit_transaction(60)
        aborting.abort_transaction(60)
        got = sorted(v for _p, _o, v in read_committed(live, "dltc", 2, 6))
        assert got == [f"c{i}" for i in range(6)]  # each once, nothing of the aborted transaction
    finally:
        cluster.stop()


def test_java_transactions_v2_on_a_diskless_topic_in_a_cluster(seaweed_s3, s3_bucket, tmp_path, check_classes):
    """TV2 (Produce v12 adds the partition, EndTxn v5 bumps the epoch) and TxnOffsetCommit on the
    cluster path: commit, abort (records and offsets), a zombie fenced, read_committed, through all
    three gateways (the coordinator in etcd, the batches applied from the bucket by the completer)."""
    cluster = start_diskless_cluster(seaweed_s3, s3_bucket, tmp_path)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == 3, what="every gateway a member")
        assert facts(check_classes, cluster.bootstrap, "true") == EXPECTED
    finally:
        cluster.stop()


def test_a_commit_cut_short_is_completed_by_the_next_coordinator_once(seaweed_s3, s3_bucket, tmp_path):
    with RefusingProxy(seaweed_s3.endpoint) as proxy:
        cluster = start_diskless_cluster(seaweed_s3, s3_bucket, tmp_path, endpoint=proxy.endpoint)
        try:
            gws = cluster.gateways
            create_diskless_topic(cluster, "dltk", 2)
            cut = _open(cluster.bootstrap, "dltk", "tid-dltk", "k", 4)  # both partitions
            coordinator = coordinator_of("tid-dltk", list(gws))
            proxy.refuse = lambda method, path: method == "DELETE" and "/diskless/txn/" in path
            ended: list = []
            ending = threading.Thread(target=lambda: ended.append(cut.commit_transaction(90)))
            ending.start()
            try:  # the coordinator appended (some of) the batches; their staged copies stay
                assert until(lambda: proxy.refused, 30, 0.1)
                gws[coordinator].kill9()
                proxy.refuse = lambda method, path: False
            finally:
                ending.join(100)
            assert ended == [None]
            live = ",".join(g.kafka_bootstrap for n, g in gws.items() if n != coordinator)
            got = sorted(v for _p, _o, v in read_committed(live, "dltk", 2, 4))
            assert got == [f"k{i}" for i in range(4)]  # each once
        finally:
            cluster.stop()
