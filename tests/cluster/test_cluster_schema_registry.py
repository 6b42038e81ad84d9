"""The schema registry on a 3-gateway cluster (real etcd, real processes): every gateway serves the API,
the leader of `_schemas` queue 0 alone assigns ids (the others forward), so concurrent registrations
through different gateways get one id sequence, and each schema is readable through every gateway as
soon as the gateway it was registered through answered."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
from confluent_kafka import KafkaError

from clusters import require_etcd, start_cluster, wait_for
from raw_kafka import remoting_call
from gateway_process import GatewayProcess, free_port, wait_port


class RegistryNode(GatewayProcess):
    """A cluster gateway with its own --schema-registry-port."""

    def __init__(self, data_dir: str, extra_args=None) -> None:
        self.registry_port = free_port()
        super().__init__(data_dir, extra_args=[*(extra_args or []), "--schema-registry-port", str(self.registry_port)])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.registry_port}"


def schema(i: int) -> dict:
    return {"schema": json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": "a", "type": "int"}]})}


def test_one_id_sequence_under_concurrent_registrations(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, gateway=RegistryNode)
    try:
        nodes = list(cluster.gateways.values())
        for n in nodes:
            wait_port(n.registry_port)
        # every gateway agrees who leads _schemas (the one that serves; others forward)
        wait_for(lambda: all(httpx.get(n.url + "/subjects", timeout=10).status_code == 200 for n in nodes),
                 what="every gateway's registry answering")

        assert httpx.put(nodes[1].url + "/config", json={"compatibility": "NONE"}, timeout=30).status_code == 200

        def register(i: int) -> tuple[int, int]:
            node = nodes[i % len(nodes)]
            answer = httpx.post(f"{node.url}/subjects/s{i % 4}/versions", json=schema(i), timeout=30)
            assert answer.status_code == 200, answer.text
            schema_id = answer.json()["id"]
            for other in nodes:  # readable everywhere as soon as this gateway answered
                got = httpx.get(f"{other.url}/schemas/ids/{schema_id}", timeout=30)
                assert got.status_code == 200 and json.loads(got.json()["schema"])["name"] == f"R{i}", got.text
            return i, schema_id

        with ThreadPoolExecutor(6) as pool:
            ids = dict(pool.map(register, range(24)))
        assert sorted(ids.values()) == list(range(1, 25))  # one sequence: no id twice, none skipped
        views = [httpx.get(n.url + "/schemas", timeout=30).json() for n in nodes]
        assert views[0] == views[1] == views[2] and len(views[0]) == 24
        # the same schema through another gateway, under another subject: the same global id
        again = httpx.post(f"{nodes[2].url}/subjects/other/versions", json=schema(0), timeout=30).json()
        assert again["id"] == ids[0]
    finally:
        cluster.stop()


def _leader_url(nodes: list[RegistryNode]) -> str:
    """The registry of the gateway that leads `_schemas` (it answers without forwarding)."""
    for n in nodes:
        try:
            if httpx.get(n.url + "/subjects", timeout=5, headers={"x-rocketgate-forwarded": "1"}).status_code == 200:
                return n.url
        except httpx.HTTPError:
            continue
    return ""


def _registry_cluster(tmp_path, replicas: int):
    """A 3-gateway cluster whose registries answer, with `replicas` replicas of each topic (`_schemas` too)."""
    require_etcd()
    cluster = start_cluster(tmp_path, gateway=RegistryNode, extra_args=["--default-replication-factor", str(replicas)])
    try:
        nodes = list(cluster.gateways.values())
        for n in nodes:
            wait_port(n.registry_port)
        wait_for(lambda: _leader_url(nodes), what="a _schemas leader")
    except BaseException:
        cluster.stop()
        raise
    return cluster, nodes


def test_registry_survives_losing_its_leader(tmp_path):
    cluster, nodes = _registry_cluster(tmp_path, 3)
    try:
        first = [httpx.post(f"{nodes[i % 3].url}/subjects/s{i}/versions", json=schema(i), timeout=30).json()["id"]
                 for i in range(5)]
        assert first == [1, 2, 3, 4, 5]
        leader_url = _leader_url(nodes)
        leader = next(n for n in nodes if n.url == leader_url)
        leader.kill9()
        survivors = [n for n in nodes if n is not leader]
        wait_for(lambda: _leader_url(survivors), timeout=40, what="a new _schemas leader")
        for n in survivors:
            assert [httpx.get(f"{n.url}/schemas/ids/{i}", timeout=30).status_code for i in first] == [200] * 5
        again = httpx.post(f"{survivors[0].url}/subjects/s0/versions", json=schema(0), timeout=30).json()
        assert again["id"] == 1  # the new leader replayed the same log
        new = httpx.post(f"{survivors[1].url}/subjects/fresh/versions", json=schema(99), timeout=30).json()
        assert new["id"] == 6
    finally:
        cluster.stop()


def test_validation_on_a_gateway_without_a_schemas_replica(tmp_path):
    """With one replica of `_schemas`, two gateways hold none: a framed record produced to a partition
    such a gateway leads is accepted when its id is registered (asked of the registry leader), and
    refused when no gateway knows the id."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from codec.schema_registry import frame

    cluster, nodes = _registry_cluster(tmp_path, 1)
    try:
        registered = httpx.post(f"{nodes[0].url}/subjects/checked-value/versions", json=schema(1), timeout=30)
        assert registered.status_code == 200, registered.text
        schema_id = registered.json()["id"]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("checked", 6, 1, config={"confluent.value.schema.validation": "true"})]
                            )["checked"].result(30)
        holders = set(admin.list_topics(timeout=30).topics["_schemas"].partitions[0].replicas)
        assert len(holders) == 1

        def unreplicated_partition():  # (partition, its leader) for a leader that holds no `_schemas` replica
            found = admin.list_topics(timeout=30).topics["checked"].partitions.items()
            return next(((p, info.leader) for p, info in found if info.leader >= 0 and info.leader not in holders),
                        None)
        partition, node = wait_for(unreplicated_partition, what="a partition led by a gateway without a _schemas replica")
        payload = b"\x02"  # an Avro int 1

        # RocketMQ remoting: a send to that gateway's local queue 0, with an id it has not learnt yet
        assert httpx.put(f"{nodes[1].url}/config/checked-value", json={"compatibility": "NONE"},
                         timeout=30).status_code == 200
        second = httpx.post(f"{nodes[0].url}/subjects/checked-value/versions", json=schema(2), timeout=30).json()["id"]

        def remoting_send(schema_id: int):
            return remoting_call(cluster.gateways[node].remoting_port, 10, {  # SEND_MESSAGE
                "producerGroup": "pg", "topic": "checked", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
                "queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0", "properties": "",
                "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, frame(schema_id, payload))
        assert remoting_send(second).code == 0
        refused = remoting_send(second + 100)
        assert refused.code == 13 and "not registered" in refused.remark, refused.remark  # MESSAGE_ILLEGAL

        def send(value: bytes):
            producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.send.max.retries": 0})
            outcome = []
            producer.produce("checked", value=value, partition=partition, on_delivery=lambda err, _m: outcome.append(err))
            assert producer.flush(30) == 0
            return outcome[0]
        assert send(frame(schema_id, payload)) is None
        refused = send(frame(schema_id + 100, payload))
        assert refused is not None and refused.code() == KafkaError.INVALID_RECORD, refused
    finally:
        cluster.stop()
