"""Kafka transactions on a diskless topic in a 3-gateway cluster (docs/diskless.md, "Transactions"): the
batches are staged in the bucket before the Produce is answered, so the partitions' leader killed
with kill -9 after the sends were acknowledged loses nothing: EndTxn through the other gateways
commits every record exactly once and an abort leaves none (the client-visible facts are those
tests/diskless/test_diskless_txn_staged.py checks against Apache Kafka 4.3.1)."""
from __future__ import annotations

from confluent_kafka.admin import AdminClient

from acked_records import read_committed
from test_diskless_cluster import create_diskless_topic, start_diskless_cluster
from test_diskless_txn_staged import _open
from clusters import wait_for  # (tests/cluster: on the path once test_diskless_cluster is imported)


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
