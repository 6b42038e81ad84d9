"""Node's @kafkajs/confluent-schema-registry with kafkajs (pinned in compat/srnode/package-lock.json,
installed by `make sr-clients`) against a real gateway process (the Kafka side: sr_broker.py):
compat/srnode/run.js runs once and every value it printed is checked here."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import httpx
import pytest

from sr_broker import client_bootstrap  # noqa: F401 - fixture
from sr_fixtures import registry_gateway  # noqa: F401 - fixture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "compat", "srnode")
INSTALLED = os.path.join(PACKAGE, "node_modules", "@kafkajs", "confluent-schema-registry")
pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("node") is None or not os.path.isdir(INSTALLED),
                                 reason="no node or compat/srnode not installed (make sr-clients)")]


@pytest.fixture
def run(registry_gateway, client_bootstrap):
    out = subprocess.run(["node", "run.js", registry_gateway.url, client_bootstrap, "nd"],
                         cwd=PACKAGE, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_kafkajs_registry_encode_produce_consume_decode(run, registry_gateway):
    assert (run["avro_id"], run["avro_again"], run["json_id"], run["slashed_id"]) == (1, 1, 2, 1)
    assert (run["latest_avro"], run["latest_json"], run["latest_slashed"]) == (1, 2, 1)
    assert (run["by_schema_avro"], run["by_schema_json"], run["by_version"]) == (1, 2, 1)
    assert "not found" in run["missing"].lower()
    assert run["invalid_json"] == "ConfluentSchemaRegistryValidationError"
    assert run["avro_frames"] == [[0, 1]] * 5 and run["json_frames"] == [[0, 2]] * 3
    assert run["avro_decoded"] == [{"name": f"n{i}", "age": 30 + i} for i in range(5)]
    assert run["json_decoded"] == [{"sku": f"s{i}", "qty": i + 1} for i in range(3)]
    # the client set each new subject's level to BACKWARD after its first registration (GET /config/{s}
    # answered 40408 first)
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        assert http.get("/config/nd-avro-value").json() == {"compatibilityLevel": "BACKWARD"}
        assert http.get("/subjects").json() == ["nd-avro-value", "nd-json-value", "ns/nd-avro-value"]
        assert http.get("/schemas/ids/2").json()["schemaType"] == "JSON"
