"""Run the Kafka-facing checks of tests/cluster/test_cluster_clients.py against a real 3-node Apache
Kafka KRaft cluster (kafka_2.13 from Maven, the bench's pom), so a failure there means our bug, not a
wrong test. Not part of `make test`:

    mvn -q -o -f bench/java/kafka/pom.xml dependency:build-classpath -Dmdep.outputFile=/tmp/kafka-cp.txt
    python tests/cluster/validate_cluster_against_kafka.py /tmp/kafka-cp.txt
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), os.path.dirname(HERE), HERE]

import test_cluster_clients as checks  # noqa: E402
from clusters import kraft_nodes, start_kraft  # noqa: E402

CHECKS = ["test_metadata_lists_every_gateway_and_spreads_leaders",
          "test_replication_factor_above_the_member_count_is_refused",
          "test_kafka_python_and_confluent_across_leaders",
          "test_a_non_replica_answers_not_leader_or_follower",
          "test_producer_ids_come_in_blocks_never_reused",
          "test_find_coordinator_is_the_same_answer_on_every_gateway"]


def main(classpath_file: str) -> int:
    with open(classpath_file) as f:
        classpath = f.read().strip()
    base = tempfile.mkdtemp(prefix="kafka3-")
    nodes = kraft_nodes(classpath, base)
    failed = 0
    try:
        from confluent_kafka.admin import AdminClient
        start_kraft(nodes, 120)
        checks.wait_for(lambda: len(AdminClient({"bootstrap.servers": nodes[1].kafka_bootstrap})
                                    .list_topics(timeout=5).brokers) == 3, 120, "3 Kafka brokers")
        for name in CHECKS:
            try:
                getattr(checks, name)((None, nodes))
                print(f"PASS {name}", flush=True)
            except Exception:
                failed += 1
                print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
    finally:
        for node in nodes.values():
            node.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
