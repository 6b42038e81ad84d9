"""Our ApiVersions answer against a live Apache Kafka 4.3.1's, API by API and feature by feature (issue 33).

Both are asked ApiVersions v3 and v4 over a raw socket with the project's codec. For every client- and
admin-facing API Kafka serves (KRaft-only and inter-broker APIs are left out, below) the gateway must
advertise exactly Kafka's min and max version, and the finalized feature levels clients read must be
Kafka's. What is not there yet is on an explicit allow-list, each entry with its reason: an entry that
starts to match fails the test too, so the list only shrinks and is the to-do of issue 33.

The reference runs with a metrics reporter that accepts client telemetry (compat/java/src/kafkatelemetry),
because Kafka advertises KIP-714's GetTelemetrySubscriptions/PushTelemetry only then.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest
from gateway_process import GatewayProcess
from kafka_raw import RawClient

from bench.brokers import JARS, KafkaBroker
from compat.jvm import JAVA_DIR

pytestmark = pytest.mark.timeout(300)

KAFKA_JARS = os.path.join(JARS, "kafka")
REPORTER = os.path.join(JAVA_DIR, "src", "kafkatelemetry", "compat", "TelemetryReporter.java")

# Kafka serves these on its broker listener, but no client or admin tool sends them to a broker.
NOT_CLIENT_FACING = {
    27: "WriteTxnMarkers: inter-broker (transaction coordinator to partition leaders)",
    64: "UnregisterBroker: KRaft-only (removes a broker registration from the controller quorum)",
    80: "AddRaftVoter: KRaft-only",
    81: "RemoveRaftVoter: KRaft-only",
    82: "UpdateRaftVoter: KRaft-only",
    83: "InitializeShareGroupState: inter-broker (share coordinator)",
    84: "ReadShareGroupState: inter-broker (share coordinator)",
    85: "WriteShareGroupState: inter-broker (share coordinator)",
    86: "DeleteShareGroupState: inter-broker (share coordinator)",
    87: "ReadShareGroupStateSummary: inter-broker (share coordinator)",
}

# Client-facing APIs whose advertised range is not yet Kafka 4.3's; remove an entry once it matches.
NOT_YET: dict = {}

# The finalized features clients read (Java producers: transaction.version; consumers and admin tools:
# group.version, share.version, streams.version; admin describeFeatures: all, with metadata.version).
CLIENT_FEATURES = ["group.version", "metadata.version", "share.version", "streams.version", "transaction.version"]
FEATURES_NOT_YET: dict = {}


def _java_ready() -> bool:
    return bool(shutil.which("javac") and glob.glob(os.path.join(KAFKA_JARS, "kafka_*.jar")))


def _ask(bootstrap: str) -> dict:
    """{version: ApiVersions answer} for v3 and v4."""
    client = RawClient(bootstrap, timeout=30)
    try:
        return {v: client.call(18, v, {"client_software_name": "rocketgate-test", "client_software_version": "1"})
                for v in (3, 4)}
    finally:
        client.close()


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """(Kafka's, ours): each {version: ApiVersions answer}."""
    if not _java_ready():
        pytest.skip("needs javac and bench/jars/kafka (make bench-jars)")

    classes = str(tmp_path_factory.mktemp("telemetry-reporter"))
    subprocess.run([shutil.which("javac"), "-d", classes, "-cp", os.path.join(KAFKA_JARS, "*"), REPORTER],
                   check=True, timeout=300)
    kafka = KafkaBroker(str(tmp_path_factory.mktemp("kafka")), classpath=classes,
                        extra={"metric.reporters": "compat.TelemetryReporter"})
    gateway = GatewayProcess(str(tmp_path_factory.mktemp("gateway") / "data"))
    try:
        kafka.start()
        gateway.start()
        yield _ask(kafka.bootstrap), _ask(gateway.kafka_bootstrap)
    finally:
        gateway.stop()
        kafka.stop()


def _ranges(answer: dict) -> dict:
    return {e["api_key"]: (e["min_version"], e["max_version"]) for e in answer["api_keys"]}


def _finalized(answer: dict) -> dict:
    return {f["name"]: (f["min_version_level"], f["max_version_level"]) for f in answer["finalized_features"]}


def _supported(answer: dict) -> dict:
    return {f["name"]: (f["min_version"], f["max_version"]) for f in answer["supported_features"]}


def test_reference_advertises_telemetry(answers):
    kafka, _ = answers
    assert {71, 72} <= set(_ranges(kafka[3])), "the telemetry reporter is not configured on the reference"


@pytest.mark.parametrize("version", [3, 4])
def test_every_client_facing_api_matches_kafka(answers, version):
    kafka, ours = (_ranges(a[version]) for a in answers)
    client_facing = set(kafka) - set(NOT_CLIENT_FACING)
    mismatches = {key: (ours.get(key), kafka[key]) for key in sorted(client_facing) if ours.get(key) != kafka[key]}
    print("\n".join(f"{key}: ours {o} Kafka {k}" for key, (o, k) in mismatches.items()))  # the to-do, with -s
    assert set(ours) <= set(kafka), f"we advertise APIs Kafka does not: {set(ours) - set(kafka)}"
    unexpected = {key: m for key, m in mismatches.items() if key not in NOT_YET}
    assert not unexpected, f"APIs off Kafka's range and not on the allow-list: {unexpected}"
    now_matching = sorted(key for key in NOT_YET if key not in mismatches)
    assert not now_matching, f"allow-list entries that match Kafka now (remove them): {now_matching}"


def test_finalized_features_match_kafka(answers):
    kafka, ours = (_finalized(a[3]) for a in answers)
    assert _finalized(answers[1][4]) == ours  # the same levels whatever the request version
    mismatches = {name: (ours.get(name), kafka.get(name)) for name in CLIENT_FEATURES if ours.get(name) != kafka.get(name)}
    unexpected = {name: m for name, m in mismatches.items() if name not in FEATURES_NOT_YET}
    assert not unexpected, f"finalized features off Kafka's and not on the allow-list: {unexpected}"
    now_matching = sorted(name for name in FEATURES_NOT_YET if name not in mismatches)
    assert not now_matching, f"feature allow-list entries that match Kafka now (remove them): {now_matching}"
    assert answers[1][3]["finalized_features_epoch"] >= 0


@pytest.mark.parametrize("version", [3, 4])
def test_supported_features_as_kafka_lists_them(answers, version):
    """v3 leaves out features whose minimum is 0 (KIP-1022), v4 lists them; each range is Kafka's except
    where the finalized level is still behind (FEATURES_NOT_YET)."""
    kafka, ours = (_supported(a[version]) for a in answers)
    kafka = {name: r for name, r in kafka.items() if name in CLIENT_FEATURES}
    assert set(ours) == set(kafka)
    assert {n: r for n, r in ours.items() if n not in FEATURES_NOT_YET} == \
        {n: r for n, r in kafka.items() if n not in FEATURES_NOT_YET}
