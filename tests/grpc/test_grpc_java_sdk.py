"""The stock Java gRPC SDK rocketmq-client-java 5.x (compat/java/rocketmqgrpc, RocketGrpc) against
the gateway's --grpc-port: producer (normal, FIFO, delay, recall of a delayed message, transactions with a checker),
SimpleConsumer receive / ack / change invisible duration, PushConsumer with a retry.
The same program ran against Apache RocketMQ 5.5's proxy (bench/grpc_proxy.py, GRPC_TARGET=proxy) with these results."""
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from compat.jvm import ScenarioRun
from grpc_sdk import start_target

SCENARIOS = os.environ.get("GRPC_JAVA_SCENARIOS", "normal fifo delay recall transaction invisible push").split()
TOPICS = {"jg-normal": "NORMAL", "jg-fifo": "FIFO", "jg-delay": "DELAY", "jg-recall": "DELAY", "jg-tx": "TRANSACTION",
          "jg-invisible": "NORMAL", "jg-push": "NORMAL"}
pytestmark = pytest.mark.timeout(900)


# The scenarios run in four JVMs at once: they spend most of their time waiting (due times, the
# transaction check-back, invisible durations, the push consumer's retry), so together they take about
# as long as the slowest group instead of the sum (50 s in one JVM, load 2-5).
GROUPS = [["normal", "fifo", "delay", "recall"], ["transaction"], ["invisible"], ["push"]]


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    """scenario -> the ScenarioRun that ran it."""
    directory = tmp_path_factory.mktemp("java-grpc")
    gw = start_target(str(directory / "data"), TOPICS, ["jg-fifo-g"])
    groups = [g for g in ([s for s in group if s in SCENARIOS] for group in GROUPS) if g]
    groups += [[s for s in SCENARIOS if not any(s in group for group in GROUPS)]]
    try:
        with ThreadPoolExecutor(len(groups)) as pool:
            runs = [pool.submit(ScenarioRun, "rocketmqgrpc", "compat.RocketGrpc", [gw.endpoints, "jg", *group],
                                os.path.join(str(directory), f"logs{i}")) for i, group in enumerate(groups) if group]
            runs = [run.result() for run in runs]
        yield {scenario: run for run, group in zip(runs, [g for g in groups if g]) for scenario in group}
    finally:
        gw.stop()


def test_normal_with_tags_keys_properties(java):
    r = java["normal"]["normal"]
    assert sorted(m["body"] for m in r["received"]) == [f"m{i}" for i in range(0, 10, 2)]
    for m in r["received"]:
        n = int(m["body"][1:])
        assert m["tag"] == "TA" and m["keys"] == [f"k{n}"] and m["id_matches"] and m["attempt"] == 1
    assert r["after_ack"] == 0


def test_fifo_in_order(java):
    r = java["fifo"]["fifo"]
    assert r["bodies"] == [str(i) for i in range(20)]
    assert r["group"] == "order-1"


def test_delay(java):
    r = java["delay"]["delay"]
    assert r["bodies"] == ["later"] and r["late_ms"] >= 0 and r["delivery_timestamp_matches"]


def test_recall_a_delayed_message(java):
    r = java["recall"]["recall"]
    assert r["ok"] and r["bodies"] == ["kept"] and r["id_matches"]


def test_transactions_with_check_back(java):
    r = java["transaction"]["transaction"]
    assert r["half_visible"] == 0
    assert r["bodies"] == ["checked", "committed"]
    assert r["checked"] == ["checked"]
    assert r["after"] == []


def test_change_invisible_duration(java):
    r = java["invisible"]["invisible"]
    assert r["first"] == 2 and r["again"] == ["y"] and r["again_attempt"] == 2 and r["more"] == 0


def test_push_consumer_with_a_retry(java):
    seen = java["push"]["push"]["seen"]
    assert seen.pop("retry-me") >= 2
    assert seen == {f"p{i}": 1 for i in range(5)}


def test_tls_and_plaintext_on_one_port(tmp_path):
    """With --tls-cert/--tls-key the Java SDK's default (TLS) works, and plaintext clients still do."""
    from tests.security.certs import make_certs
    from grpc_sdk import GrpcGateway
    certs = make_certs(str(tmp_path / "certs"))
    gw = GrpcGateway(str(tmp_path / "data"), ["--tls-cert", certs.server_cert, "--tls-key", certs.server_key]).start()
    try:
        with ThreadPoolExecutor(2) as pool:  # both clients at once
            tls = pool.submit(ScenarioRun, "rocketmqgrpc", "compat.RocketGrpc", [gw.endpoints, "jt", "ssl", "normal"],
                              os.path.join(str(tmp_path), "logs"))
            plain = pool.submit(ScenarioRun, "rocketmqgrpc", "compat.RocketGrpc", [gw.endpoints, "jp", "normal"],
                                os.path.join(str(tmp_path), "logs-plain"))
            tls, plain = tls.result(), plain.result()
    finally:
        gw.stop()
    for run in (tls, plain):
        assert sorted(m["body"] for m in run["normal"]["received"]) == [f"m{i}" for i in range(0, 10, 2)]
