"""One shard's disk full (`--shards 2`, real processes): shard 1's store (DATA_DIR/shard-1) sits
on a small tmpfs. Once it fills, that shard's queues refuse writes the way a full broker does (Kafka
Produce KAFKA_STORAGE_ERROR, a RocketMQ send SERVICE_NOT_AVAILABLE "the broker's disk is full"),
its records stay readable, the other shard keeps taking writes on its own queues, and once space is
freed the full shard takes writes again without a restart."""
from __future__ import annotations

import os
import subprocess

import pytest

from codec.remoting import RequestCode as RC, ResponseCode
from sharded import Sharded, require_etcd, wait_for
from test_shards import create_topic
from test_shards_wrong_shard import kafka_ports, remoting_addrs
from raw_kafka import KafkaRaw, batch  # noqa: E402 (on the path test_shards_wrong_shard adds)
from test_server import send_fields  # noqa: E402
from wire import Peer  # noqa: E402

FS_SIZE = 32 << 20
KAFKA_STORAGE_ERROR = 56
CHUNK = [os.urandom(60_000) for _ in range(8)]  # one ~480 KB batch per produce


@pytest.fixture
def full_shard(tmp_path):
    """A `--shards 2` whose shard 1 stores on a 32 MiB tmpfs holding 6 MiB of ballast."""
    require_etcd()
    mnt = tmp_path / "data" / "shard-1"
    mnt.mkdir(parents=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    gw = Sharded(str(tmp_path), extra_args=["--commitlog-file-size", "4m", "--index-slots", "1000",
                                            "--index-entries", "4000", "--disk-max-used-space-ratio", "75"])
    try:
        (mnt / "ballast").write_bytes(bytes(6 << 20))  # space an operator frees later
        gw.start()
        yield gw, mnt
    finally:
        gw.stop()
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill_until_refused(raw: KafkaRaw, topic: str, partition: int) -> int:
    for _ in range(FS_SIZE // (60_000 * len(CHUNK)) + 10):
        error = raw.produce(topic, batch(CHUNK), partition=partition, timeout_ms=5000)[0]
        if error:
            return error
    pytest.fail("the shard's disk never filled")


def test_a_full_shard_refuses_writes_and_the_other_keeps_serving(full_shard):
    gw, mnt = full_shard
    leaders = create_topic(gw, "fill")
    ports = kafka_ports(gw)
    on_full = next(p for p, b in leaders.items() if b == 2)  # shard 1 is node 2
    on_free = next(p for p, b in leaders.items() if b == 1)
    full, free = KafkaRaw("127.0.0.1", ports[2]), KafkaRaw("127.0.0.1", ports[1])
    addrs = remoting_addrs(gw, "fill")
    full_rmq, free_rmq = Peer(addrs["broker-2"]), Peer(addrs["broker-1"])
    try:
        assert full.produce("fill", batch([b"first"]), partition=on_full)[0] == 0
        assert fill_until_refused(full, "fill", on_full) == KAFKA_STORAGE_ERROR
        refused = full_rmq.call(RC.SEND_MESSAGE_V2, send_fields("fill", 0), b"refused")
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE and "disk is full" in refused.remark, \
            (refused.code, refused.remark)

        # the other shard's queues take writes, over both protocols
        assert free.produce("fill", batch([b"elsewhere"]), partition=on_free)[0] == 0
        assert free_rmq.call(RC.SEND_MESSAGE_V2, send_fields("fill", 0), b"elsewhere").code == ResponseCode.SUCCESS
        assert [v for _, v in free.fetched_values("fill", on_free)] == [b"elsewhere"] * 2
        # the full shard's records stay readable
        assert full.fetch("fill", 0, on_full)["error_code"] == 0
        assert full.fetched_values("fill", on_full)[0] == (0, b"first")

        (mnt / "ballast").unlink()  # space comes back: the full shard writes again by itself
        wait_for(lambda: full.produce("fill", batch([b"after"]), partition=on_full, timeout_ms=5000)[0] == 0,
                 timeout=30, what="the full shard to take writes again")
        assert full.fetched_values("fill", on_full)[-1][1] == b"after"
        assert gw.proc.poll() is None
    finally:
        for c in (full, free, full_rmq, free_rmq):
            c.close()
