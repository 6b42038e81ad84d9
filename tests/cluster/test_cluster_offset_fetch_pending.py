"""A Kafka OffsetFetch never shows a commit that etcd does not have yet: such a commit may still be
refused and withdrawn (test_cluster_offset_commit_refused.py), so a reader that saw it would have
seen an offset the group never had, and the next reader an older one. Found by the fault harness's
linearizability checker (committed offset read 4, then 3, across an isolated coordinator:
docs/faults.md). Kafka's coordinator likewise shows a commit only once its __consumer_offsets write
is done. Two gateways and a real etcd; gateway 1 reaches etcd through a TCP proxy the test cuts.
Gateway and etcd only: Apache Kafka has no etcd to take away."""
from __future__ import annotations

import threading

from clusters import wait_for
from raw_kafka import RawClient
from test_cluster_offset_commit_refused import (COORDINATOR_NOT_AVAILABLE, NONE, _commit, _committed,
                                                cluster_with_cuttable_etcd, create_topic)


def test_a_commit_waiting_for_etcd_is_not_shown_to_readers(tmp_path):
    cluster, proxy = cluster_with_cuttable_etcd(tmp_path)
    try:
        committer = RawClient(cluster.gateways[1].kafka_bootstrap, timeout=60)
        reader = RawClient(cluster.gateways[1].kafka_bootstrap, timeout=60)
        create_topic(committer)
        wait_for(lambda: _commit(committer, 0, "probe") == NONE, what="the topic on gateway 1")
        assert _commit(committer, 49) == NONE  # in etcd
        proxy.cut()
        answer = []
        waiting = threading.Thread(target=lambda: answer.append(_commit(committer, 53)))  # waits for etcd, 5 s
        waiting.start()
        seen = []
        try:
            while waiting.is_alive():  # read all along while the commit of 53 waits (before: 53, then 49)
                seen.append(_committed(reader))
        finally:
            waiting.join()
        assert seen and set(seen) == {49}, seen
        assert answer == [COORDINATOR_NOT_AVAILABLE]
        assert _committed(reader) == 49
    finally:
        cluster.stop()
        proxy.stop()
