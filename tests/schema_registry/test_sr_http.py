"""The registry's REST API through raw HTTP against a real gateway process: Confluent's content type and
error bodies, refusals that change nothing, a body above the limit refused before parsing, and every
schema, id and setting kept over a clean restart and over kill -9."""
from __future__ import annotations

import json

import httpx
import pytest

from sr_fixtures import registry_gateway  # noqa: F401 - fixture

CT = "application/vnd.schemaregistry.v1+json"


def avro(name="U", *fields):
    return {"schema": json.dumps({"type": "record", "name": name, "fields": list(fields) or
                                  [{"name": "a", "type": "int"}]})}


def snapshot(http: httpx.Client) -> dict:
    """Everything the API shows, deleted versions included."""
    out = {"subjects": http.get("/subjects?deleted=true").json(), "config": http.get("/config").json(),
           "mode": http.get("/mode").json(), "schemas": http.get("/schemas?deleted=true").json()}
    for s in out["subjects"]:
        out[s] = [http.get(f"/subjects/{s}/versions/{v}?deleted=true").json()
                  for v in http.get(f"/subjects/{s}/versions?deleted=true").json()]
        out[f"config {s}"] = http.get(f"/config/{s}").json()
    return out


REFUSALS = [
    ("GET", "/subjects/none/versions", None, 404, 40401),
    ("GET", "/subjects/s/versions/9", None, 404, 40402),
    ("GET", "/subjects/s/versions/abc", None, 422, 42202),
    ("GET", "/subjects/s/versions/0", None, 422, 42202),
    ("GET", "/schemas/ids/999", None, 404, 40403),
    ("GET", "/schemas/ids/x", None, 404, 40403),
    ("POST", "/subjects/s", avro("Other"), 404, 40403),
    ("POST", "/subjects/none", avro(), 404, 40401),
    ("DELETE", "/subjects/s?permanent=true", None, 404, 40405),
    ("DELETE", "/subjects/s/versions/1?permanent=true", None, 404, 40407),
    ("GET", "/config/s", None, 404, 40408),
    ("GET", "/mode/s", None, 404, 40409),
    ("POST", "/subjects/s/versions", {"schema": json.dumps({"type": "record", "name": "U", "fields": [
        {"name": "b", "type": "string"}]})}, 409, 409),
    ("POST", "/subjects/s/versions", {"schema": "{not json"}, 422, 42201),
    ("POST", "/subjects/s/versions", {"schema": '{"type":"nope"}'}, 422, 42201),
    ("POST", "/subjects/s/versions", {"schema": '"int"', "schemaType": "XML"}, 422, 42201),
    ("POST", "/subjects/s/versions", {"nothing": 1}, 422, 42201),
    ("POST", "/subjects/s/versions", [1, 2], 422, 42201),
    ("POST", "/subjects/s/versions", dict(avro("R", {"name": "x", "type": "U"}),
                                          references=[{"name": "U", "subject": "gone", "version": 1}]), 422, 42201),
    ("POST", "/subjects/s/versions", dict(avro(), id=77), 422, 42205),
    ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
    ("PUT", "/config/s", {}, 422, 42203),
    ("PUT", "/mode", {"mode": "WRITEONLY"}, 422, 42204),
    ("PUT", "/mode", {"mode": "IMPORT"}, 422, 42205),
    ("GET", "/nowhere", None, 404, 404),
    ("PATCH", "/subjects", None, 405, 405),
]


def test_error_codes_and_nothing_changes(registry_gateway):
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        assert http.post("/subjects/s/versions", json=avro()).json()["id"] == 1
        before = snapshot(http)
        for method, path, body, status, code in REFUSALS:
            answer = http.request(method, path, json=body)
            assert (answer.status_code, answer.json()["error_code"]) == (status, code), (method, path, answer.text)
            assert answer.headers["content-type"] == CT and isinstance(answer.json()["message"], str)
            assert snapshot(http) == before, (method, path)


def test_malformed_and_oversized_bodies(registry_gateway):
    with httpx.Client(base_url=registry_gateway.url, timeout=30) as http:
        bad = http.post("/subjects/s/versions", content=b"{", headers={"Content-Type": CT})
        assert (bad.status_code, bad.json()["error_code"]) == (422, 42201)
        huge = {"schema": json.dumps({"type": "enum", "name": "E", "symbols": [f"S{i}" for i in range(1_200_000)]})}
        refused = http.post("/subjects/s/versions", json=huge)  # ~10 MiB
        assert (refused.status_code, refused.json()["error_code"]) == (413, 41301)
        assert http.get("/subjects").json() == []


def test_content_types_and_shapes(registry_gateway):
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        reg = http.post("/subjects/t/versions", json=avro(), headers={"Content-Type": CT})
        assert reg.headers["content-type"] == CT and reg.json()["id"] == 1
        assert json.loads(http.get("/schemas/ids/1/schema").text) == json.loads(avro()["schema"])
        assert http.get("/schemas/ids/1").json() == {"schema": avro()["schema"].replace(" ", "")}
        assert http.get("/schemas/ids/1/versions").json() == [{"subject": "t", "version": 1}]
        assert http.get("/schemas/ids/1/subjects").json() == ["t"]
        assert sorted(http.get("/schemas/types").json()) == ["AVRO", "JSON", "PROTOBUF"]
        assert http.get("/config/t?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}
        assert http.put("/mode/t", json={"mode": "READONLY"}).json() == {"mode": "READONLY"}
        refused = http.post("/subjects/t/versions", json=avro("V"))
        assert (refused.status_code, refused.json()["error_code"]) == (422, 42205)
        assert http.delete("/mode/t").json() == {"mode": "READONLY"}
        assert http.post("/compatibility/subjects/t/versions/latest?verbose=true", json=avro()).json() == \
            {"is_compatible": True, "messages": []}
        assert http.get("/subjects/t/versions/1/referencedby").json() == []


@pytest.mark.parametrize("kill9", [False, True], ids=["restart", "kill9"])
def test_state_survives_restart(registry_gateway, kill9):
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        for i in range(3):
            http.post(f"/subjects/s{i}/versions", json=avro(f"R{i}"))
        http.post("/subjects/s0/versions", json=avro("R0", {"name": "a", "type": "int"},
                                                       {"name": "b", "type": "int", "default": 0}))
        http.delete("/subjects/s1")
        http.delete("/subjects/s1?permanent=true")
        http.delete("/subjects/s2")
        http.put("/config/s0", json={"compatibility": "FULL_TRANSITIVE"})
        http.put("/config", json={"compatibility": "FORWARD"})
        http.put("/mode/s2", json={"mode": "READONLY"})
        before = snapshot(http)
    assert before["subjects"] == ["s0", "s2"] and before["config"] == {"compatibilityLevel": "FORWARD"}
    registry_gateway.restart(kill9=kill9)
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        assert snapshot(http) == before
        assert http.get("/mode/s2").json() == {"mode": "READONLY"}
        assert http.post("/subjects/new/versions", json=avro("N")).json()["id"] == 5  # ids 1-4 stay taken


@pytest.mark.parametrize("how", ["subject", "last version"])
def test_permanent_delete_takes_the_subjects_config_and_mode(registry_gateway, how):
    """Confluent's registry drops a subject's compatibility level and mode with the subject itself (a
    permanent delete of the subject, or of its last version): GET /config/{s} then answers 40408 and
    GET /mode/{s} 40409, as for a subject that never had them; another subject's settings stay."""
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        assert http.post("/subjects/gone/versions", json=avro("G")).status_code == 200
        assert http.put("/config/gone", json={"compatibility": "NONE"}).status_code == 200
        assert http.put("/mode/gone", json={"mode": "READWRITE"}).status_code == 200
        assert http.put("/config/kept", json={"compatibility": "FULL"}).status_code == 200  # another subject's
        if how == "subject":
            assert http.delete("/subjects/gone").json() == [1]
            assert http.delete("/subjects/gone?permanent=true").json() == [1]
        else:
            assert http.delete("/subjects/gone/versions/1").json() == 1
            assert http.delete("/subjects/gone/versions/1?permanent=true").json() == 1
        config = http.get("/config/gone")
        assert config.status_code == 404 and config.json()["error_code"] == 40408, config.text
        mode = http.get("/mode/gone")
        assert mode.status_code == 404 and mode.json()["error_code"] == 40409, mode.text
        assert http.get("/config/gone?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}
        assert http.get("/config/kept").json() == {"compatibilityLevel": "FULL"}
