"""The registry port with --authorizer acl and --schema-registry-tls: HTTPS only, HTTP Basic against the
data dir's user store (401 without or with wrong credentials), subjects authorized as TOPIC ACLs on
`subject:<name>` (403 / 40301), checked with confluent-kafka's SchemaRegistryClient over TLS."""
from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from gateway_process import ROOT, free_port, wait_port
from tests.security.certs import make_certs

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


def _security(data_dir: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "security", "--data-dir", data_dir, *args], cwd=ROOT, check=True,
                   capture_output=True)


@pytest.fixture
def secured(tmp_path, gateway_factory):
    certs = make_certs(str(tmp_path / "certs"))
    data = str(tmp_path / "data")
    _security(data, "user", "set", "admin", "--password", "admin-pw")
    _security(data, "user", "set", "alice", "--password", "alice-pw")
    _security(data, "acl", "add", "--principal", "User:alice", "--topic", "subject:orders-", "--prefixed",
              "--operation", "ALL")
    port = free_port()
    gateway_factory(extra_args=["--authorizer", "acl", "--super-users", "User:admin", "--schema-registry-port",
                                str(port), "--schema-registry-tls", "--tls-cert", certs.server_cert,
                                "--tls-key", certs.server_key])
    wait_port(port)
    return f"https://127.0.0.1:{port}", certs


def client(url: str, certs, who: str | None) -> SchemaRegistryClient:
    conf = {"url": url, "ssl.ca.location": certs.ca}
    if who:
        conf["basic.auth.user.info"] = who
    return SchemaRegistryClient(conf)


def test_basic_auth_tls_and_subject_acls(secured):
    url, certs = secured
    alice = client(url, certs, "alice:alice-pw")
    assert alice.register_schema("orders-value", Schema(SCHEMA, "AVRO")) == 1
    with pytest.raises(SchemaRegistryError) as denied:
        alice.register_schema("payments-value", Schema(SCHEMA, "AVRO"))
    assert (denied.value.http_status_code, denied.value.error_code) == (403, 40301)
    admin = client(url, certs, "admin:admin-pw")
    assert admin.register_schema("payments-value", Schema(SCHEMA, "AVRO")) == 1
    assert admin.get_subjects() == ["orders-value", "payments-value"]
    assert alice.get_subjects() == ["orders-value"]  # only the subjects alice may describe
    assert alice.get_schema(1).schema_str == SCHEMA.replace(" ", "")  # READ on one of the id's subjects
    with pytest.raises(SchemaRegistryError) as global_config:
        alice.set_compatibility(level="NONE")
    assert global_config.value.error_code == 40301
    assert admin.set_compatibility(level="NONE") == {"compatibility": "NONE"}
    for who in (None, "alice:wrong", "nobody:x"):
        with pytest.raises(SchemaRegistryError) as refused:
            client(url, certs, who).get_subjects()
        assert (refused.value.http_status_code, refused.value.error_code) == (401, 40101)
    with pytest.raises(httpx.HTTPError):  # HTTPS only
        httpx.get(url.replace("https", "http") + "/subjects", timeout=5)


def test_the_inter_broker_credential_reads_every_subject_and_writes_nothing(tmp_path, gateway_factory):
    """What a cluster gateway asks the registry leader for schema ids with (gateway.schema_registry.lookup):
    HTTP Basic with the inter-broker credential reads every subject's ids, and may not write."""
    data = str(tmp_path / "data")
    _security(data, "user", "set", "admin", "--password", "admin-pw")
    credential = tmp_path / "inter-broker.json"
    credential.write_text(json.dumps({"accessKey": "rg-peer", "secretKey": "peer-secret"}))
    credential.chmod(0o600)
    port = free_port()
    gateway_factory(extra_args=["--authorizer", "acl", "--super-users", "User:admin", "--schema-registry-port",
                                str(port), "--inter-broker-credentials", str(credential)])
    wait_port(port)
    url = f"http://127.0.0.1:{port}"
    body = {"schema": SCHEMA}
    assert httpx.post(f"{url}/subjects/orders-value/versions", json=body, auth=("admin", "admin-pw"),
                      timeout=10).json()["id"] == 1
    peer = ("rg-peer", "peer-secret")
    assert httpx.get(f"{url}/schemas/ids/1", auth=peer, timeout=10).status_code == 200
    assert httpx.get(f"{url}/schemas/ids/1/versions", auth=peer, timeout=10).json() == \
        [{"subject": "orders-value", "version": 1}]
    for method, path, sent in (("POST", "/subjects/other-value/versions", body),
                               ("PUT", "/config", {"compatibility": "NONE"}), ("DELETE", "/subjects/orders-value", None)):
        refused = httpx.request(method, url + path, json=sent, auth=peer, timeout=10)
        assert (refused.status_code, refused.json()["error_code"]) == (403, 40301), (path, refused.text)
    wrong = httpx.get(f"{url}/schemas/ids/1", auth=("rg-peer", "wrong"), timeout=10)
    assert wrong.status_code == 401
