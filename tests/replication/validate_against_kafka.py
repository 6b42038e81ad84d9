"""The acks / high-watermark behaviour tests/replication asserts, checked against a real Apache Kafka
4.x cluster (bench/jars/kafka), so a difference is the gateway's bug:
`python -m tests.replication.validate_against_kafka`.

Two KRaft nodes (node 1: broker + controller, node 2: broker), replica.lag.time.max.ms = 1500, one
partition with replicas [1, 2] (leader 1). The follower is paused (SIGSTOP), as in
test_acks_all_waits_for_a_paused_follower_until_it_leaves_the_isr and
test_readers_see_only_up_to_the_high_watermark. Prints PASS/FAIL per check (2026-11-23, Kafka 4.3.1:
8/8 pass).
"""
from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import _java, java_classpath
from tests.gateway_process import free_port, wait_port
from tests.replication.replicas import LAG_MS, Kafka, batch, fetched_values, wait_until


def _classpath() -> str:
    """bench/jars/kafka (KAFKA_JARS: another folder of the same jars)."""
    folder = os.environ.get("KAFKA_JARS")
    return os.path.join(folder, "*") if folder else java_classpath("kafka")


def _props(node: int, port: int, controller: int, work: str) -> dict:
    props = {
        "process.roles": "broker,controller" if node == 1 else "broker", "node.id": str(node),
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port}" + (f",CONTROLLER://127.0.0.1:{controller}" if node == 1 else ""),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": os.path.join(work, f"logs{node}"), "replica.lag.time.max.ms": str(LAG_MS),
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1", "min.insync.replicas": "1",
    }
    return props


def start(work: str) -> tuple[list, list[int]]:
    ports, controller = [free_port(), free_port()], free_port()
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    procs = []
    for node in (1, 2):
        path = os.path.join(work, f"server{node}.properties")
        with open(path, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in _props(node, ports[node - 1], controller, work).items())
        subprocess.run([*_java("256m"), "-cp", _classpath(), "kafka.tools.StorageTool", "format",
                        f"--cluster-id={cluster_id}", "-c", path], check=True, capture_output=True, timeout=120)
        log = open(os.path.join(work, f"kafka{node}.log"), "wb")
        procs.append(subprocess.Popen([*_java("384m"), f"-Dkafka.logs.dir={work}", "-cp", _classpath(),
                                       "kafka.Kafka", path], stdout=log, stderr=subprocess.STDOUT))
    for port in ports:
        wait_port(port, 120)
    return procs, ports


def isr(k: Kafka, topic: str) -> list[int]:
    """The partition's ISR as the leader (node 1) answers Metadata (not a client that may ask the paused node)."""
    md = k.call(3, 9, {"topics": [{"name": topic}]})
    return sorted(md["topics"][0]["partitions"][0]["isr_nodes"])


def main() -> int:
    work = tempfile.mkdtemp(prefix="kafka-repl-")
    procs, ports = start(work)
    results = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name} {detail}")
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[0]}"})
        wait_until(lambda: len(admin.list_topics(timeout=5).brokers) == 2, 120, "two brokers")
        topic = "repl-" + uuid.uuid4().hex[:8]
        admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]])])[topic].result(30)
        k = Kafka(types.SimpleNamespace(kafka_port=ports[0]))
        wait_until(lambda: isr(k, topic) == [1, 2], 60, "ISR [1, 2]")
        wait_until(lambda: k.produce(topic, batch([b"warm"]))[0] == 0, 60, "first produce")
        os.kill(procs[1].pid, signal.SIGSTOP)
        try:
            code, base = k.produce(topic, batch([b"acks1"]), acks=1)
            check("acks=1 answered with the follower paused", code == 0 and base == 1, f"{code} {base}")
            hw = k.fetch(topic, 0)["high_watermark"]
            check("the high watermark stays below the acks=1 record", hw == 1, f"hw={hw}")
            values = [v for _, v in fetched_values(k, topic)]
            check("a consumer reads only below the high watermark", values == [b"warm"], str(values))
            part = k.fetch(topic, 2)  # above the high watermark, at the log end: in range, nothing yet
            check("a fetch between the high watermark and the log end is empty, not out of range",
                  part["error_code"] == 0 and not part["records"], f"error {part['error_code']}")
            code, _ = k.produce(topic, batch([b"timed-out"]), timeout_ms=300)
            check("acks=all past the request's timeout answers REQUEST_TIMED_OUT", code == 7, str(code))
            began = time.monotonic()
            code, base = k.produce(topic, batch([b"acks-all"]))
            held = time.monotonic() - began
            check("acks=all is held until the follower leaves the ISR", code == 0 and base == 3
                  and held >= LAG_MS / 1000 * 0.9, f"held {held:.2f} s, code {code}")
            check("the ISR is the leader alone", isr(k, topic) == [1], str(isr(k, topic)))
            values = [v for _, v in fetched_values(k, topic)]
            check("then everything is readable", values == [b"warm", b"acks1", b"timed-out", b"acks-all"],
                  str(values))
        finally:
            os.kill(procs[1].pid, signal.SIGCONT)
        wait_until(lambda: isr(k, topic) == [1, 2], 60, "ISR rejoin")
        began = time.monotonic()
        code, base = k.produce(topic, batch([b"again"]))
        check("after rejoining, acks=all is quick again", code == 0 and base == 4
              and time.monotonic() - began < LAG_MS / 1000, f"{time.monotonic() - began:.2f} s")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"{sum(results)}/{len(results)} checks pass")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
