"""The schema registry on a 3-gateway cluster (real etcd, real processes): every gateway serves the API,
the leader of `_schemas` queue 0 alone assigns ids (the others forward), so concurrent registrations
through different gateways get one id sequence, and each schema is readable through every gateway as
soon as the gateway it was registered through answered."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx

from clusters import require_etcd, start_cluster, wait_for
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
