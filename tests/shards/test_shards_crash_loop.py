"""A shard that cannot start (here: its data dir belongs to another node id, so it exits 2 at
once) is started again and again with a growing wait and a log line each time, while the other
shard keeps serving: Metadata lists it, and a topic made meanwhile is placed on it and works."""
from __future__ import annotations

import os

from confluent_kafka import Producer
from kafka import KafkaConsumer

from sharded import Sharded, require_etcd, wait_for


def test_a_crash_looping_shard_backs_off_and_the_other_keeps_serving(tmp_path):
    require_etcd()
    gw = Sharded(str(tmp_path))
    os.makedirs(os.path.join(gw.data_dir, "shard-1"))
    with open(os.path.join(gw.data_dir, "shard-1", "cluster-node-id"), "w") as f:
        f.write("7\n")  # not node 2's: the shard refuses to start
    try:
        gw.start(brokers=[1])
        log = lambda: open(gw.log_path, encoding="utf-8", errors="replace").read()  # noqa: E731
        wait_for(lambda: "shard 1" in log() and "starting it again in 2 s" in log(),
                 what="shard 1 to fail twice and be retried with a longer wait")
        assert "shards: shard 1 (pid" in log() and "starting it again in 1 s" in log()
        producer = Producer({"bootstrap.servers": gw.kafka_bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce("while-looping", b"w%d" % i)
        assert producer.flush(30) == 0
        consumer = KafkaConsumer("while-looping", bootstrap_servers=gw.kafka_bootstrap, group_id="wl",
                                 auto_offset_reset="earliest", consumer_timeout_ms=10000)
        got = sorted(r.value for r in consumer)
        consumer.close()
        assert got == [b"w%d" % i for i in range(10)]
        assert gw.brokers() == [1]
    finally:
        assert gw.stop() == 0
