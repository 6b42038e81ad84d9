"""What a cluster gateway that holds no replica of `_schemas` learns from the registry leader for
validation at the broker (real etcd, real processes). No Confluent Server can be run here to try these
against first: they rest on Confluent's documentation of schema references, of subject deletion and
of broker-side validation, which checks a record against the registry wherever its partition lives.

- A schema with references: the gateway now learns the schemas its references reach too, so the
  `full` level decodes the record and RecordNameStrategy finds its name. Before, the references were
  looked up in the gateway's own (empty) copy, so the schema did not parse there: every such record
  was refused.
- A subject deleted after the gateway learnt its id: the gateway asks the leader again after
  REMOTE_TTL_S, so records framed with the id are refused from then on. Before, what it learnt was
  kept until a restart: such records were accepted forever."""
from __future__ import annotations

import json

import httpx
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import wait_for
from semantics.schema_validation import REMOTE_TTL_S
from test_cluster_schema_registry import _registry_cluster

INNER = {"type": "record", "name": "Inner", "namespace": "t", "fields": [{"name": "n", "type": "int"}]}
OUTER = {"type": "record", "name": "Outer", "namespace": "t", "fields": [{"name": "inner", "type": "t.Inner"}]}


def _sender(cluster, admin):
    """send(topic, value) -> the delivery error (None: stored), produced to a partition whose leader
    holds no replica of `_schemas`."""
    holders = set(admin.list_topics(timeout=30).topics["_schemas"].partitions[0].replicas)

    def unreplicated_partition(topic: str):
        found = admin.list_topics(timeout=30).topics[topic].partitions.items()
        return next(((p, info.leader) for p, info in found if info.leader >= 0 and info.leader not in holders),
                    None)  # a tuple: partition 0 is a found one

    def send(topic: str, value: bytes):
        partition, _leader = wait_for(lambda: unreplicated_partition(topic),
                                      what=f"a partition of {topic} led by a gateway without a _schemas replica")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.send.max.retries": 0})
        outcome = []
        producer.produce(topic, value=value, partition=partition, on_delivery=lambda err, _m: outcome.append(err))
        assert producer.flush(30) == 0
        return outcome[0]
    return send


def test_a_schema_with_references_validates_on_a_gateway_without_a_schemas_replica(tmp_path):
    from codec.schema_registry import frame

    cluster, nodes = _registry_cluster(tmp_path, 1)
    try:
        inner = httpx.post(f"{nodes[0].url}/subjects/inner/versions", json={"schema": json.dumps(INNER)}, timeout=30)
        assert inner.status_code == 200, inner.text
        outer_body = {"schema": json.dumps(OUTER),
                      "references": [{"name": "t.Inner", "subject": "inner", "version": 1}]}
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for created in admin.create_topics([
            NewTopic("decoded", 6, 1, config={"confluent.value.schema.validation": "full"}),
            NewTopic("named", 6, 1, config={"confluent.value.schema.validation": "true",
                                            "confluent.value.subject.name.strategy": "RecordNameStrategy"}),
        ]).values():
            created.result(30)
        outer_id = httpx.post(f"{nodes[0].url}/subjects/decoded-value/versions", json=outer_body,
                              timeout=30).json()["id"]
        assert httpx.post(f"{nodes[0].url}/subjects/t.Outer/versions", json=outer_body, timeout=30).json()["id"] \
            == outer_id
        send = _sender(cluster, admin)

        assert send("decoded", frame(outer_id, b"\x0e")) is None  # Outer{inner: Inner{n: 7}}
        refused = send("decoded", frame(outer_id, b"\x81"))  # a truncated varint: does not decode
        assert refused is not None and refused.code() == KafkaError.INVALID_RECORD, refused
        assert send("named", frame(outer_id, b"\x0e")) is None  # registered under its record name t.Outer
    finally:
        cluster.stop()


def test_a_deleted_subject_reaches_a_gateway_without_a_schemas_replica(tmp_path):
    from codec.schema_registry import frame

    cluster, nodes = _registry_cluster(tmp_path, 1)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("kept", 6, 1, config={"confluent.value.schema.validation": "true"})]
                            )["kept"].result(30)
        registered = httpx.post(f"{nodes[0].url}/subjects/kept-value/versions", json={"schema": json.dumps(INNER)},
                                timeout=30)
        assert registered.status_code == 200, registered.text
        value = frame(registered.json()["id"], b"\x0e")
        send = _sender(cluster, admin)
        assert send("kept", value) is None  # learnt from the leader
        assert httpx.delete(f"{nodes[1].url}/subjects/kept-value", timeout=30).json() == [1]  # soft delete
        refused = wait_for(lambda: send("kept", value), timeout=REMOTE_TTL_S * 3 + 20,
                           what="the deleted subject's id refused")
        assert refused.code() == KafkaError.INVALID_RECORD, refused
    finally:
        cluster.stop()
