"""codec/kafka/apis.py against Kafka's own message schemas, for every version we advertise.

compat.KafkaSchemas (compat/java, built by `make setup`) prints the wire schema kafka-clients compiled
from its message JSON (common/message/*.json): per version, each struct's fields in order with type,
nullability and compactness, its tagged fields by tag, and whether it is flexible. Field names there
are Kafka's own snake_case of the JSON's CamelCase ("TopicData" -> "topic_data"), the convention our
declarations follow, so names compare as they are. A version is checked against kafka-clients 4.x (the
compat kafka4 module) or the kafka-clients of the Kafka 4.3.1 the benchmarks run (bench/jars/kafka: versions
newer than the compat module's 4.x, such as DescribeLogDirs v5) when either has it, else against 3.9
(versions 4.x dropped but we still advertise); a version none knows fails.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from codec.kafka import apis, protocol
from codec.kafka.schema import F, Struct
from bench.brokers import JARS
from compat.jvm import JAVA_DIR, JVM_FLAGS, KAFKA_CLIENTS, classpath

BROKER = "kafka 4.3.1 (bench/jars)"  # compat.KafkaSchemas (built in kafka4) run on the broker's kafka-clients
MODULES = [KAFKA_CLIENTS["4"], BROKER, KAFKA_CLIENTS["3.9"]]  # a version is checked against the first that has it
KAFKA_TYPES = {"i8": "int8", "i16": "int16", "u16": "uint16", "i32": "int32", "i64": "int64", "f64": "float64", "bool": "bool",
               "uuid": "uuid", "str": "string", "bytes": "bytes", "records": "records"}
LENGTH_PREFIXED = ("string", "bytes", "records", "array")
# Our name for a field Kafka names differently in the versions we advertise (the wire is the same):
# Kafka renamed AddPartitionsToTxn's v0-3 fields when v4 (KIP-890) added batched transactions.
KAFKA_RENAMES = {"AddPartitionsToTxn": {
    "v3_and_below_transactional_id": "transactional_id", "v3_and_below_producer_id": "producer_id",
    "v3_and_below_producer_epoch": "producer_epoch", "v3_and_below_topics": "topics",
    "results_by_topic_v3_and_below": "results", "results_by_partition": "results"}}
ADVERTISED = [(api, v) for api in apis.ALL for v in range(api.min_version, api.max_version + 1)]


def kafka_schemas(module: str, names: list[str]) -> dict[str, dict]:
    """API name -> {"key", "lowest", "highest", "highest_stable", "versions": {"3": {"request", "response"}}}
    for the named APIs, from compat.KafkaSchemas run on the module's kafka-clients."""
    java = shutil.which("java") or "java"
    if module == BROKER:
        cp = os.path.join(JAVA_DIR, KAFKA_CLIENTS["4"], "target", "classes") + ":" + os.path.join(JARS, "kafka", "*")
    else:
        cp = classpath(module)
    cmd = [java, *JVM_FLAGS, "-cp", cp, "compat.KafkaSchemas", *names]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    return {d["name"]: d for d in map(json.loads, out.splitlines())}


@pytest.fixture(scope="module")
def kafka():
    """The schemas of every module; the broker's kafka-clients only for APIs we advertise beyond the
    compat 4.x module (KafkaSchemas, compiled against 4.2, does not know every type of 4.3's schemas)."""
    names = [api.name for api in apis.ALL]
    found = {module: kafka_schemas(module, names) for module in MODULES if module != BROKER}
    four = found[KAFKA_CLIENTS["4"]]
    newer = [api.name for api in apis.ALL if api.name not in four or api.max_version > four[api.name]["highest"]]
    found[BROKER] = kafka_schemas(BROKER, newer) if newer else {}
    return found


def schema_for(kafka, api: apis.Api, version: int) -> dict:
    for module in MODULES:
        spec = kafka[module].get(api.name)
        if spec is not None and spec["lowest"] <= version <= spec["highest"]:
            assert spec["key"] == api.key, f"{api.name} is key {spec['key']} in {module}"
            return spec["versions"][str(version)]
    raise AssertionError(f"no kafka-clients in {MODULES} has {api.name} v{version}")


def diff_struct(ours: list[F], theirs: dict, version: int, flexible: bool, path: str,
                renames: dict | None = None) -> list[str]:
    """Every difference between our field list and Kafka's struct in this version; `renames` maps
    Kafka's field names to ours."""
    renames = renames or {}
    diffs = []
    if theirs["flexible"] != flexible:
        diffs.append(f"{path}: flexible={flexible}, Kafka says {theirs['flexible']}")
    fields = [f for f in ours if f.present(version) and f.tag is None]
    names = [f.name for f in fields]
    kafka_names = [renames.get(k["name"], k["name"]) for k in theirs["fields"]]
    if names != kafka_names:
        diffs.append(f"{path}: fields {names}, Kafka has {kafka_names}")
    by_name = dict(zip(kafka_names, theirs["fields"]))
    for f in fields:
        if f.name in by_name:
            diffs += diff_field(f, by_name[f.name], version, flexible, f"{path}.{f.name}", renames)
    tagged = {f.tag: f for f in ours if f.present(version) and f.tag is not None} if flexible else {}
    kafka_tagged = {k["tag"]: k for k in theirs["tagged"]}
    if sorted(tagged) != sorted(kafka_tagged):
        diffs.append(f"{path}: tags {sorted(tagged)}, Kafka has "
                     f"{ {t: k['name'] for t, k in sorted(kafka_tagged.items())} }")
    for tag in sorted(set(tagged) & set(kafka_tagged)):
        f, k = tagged[tag], kafka_tagged[tag]
        if f.name != k["name"]:
            diffs.append(f"{path}: tag {tag} is {f.name}, Kafka calls it {k['name']}")
        diffs += diff_field(f, k, version, flexible, f"{path}.{f.name}[tag {tag}]", renames)
    return diffs


def diff_field(f: F, k: dict, version: int, flexible: bool, path: str, renames: dict) -> list[str]:
    diffs = []
    t = f.type
    if isinstance(t, Struct):
        ours_type = "struct"
    elif isinstance(t, list) or t.startswith("["):
        ours_type = "array"
    else:
        ours_type = KAFKA_TYPES[t]
    if ours_type != k["type"]:
        return [f"{path}: type {ours_type}, Kafka has {k['type']}"]
    # kafka-clients' Schema objects never mark a struct nullable, though its generated code writes an
    # int8 presence marker before one (seen on the wire from Kafka 4.3: ConsumerGroupHeartbeat's assignment).
    nullable_struct = isinstance(t, Struct) and f.nullable_in(version)
    if f.nullable_in(version) != k["nullable"] and not nullable_struct:
        diffs.append(f"{path}: nullable={f.nullable_in(version)}, Kafka says {k['nullable']}")
    if k["type"] in LENGTH_PREFIXED and k["compact"] != flexible:
        # the codec writes compact lengths exactly in flexible versions
        diffs.append(f"{path}: Kafka's compact={k['compact']} in a flexible={flexible} version")
    if isinstance(t, Struct):
        diffs += diff_struct(t.fields, k["struct"], version, flexible, path, renames)
    elif isinstance(t, list):
        if isinstance(k["items"], dict):
            diffs += diff_struct(t, k["items"], version, flexible, f"{path}[]", renames)
        else:
            diffs.append(f"{path}: array of structs, Kafka's items are {k['items']}")
    elif t.startswith("["):
        if KAFKA_TYPES[t[1:-1]] != k["items"]:
            diffs.append(f"{path}: array of {KAFKA_TYPES[t[1:-1]]}, Kafka's items are {k['items']}")
    return diffs


@pytest.mark.parametrize("api,version", ADVERTISED, ids=[f"{a.name}-v{v}" for a, v in ADVERTISED])
def test_advertised_version_matches_kafka(kafka, api, version):
    flexible = api.flexible(version)
    spec = schema_for(kafka, api, version)
    renames = KAFKA_RENAMES.get(api.name)
    diffs = []
    for kind, ours in (("Request", api.request), ("Response", api.response)):
        diffs += diff_struct(ours, spec[kind.lower()], version, flexible, f"{api.name}{kind} v{version}", renames)
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("api", apis.ALL, ids=[a.name for a in apis.ALL])
def test_advertised_range_is_stable_in_kafka_4(kafka, api):
    """We never advertise past Kafka 4's highest stable version; versions below its lowest are the
    ones 4.x dropped, which we advertise only if we do not serve them (checked against 3.9 above)."""
    spec = kafka[KAFKA_CLIENTS["4"]][api.name]
    newest = kafka[BROKER].get(api.name, spec)  # the broker's 4.3 when it knows newer versions
    assert api.max_version <= max(spec["highest_stable"], newest["highest_stable"])
    assert api.served_from >= spec["lowest"]


def test_a_wrong_declaration_is_reported(kafka):
    """The comparison notices each kind of difference (so a passing run means something)."""
    spec = schema_for(kafka, apis.PRODUCE, 9)["request"]
    right = apis.PRODUCE.request
    assert diff_struct(right, spec, 9, True, "p") == []
    wrong_nullability = [F("transactional_id", "str", "3+"), *right[1:]]
    wrong_type = [right[0], F("acks", "i32"), *right[2:]]
    wrong_versions = [right[0], right[1], F("timeout_ms", "i32", "10+"), right[3]]
    extra_tag = [*right, F("extra", "i32", tag=7)]
    for wrong in (wrong_nullability, wrong_type, wrong_versions, extra_tag):
        assert diff_struct(wrong, spec, 9, True, "p")
    assert diff_struct(right, spec, 9, False, "p")  # wrong flexible versions


def test_missing_string_is_null_only_where_kafka_allows_it():
    """JoinGroup's protocol_name is nullable from v7 only: an error response without one must carry ""
    in v0-6 (Kafka clients refuse a null there) and null from v7."""
    for version in range(apis.JOIN_GROUP.min_version, apis.JOIN_GROUP.max_version + 1):
        frame = protocol.response_frame(apis.JOIN_GROUP.key, version, 1, {"error_code": 79, "member_id": "m"})
        body = protocol.decode_response(apis.JOIN_GROUP.key, version, frame[4:])[1]
        assert body["protocol_name"] == ("" if version < 7 else None), version


def test_tagged_fields_are_written_only_when_set_and_read_back():
    """ApiVersions v3 declares tags 0-3: a default value is not written (the response ends with an
    empty tag section), a set one is written as tag, size, value, and decodes back by tag."""
    body = {"api_keys": []}
    plain = protocol.response_frame(apis.API_VERSIONS.key, 3, 1, body)
    assert plain.endswith(b"\x00")  # throttle_time_ms, then zero tagged fields
    decoded = protocol.decode_response(apis.API_VERSIONS.key, 3, plain[4:])[1]
    assert decoded["finalized_features_epoch"] == -1 and decoded["supported_features"] == []
    tagged = protocol.response_frame(apis.API_VERSIONS.key, 3, 1, {**body, "finalized_features_epoch": 5})
    assert bytes(tagged[len(plain) - 1:]) == b"\x01\x01\x08" + (5).to_bytes(8, "big")
    decoded = protocol.decode_response(apis.API_VERSIONS.key, 3, tagged[4:])[1]
    assert decoded["finalized_features_epoch"] == 5 and decoded["zk_migration_ready"] is False
