"""A diskless topic in a 3-gateway etcd cluster on one bucket (docs/diskless.md, "In a cluster"):
Kafka clients produce to the partitions' leaders on every gateway and consume through any of them;
after kill -9 of a gateway its partitions get another leader, which serves them from the index with
no data copied, and every acknowledged record is read back once; the killed gateway, its data dir
wiped, comes back and serves the whole topic from the bucket."""
from __future__ import annotations

import os
import shutil
import sys

from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import produce_acked, read_topic

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from clusters import NODES, require_etcd, start_cluster, wait_for  # noqa: E402


def start_diskless_cluster(seaweed_s3, s3_bucket, tmp_path, endpoint: str | None = None):
    """Three gateways on etcd and one bucket (a short WAL bound); `endpoint`: reach it there instead."""
    require_etcd()
    tier = seaweed_s3.tier_args(s3_bucket)
    if endpoint is not None:
        tier[tier.index("--tier-endpoint") + 1] = endpoint
    return start_cluster(tmp_path / "cluster", NODES, extra_args=[*tier, "--diskless-wal-max-ms", "20"])


def create_diskless_topic(cluster, name: str, partitions: int):
    """A diskless topic created through the cluster; its metadata once every partition is listed."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(NODES), what="every gateway a member")
    admin.create_topics([NewTopic(name, partitions, 3, config={"diskless.enable": "true"})])[name].result(30)
    return wait_for(lambda: (m := admin.list_topics(name, timeout=10)) and name in m.topics
                    and len(m.topics[name].partitions) == partitions and m, what="the topic on every gateway")


def test_a_diskless_topic_across_three_gateways_with_one_killed(seaweed_s3, s3_bucket, tmp_path):
    cluster = start_diskless_cluster(seaweed_s3, s3_bucket, tmp_path)
    try:
        gws = cluster.gateways
        md = create_diskless_topic(cluster, "dlc", 6)
        leaders = {p.leader for p in md.topics["dlc"].partitions.values()}
        assert len(leaders) > 1, leaders  # spread: produced through several gateways
        acked = produce_acked(cluster.bootstrap, "dlc", 300, prefix=b"a")
        for g in gws.values():  # every gateway reads every partition from the bucket
            assert sorted(read_topic(g.kafka_bootstrap, "dlc")) == sorted(acked)
        gws[3].kill9()
        live = f"{gws[1].kafka_bootstrap},{gws[2].kafka_bootstrap}"
        admin = AdminClient({"bootstrap.servers": live})
        wait_for(lambda: (m := admin.list_topics("dlc", timeout=10)) and sorted(m.brokers) == [1, 2]
                 and all(p.leader in (1, 2) for p in m.topics["dlc"].partitions.values()),
                 timeout=60, what="gateway 3's partitions to get new leaders")
        acked += produce_acked(live, "dlc", 300, prefix=b"b")
        got = read_topic(gws[1].kafka_bootstrap, "dlc")
        assert sorted(got) == sorted(acked) and len(got) == len(set(got))
        shutil.rmtree(gws[3].data_dir)  # comes back with nothing: serves the topic from the bucket
        gws[3].start()
        wait_for(lambda: sorted(admin.list_topics("dlc", timeout=10).brokers) == [1, 2, 3], timeout=60,
                 what="gateway 3 to return")
        assert sorted(read_topic(gws[3].kafka_bootstrap, "dlc")) == sorted(acked)
    finally:
        cluster.stop()
