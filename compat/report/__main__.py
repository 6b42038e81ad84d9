"""`make compat-report`: third-party clients' own suites, first against the real brokers, then a fresh gateway.

    .venv/bin/python -m compat.report [franz-go] [java] [matrix] [librdkafka] [kafka-python] [rocketmq55]   # default: all

Results merge into docs/compatibility.json (per suite and system), from which docs/compatibility.md is
rewritten, so one suite can be re-run alone. Not part of `make test`: a full run takes about half an hour.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

from bench.brokers import Gateway, KafkaBroker, RocketMQBroker
from compat.jvm import KAFKA_CLIENTS, ROCKETMQ_CLIENTS, ROOT
from compat.report import franzgo, java_scenarios, kafka_python, librdkafka, markdown, matrix, rocketmq55
from compat.report.notes import NOTES

JSON_PATH = os.path.join(ROOT, "docs", "compatibility.json")
MD_PATH = os.path.join(ROOT, "docs", "compatibility.md")
INTRO = """# Compatibility report card

Written by `make compat-report` (compat/report/, `python -m compat.report`): each suite runs first against
the real broker (Apache Kafka 4.x in KRaft mode, Apache RocketMQ 5.x namesrv + broker, both from the Maven
jars of bench/brokers.py) and then against a fresh gateway; a test is a gateway bug only where it passes on
the real broker and fails here. Notes in *italics* (compat/report/notes.py) say why a failure is expected.
Raw results: docs/compatibility.json; per-test logs stay in the run's temporary directory.

Not in this report: Spark in the matrix (tests/spark reads the gateway with the stock connector), the RocketMQ
semantics scenarios (they need short delay levels and check intervals that the real broker would have to be
configured with; tests/compat/test_java_rocketmq_semantics.py runs them on the gateway), and a Go RocketMQ client
(the project has none)."""


def run_franzgo(tmp: str) -> tuple[list, dict]:
    binary, tests, version = franzgo.build(tmp)
    runs = []
    for system_class in (KafkaBroker, Gateway):
        with system_class(os.path.join(tmp, f"fg-{system_class.name}")) as system:
            runs.append(franzgo.run(binary, tests, system.bootstrap, system.name,
                                    os.path.join(tmp, f"fg-logs-{system.name}")))
    meta = {"version": f"github.com/twmb/franz-go {version}, pkg/kgo's own *_test.go",
            "selection": f"the {len(tests)} tests that reach a broker (the package's unit tests never do)",
            "settings": f"KGO_TEST_RF=1, KGO_TEST_RECORDS={franzgo.RECORDS}, {franzgo.TEST_TIMEOUT_S} s per test"}
    return runs, {"franz-go kgo": meta}


def run_java(tmp: str) -> tuple[list, dict]:
    runs, meta = [], {}
    for protocol, broker_class, clients in (("kafka", KafkaBroker, KAFKA_CLIENTS),
                                            ("rocketmq", RocketMQBroker, ROCKETMQ_CLIENTS)):
        for system_class in (broker_class, Gateway):
            with system_class(os.path.join(tmp, f"java-{protocol}-{system_class.name}")) as system:
                for version in clients:
                    run = java_scenarios.run(protocol, version, system, os.path.join(tmp, "java-logs"))
                    runs.append(run)
                    meta[run.suite] = {"program": "compat/java scenario programs, checks of compat/checks.py"}
    return runs, meta


def run_matrix(tmp: str) -> tuple[list, dict]:
    with KafkaBroker(os.path.join(tmp, "mx-kafka")) as kafka, RocketMQBroker(os.path.join(tmp, "mx-rmq")) as rmq:
        real = matrix.run({"kafka": kafka, "rocketmq": rmq}, os.path.join(tmp, "mx-logs-real"))
    with Gateway(os.path.join(tmp, "mx-gateway")) as gw:
        ours = matrix.run({"kafka": gw, "rocketmq": gw}, os.path.join(tmp, "mx-logs-gateway"))
    meta = {"cell": "3 records (key, value, tag or TAGS header), read from the start by a new group; values and "
                    "keys must match. A RocketMQ producer's topic is created first (4 queues, native Admin); a Kafka "
                    "producer's is auto-created", "real brokers": "same-protocol cells only (two separate systems)"}
    return [real, ours], {"cross-protocol matrix": meta}


def run_librdkafka(tmp: str) -> tuple[list, dict]:
    if not librdkafka.available():
        raise SystemExit("librdkafka's test-runner is not built: run `make compat-report-librdkafka`")
    tests = librdkafka.broker_tests()
    runs = []
    # the suite's own environment (trivup) auto-creates topics with 4 partitions, as the gateway does
    kafka = KafkaBroker(os.path.join(tmp, "rd-kafka"), extra={"num.partitions": "4"})
    share = librdkafka.available(librdkafka.SHARE_TESTS_DIR)
    for system in (kafka, Gateway(os.path.join(tmp, "rd-gateway"))):
        with system:
            runs.append(librdkafka.run(tests, system.bootstrap, system.name, os.path.join(tmp, "rd-logs")))
            if share:
                runs.append(librdkafka.run(librdkafka.SHARE_TESTS, system.bootstrap, system.name,
                                           os.path.join(tmp, "rd-share-logs"), tests_dir=librdkafka.SHARE_TESTS_DIR,
                                           quick=False, timeout_s=librdkafka.SHARE_TIMEOUT_S,
                                           suite=librdkafka.SHARE_SUITE, kafka_version=librdkafka.SHARE_KAFKA_VERSION))
    meta = {"source": f"librdkafka {librdkafka.source_version()} tests/, from the node-rdkafka npm package "
                      "(deps/librdkafka)",
            "selection": f"the {len(tests)} broker tests of test.c (no TEST_F_LOCAL, no manual 8xxx tests)",
            "settings": "Kafka with num.partitions=4 (the suite's trivup default, the gateway's default too); "
                        f"`test-runner -Q -L -p1 -E` per test (quick mode, no sockem), TEST_KAFKA_VERSION="
                        f"{librdkafka.KAFKA_VERSION}, test.timeout.multiplier=2, {librdkafka.TEST_TIMEOUT_S} s per test"}
    if not share:
        return runs, {"librdkafka tests": meta}
    return runs, {"librdkafka tests": meta, librdkafka.SHARE_SUITE: librdkafka_share_meta()}


def librdkafka_share_meta() -> dict:
    return {"source": f"librdkafka {librdkafka.source_version(librdkafka.SHARE_TESTS_DIR)} tests/, from the "
                      "@confluentinc/kafka-javascript npm package (deps/librdkafka), built with zstd",
            "selection": f"the KIP-932 share-consumer tests {', '.join(librdkafka.SHARE_TESTS)}, each also "
                         "listed by sub-test (`<test> / <function>:<line>: <what>`)",
            "settings": "the same brokers; `test-runner -L -p1 -E` per test (full mode: these sub-tests are not "
                        f"marked quick), TEST_KAFKA_VERSION={librdkafka.SHARE_KAFKA_VERSION}, "
                        f"test.timeout.multiplier=2, {librdkafka.SHARE_TIMEOUT_S} s per test"}


def run_kafka_python(tmp: str) -> tuple[list, dict]:
    if not kafka_python.available():
        raise SystemExit("kafka-python's sdist is not unpacked: run `make compat-report-kafka-python`")
    runs = []
    for system_class in (KafkaBroker, Gateway):
        with system_class(os.path.join(tmp, f"kp-{system_class.name}")) as system:
            runs.append(kafka_python.run(system.bootstrap, system.name, os.path.join(tmp, "kp-logs")))
    meta = {"source": f"kafka-python {kafka_python.installed_version()} sdist, test/integration",
            "selection": "the admin, consumer and producer modules (SASL and SSL need their own listeners)",
            "settings": f"KAFKA_URI=PLAINTEXT://<system>, KAFKA_VERSION={kafka_python.KAFKA_VERSION}; the sdist lacks "
                        "test/service.py (the broker spawner), so the runner adds an external-broker stand-in"}
    return runs, {"kafka-python integration tests": meta}


def run_rocketmq55(tmp: str) -> tuple[list, dict]:
    runs = [rocketmq55.run(system, os.path.join(tmp, "rocketmq55-logs")) for system in ("rocketmq", "gateway")]
    meta = {"clients": "org.apache.rocketmq:rocketmq-client-java 5.2.0 (compat.RocketLite), the native remoting client, "
                       "rocketmq-client 4.9.8 and 5.3.3 with message trace on (compat.RocketTrace)",
            "reference": "Apache RocketMQ 5.5.0: gRPC through the cluster-mode proxy with enableLmq and "
                         "enableMultiDispatch on the broker (the local-mode proxy has no lite subscription service)"}
    return runs, {rocketmq55.SUITE: meta}


SUITES = {"franz-go": run_franzgo, "java": run_java, "matrix": run_matrix, "librdkafka": run_librdkafka,
          "kafka-python": run_kafka_python, "rocketmq55": run_rocketmq55}


def main(argv: list[str]) -> int:
    chosen = argv or list(SUITES)
    with tempfile.TemporaryDirectory(prefix="compat-report-") as tmp:
        for name in chosen:
            started = time.monotonic()
            runs, meta = SUITES[name](tmp)
            data = markdown.store(JSON_PATH, runs, meta)
            with open(MD_PATH, "w") as f:
                f.write(markdown.render(data, NOTES, INTRO))
            summary = ", ".join(f"{r.system}: {r.count('pass')} passed {r.count('fail')} failed" for r in runs)
            print(f"{name}: {summary} ({time.monotonic() - started:.0f} s)", flush=True)
    print(f"wrote {MD_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
