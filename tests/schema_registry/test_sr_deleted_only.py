"""`deletedOnly` on GET /subjects and GET /subjects/{s}/versions, through raw HTTP against a real
gateway process. No Confluent Schema Registry can be installed here to run this against first, so it
rests on Confluent's API reference: `deletedOnly` "Whether to return deleted subjects only" (for
/subjects; a subject is deleted when every version of it is soft-deleted) and "Whether to return
deleted schemas only" (for /subjects/{s}/versions), winning over `deleted` when both are given; a
subject that does not exist, deleted versions included, is 40401. Before, the gateway ignored the
parameter and answered the live subjects and versions."""
from __future__ import annotations

import json

import httpx

from sr_fixtures import registry_gateway  # noqa: F401 - fixture


def _schema(field: str) -> dict:
    return {"schema": json.dumps({"type": "record", "name": "D", "fields": [{"name": field, "type": "int"}]})}


def test_deleted_only_lists_soft_deleted_subjects_and_versions(registry_gateway):
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        assert http.put("/config", json={"compatibility": "NONE"}).status_code == 200
        for subject, fields in (("live", "ab"), ("gone", "a"), ("half", "abc")):
            for f in fields:
                assert http.post(f"/subjects/{subject}/versions", json=_schema(f)).status_code == 200
        assert http.delete("/subjects/gone").json() == [1]
        assert http.delete("/subjects/half/versions/2").json() == 2

        assert http.get("/subjects").json() == ["half", "live"]
        assert http.get("/subjects?deleted=true").json() == ["gone", "half", "live"]
        assert http.get("/subjects?deletedOnly=true").json() == ["gone"]
        assert http.get("/subjects?deleted=true&deletedOnly=true").json() == ["gone"]
        assert http.get("/subjects?deletedOnly=true&subjectPrefix=li").json() == []

        assert http.get("/subjects/half/versions").json() == [1, 3]
        assert http.get("/subjects/half/versions?deleted=true").json() == [1, 2, 3]
        assert http.get("/subjects/half/versions?deletedOnly=true").json() == [2]
        assert http.get("/subjects/gone/versions?deletedOnly=true").json() == [1]
        assert http.get("/subjects/live/versions?deletedOnly=true").json() == []
        missing = http.get("/subjects/none/versions?deletedOnly=true")
        assert (missing.status_code, missing.json()["error_code"]) == (404, 40401)
        hidden = http.get("/subjects/gone/versions")  # a soft-deleted subject without either flag
        assert (hidden.status_code, hidden.json()["error_code"]) == (404, 40401)
