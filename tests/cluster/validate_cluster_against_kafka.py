"""Run the Kafka-facing checks of tests/cluster/test_cluster_clients.py against a real 3-node Apache
Kafka KRaft cluster (kafka_2.13 from Maven, the bench's pom), so a failure there means our bug, not a
wrong test. Not part of `make test`:

    mvn -q -o -f bench/java/kafka/pom.xml dependency:build-classpath -Dmdep.outputFile=/tmp/kafka-cp.txt
    python tests/cluster/validate_cluster_against_kafka.py /tmp/kafka-cp.txt
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), os.path.dirname(HERE), HERE]

import test_cluster_clients as checks  # noqa: E402
from gateway_process import free_port, wait_port  # noqa: E402

CHECKS = ["test_metadata_lists_every_gateway_and_spreads_leaders",
          "test_replication_factor_above_the_member_count_is_refused",
          "test_kafka_python_and_confluent_across_leaders",
          "test_a_non_replica_answers_not_leader_or_follower",
          "test_producer_ids_come_in_blocks_never_reused",
          "test_find_coordinator_is_the_same_answer_on_every_gateway"]


class KafkaNode:
    def __init__(self, node: int, port: int, workdir: str) -> None:
        self.node, self.kafka_port, self.workdir = node, port, workdir
        self.kafka_bootstrap = f"127.0.0.1:{port}"


def start(classpath: str, base: str) -> list[subprocess.Popen]:
    ports = {n: (free_port(), free_port()) for n in (1, 2, 3)}
    voters = ",".join(f"{n}@127.0.0.1:{c}" for n, (_, c) in ports.items())
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    java = [shutil.which("java") or "java", "-Xms256m", "-Xmx256m", "-XX:+UseSerialGC"]
    procs, nodes = [], {}
    for n, (port, ctrl) in ports.items():
        work = os.path.join(base, f"kafka{n}")
        os.makedirs(work)
        props = {"process.roles": "broker,controller", "node.id": n, "controller.quorum.voters": voters,
                 "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctrl}",
                 "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
                 "inter.broker.listener.name": "PLAINTEXT",
                 "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "log.dirs": os.path.join(work, "logs"), "offsets.topic.replication.factor": 1,
                 "offsets.topic.num.partitions": 3, "transaction.state.log.replication.factor": 1,
                 "transaction.state.log.min.isr": 1, "group.initial.rebalance.delay.ms": 0}
        config = os.path.join(work, "server.properties")
        with open(config, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in props.items())
        subprocess.run([*java, "-cp", classpath, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                        "-c", config], check=True, capture_output=True, timeout=120)
        log = open(os.path.join(work, "out.log"), "wb")
        procs.append(subprocess.Popen([*java, f"-Dkafka.logs.dir={work}", "-cp", classpath, "kafka.Kafka", config],
                                      stdout=log, stderr=subprocess.STDOUT))
        nodes[n] = KafkaNode(n, port, work)
    for node in nodes.values():
        wait_port(node.kafka_port, 120)
    return procs, nodes


def main(classpath_file: str) -> int:
    with open(classpath_file) as f:
        classpath = f.read().strip()
    base = tempfile.mkdtemp(prefix="kafka3-")
    procs, nodes = start(classpath, base)
    failed = 0
    try:
        from confluent_kafka.admin import AdminClient
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
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
