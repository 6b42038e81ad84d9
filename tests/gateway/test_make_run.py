"""`make run` starts one shard per usable core (`--shards auto`, docs/shards.md), serves the HTTP port
(dashboard, /metrics, health) and prints its URL; `make run ARGS=...` passes any flag to the gateway.
Runs the Makefile's real recipe with this interpreter's venv."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import produce_acked, read_topic
from client import ConsumeFrom, LitePullConsumer, Message
from client import Producer as NativeProducer
from gateway_process import ROOT, GatewayProcess, free_port, wait_port, wait_shards
from waiting import wait_for

VENV = os.path.dirname(os.path.dirname(sys.executable))
# -o install: never (re)install into the shared venv; VENV: this interpreter's venv, not ./.venv
MAKE = ["make", "-s", "-o", "install", f"VENV={VENV}"]
PARTITIONS = 4


def create_topic(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> leader, once every partition has one."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)

    def leaders():
        found = {p: m.leader for p, m in admin.list_topics(topic, timeout=5).topics[topic].partitions.items()}
        return len(found) == PARTITIONS and all(v >= 0 for v in found.values()) and found
    return wait_for(leaders, 60, "every partition to have a leader", interval=0.2)


def pull(namesrv: str, topic: str, count: int) -> list[bytes]:
    """`count` bodies through the native client's lite pull consumer (every queue of the route)."""
    consumer = LitePullConsumer("make-run-cg", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    consumer.subscribe(topic)
    consumer.start()
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < count and time.monotonic() < deadline:
            got += [m.body for m in consumer.poll(1.0)]
        return got
    finally:
        consumer.shutdown()


def test_make_run_recipe_turns_the_http_port_on_and_passes_args():
    out = subprocess.run([*MAKE, "-n", "run", "ARGS=--grpc-port 1234 --log-level DEBUG"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if "-m gateway" in line)
    assert "--http-port 8080" in line and "--schema-registry-port 8081" in line
    assert "--shards auto" in line  # one shard per usable core (docs/shards.md)
    assert line.endswith("--grpc-port 1234 --log-level DEBUG")


def test_make_run_takes_over_a_one_process_data_dir_with_a_shard_per_core_and_serves_both_protocols(tmp_path):
    """The real recipe on a data dir a one-process gateway wrote: with two or more cores the store
    moves into shard-0 and every shard is a broker; the old records read back, and confluent-kafka and
    the native RocketMQ client (client/) work through the bootstrap ports unchanged. Also: the
    dashboard URL is printed and /healthz answers."""
    cores = len(os.sched_getaffinity(0))
    assert cores == 1 or shutil.which("etcd"), "etcd not installed: make run's cluster-etcd step installs it"
    data = tmp_path / "data"
    single = GatewayProcess(str(data), extra_args=["--shards", "1"])
    try:
        single.start()
        create_topic(single.kafka_bootstrap, "before-make-run")
        old = produce_acked(single.kafka_bootstrap, "before-make-run", 12, prefix=b"old")
    finally:
        assert single.stop() == 0
    http, kafka, remoting, registry = free_port(), free_port(), free_port(), free_port()
    bootstrap = f"127.0.0.1:{kafka}"
    args = (f"--data-dir {data} --host 127.0.0.1 --kafka-port {kafka} --remoting-port {remoting} "
            f"--schema-registry-port {registry} --http-port {http}")
    log_path = tmp_path / "run.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*MAKE, "run", f"ARGS={args}"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_port(http, timeout=60, proc=proc)
        wait_port(kafka, proc=proc)
        wait_shards(bootstrap, cores, proc)
        url = f"http://127.0.0.1:{http}"
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as resp:
            assert resp.status == 200
        deadline = time.monotonic() + 10
        while f"dashboard: {url}/" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        text = log_path.read_text()
        assert re.search(rf"dashboard: {re.escape(url)}/ .*metrics: {re.escape(url)}/metrics", text), text
        if cores > 1:
            assert "moved the one-process store" in text and (data / "shard-0" / "commitlog").is_dir(), text
        assert sorted(read_topic(bootstrap, "before-make-run")) == sorted(old)
        leaders = create_topic(bootstrap, "after-make-run")
        assert set(leaders.values()) == (set(range(1, cores + 1)) if cores > 1 else {0})
        new = produce_acked(bootstrap, "after-make-run", 20, prefix=b"new")
        assert sorted(read_topic(bootstrap, "after-make-run")) == sorted(new)
        with NativeProducer("make-run-pg", f"127.0.0.1:{remoting}") as producer:
            sent = [producer.send(Message("after-make-run", b"n%02d" % i)) for i in range(8)]
        if cores > 1:
            assert {r.queue.broker_name for r in sent} == {f"broker-{n}" for n in range(1, cores + 1)}
        assert sorted(pull(f"127.0.0.1:{remoting}", "after-make-run", 28)) == sorted(new + [b"n%02d" % i for i in range(8)])
    finally:
        print(log_path.read_text()[-5000:])  # shown when the test failed
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
