"""Disk loss in a cluster (docs/tiered-storage.md, "Disk loss"): three real gateways on a real etcd,
each tiering its own CommitLog under its own prefix on the real SeaweedFS server. A follower killed
with kill -9 loses its data dir and starts again empty: it restores the tiered part from its tier,
copies the untiered tail from the leader by replication, and once it leads the partition serves
every record from offset 0 to the end to a Kafka consumer."""
from __future__ import annotations

import os
import shutil
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import NODES, require_etcd, start_cluster, wait_for
from gateway_process import GatewayProcess, free_port
from metrics_page import sample, scrape
from store.consumequeue import UNIT_SIZE

TOPIC = "lostdisk"
N = 1500
FILE_SIZE = 256 << 10
PRODUCE_TIMEOUT_MS = 30000
TIERED = {"remote.storage.enable": "true", "local.retention.ms": "1000"}


def tier_gateway(server, bucket: str):
    """A GatewayProcess class for start_cluster: small CommitLog files, its own tier prefix."""
    class TierGateway(GatewayProcess):
        def __init__(self, data_dir: str, extra_args=()) -> None:
            node = os.path.basename(data_dir)
            self.http = f"127.0.0.1:{free_port()}"  # its /metrics
            super().__init__(data_dir, extra_args=[*extra_args, "--commitlog-file-size", str(FILE_SIZE),
                                                   "--http-port", self.http.split(":")[1],
                                                   *server.tier_args(bucket, prefix=f"{node}/")])
    return TierGateway


def _local_files(gw) -> list[int]:
    d = os.path.join(gw.data_dir, "commitlog")
    return sorted(int(n) for n in os.listdir(d) if n.isdigit()) if os.path.isdir(d) else []


def _first_local_files(gw) -> list[int]:
    """The member's CommitLog files once it has any: a gateway started on an empty data dir creates
    its first file only when it writes its first entry (here the first one replicated from the
    leader, a moment after its listeners are up), so a look right after the start sees none."""
    return wait_for(lambda: _local_files(gw), 30, "the restarted member's first CommitLog file")


def _queue_end(gw) -> int:
    """The member's end of the partition's ConsumeQueue on its disk (its file is sparse from offset 0)."""
    path = os.path.join(gw.data_dir, "consumequeue", TOPIC, "0", "%020d" % 0)
    return os.path.getsize(path) // UNIT_SIZE if os.path.exists(path) else 0


def _isr(bootstrap: str) -> list[int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10).topics.get(TOPIC)
    return list(md.partitions[0].isrs) if md is not None and 0 in md.partitions else []


def _manifests(server, bucket: str, node: int) -> list[str]:
    page = server.client().list_objects_v2(Bucket=bucket, Prefix=f"node{node}/manifests/")
    return [o["Key"] for o in page.get("Contents", [])]


def _leader(bootstrap: str) -> int | None:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10).topics.get(TOPIC)
    return md.partitions[0].leader if md is not None and 0 in md.partitions else None


def _consume(bootstrap: str, end: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-lostdisk", "enable.auto.commit": False,
                  "fetch.max.bytes": 1 << 20})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got, deadline = [], time.monotonic() + 90
    try:
        while len(got) < end and time.monotonic() < deadline:
            got += [m.value() for m in c.consume(500, 1.0) if m.error() is None]
    finally:
        c.close()
    return got


def _start_and_produce(tmp_path, server, bucket):
    """A 3-gateway cluster with the tiered topic (replication factor 3) holding N records."""
    cluster = start_cluster(tmp_path, NODES, ["--replica-lag-time-max-ms", "5000"], gateway=tier_gateway(server, bucket))
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(cluster.gateways), 30, "every gateway a member")
        admin.create_topics([NewTopic(TOPIC, 1, 3, config=TIERED)])[TOPIC].result(30)
        wait_for(lambda: _leader(cluster.bootstrap) in cluster.gateways, 30, "a leader")
        values = [b"%06d:" % i + b"x" * 1000 for i in range(N)]
        p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                      "batch.size": 16384,  # a batch must fit a 256k CommitLog file
                      "message.timeout.ms": PRODUCE_TIMEOUT_MS})
        failed = []
        for i, v in enumerate(values):
            p.produce(TOPIC, v, partition=0, on_delivery=lambda err, _m: err and failed.append(err))
            if i % 200 == 0:
                p.poll(0)
        assert p.flush(60) == 0 and not failed, failed[:3]
        return cluster, admin, values
    except BaseException:
        cluster.stop()
        raise


def _lose_disk_and_restart(gws, admin, lost: int, also=lambda: True) -> None:
    """kill -9 the member, delete its data dir (and whatever `also` loses too: it must answer true),
    wait for its lease to expire, start it again on the empty dir."""
    gws[lost].kill9()
    shutil.rmtree(gws[lost].data_dir)
    assert also()
    wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(gws) - 1, 30, "its lease to expire")
    gws[lost].start()


def _leads_alone_and_serves_all(cluster, lost: int, values: list[bytes]) -> None:
    """The restored member back in the in-sync set; the others killed, it leads and serves every record."""
    wait_for(lambda: lost in _isr(cluster.bootstrap), 30, "the restored member back in the in-sync set")
    for n, gw in cluster.gateways.items():
        if n != lost:
            gw.kill9()
    alone = cluster.gateways[lost].kafka_bootstrap
    wait_for(lambda: _leader(alone) == lost, 60, "the restored member to lead")
    assert _consume(alone, N) == values


def test_local_retention_frees_every_members_disk(tmp_path, seaweed_s3, s3_bucket):
    """Each member's pop journal of the topic (untiered, first written in CommitLog file 0) is carried
    forward (semantics.pop_carry) instead of pinning file 0 and so every later file:
    with local.retention.ms=1000 each member's sealed files go once uploaded, on every member."""
    require_etcd()
    cluster, _admin, values = _start_and_produce(tmp_path, seaweed_s3, s3_bucket)
    try:
        for n, gw in cluster.gateways.items():
            wait_for(lambda gw=gw: len(_local_files(gw)) <= 2, 60, f"node{n}'s uploaded files deleted locally")
            assert 0 not in _local_files(gw)
        assert _consume(cluster.bootstrap, N) == values  # served from the leader's tier
    finally:
        cluster.stop()


def test_follower_that_lost_its_disk_serves_every_record(tmp_path, seaweed_s3, s3_bucket):
    require_etcd()
    cluster, admin, values = _start_and_produce(tmp_path, seaweed_s3, s3_bucket)
    try:
        gws = cluster.gateways
        for n in gws:  # sealed files committed to every member's tier
            wait_for(lambda n=n: len(_manifests(seaweed_s3, s3_bucket, n)) >= 3, 90, f"node{n}'s uploads")
        leader = _leader(cluster.bootstrap)
        lost = next(n for n in gws if n != leader)
        _lose_disk_and_restart(gws, admin, lost)
        assert all(f >= 3 * FILE_SIZE for f in _first_local_files(gws[lost]))  # the CommitLog goes on after the tier
        wait_for(lambda: _queue_end(gws[lost]) == N, 60, "the untiered tail replicated from the leader")
        _leads_alone_and_serves_all(cluster, lost, values)
    finally:
        cluster.stop()


def _wipe_tier(server, bucket: str, node: int) -> int:
    """Delete every object under the member's tier prefix; how many there were."""
    client, gone = server.client(), 0
    while True:
        keys = [{"Key": o["Key"]} for o in client.list_objects_v2(Bucket=bucket, Prefix=f"node{node}/").get("Contents", [])]
        if not keys:
            return gone
        client.delete_objects(Bucket=bucket, Delete={"Objects": keys})
        gone += len(keys)


def test_a_member_that_lost_disk_and_tier_copies_from_the_leaders_tier(tmp_path, seaweed_s3, s3_bucket):
    """A follower loses its data dir and its tier prefix: it asks the leader from offset 0, and the
    leader, whose files below its local start are deleted (local.retention.ms=1000), answers the
    replica fetches from its own tier (gateway.remoting.replica_fetch reads through gateway.tier_reads).
    The member is then a full copy: it leads alone and serves offsets 0..N-1."""
    require_etcd()
    cluster, admin, values = _start_and_produce(tmp_path, seaweed_s3, s3_bucket)
    try:
        gws = cluster.gateways
        for n, gw in gws.items():
            wait_for(lambda gw=gw: len(_local_files(gw)) <= 2, 60, f"node{n}'s uploaded files deleted locally")
        leader = _leader(cluster.bootstrap)
        lost = next(n for n in gws if n != leader)
        _lose_disk_and_restart(gws, admin, lost, also=lambda: _wipe_tier(seaweed_s3, s3_bucket, lost) > 0)
        # nothing restored: the CommitLog starts again at 0 (file 0 stays until sealed, uploaded and 1 s old)
        assert _first_local_files(gws[lost])[0] == 0
        wait_for(lambda: _queue_end(gws[lost]) == N, 90, "every record replicated from the leader")
        assert sample(scrape(gws[leader].http), "rocketgate_tier_remote_read_bytes_total", topic=TOPIC) > 0
        _leads_alone_and_serves_all(cluster, lost, values)
    finally:
        cluster.stop()
