"""Subjects whose names need percent-encoding in the path ('/', '%', spaces, non-ASCII) through raw
HTTP against a real gateway process: every client sends them encoded (%2F), and routes once matched the
decoded path, so `a/b` answered 404."""
from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from sr_fixtures import registry_gateway  # noqa: F401 - fixture

SCHEMA = {"schema": json.dumps({"type": "record", "name": "P", "fields": [{"name": "a", "type": "int"}]})}


@pytest.mark.parametrize("subject", ["team/orders-value", "a%2Fb", "with space-value", "ü/€-value"])
def test_encoded_subject_names(registry_gateway, subject):
    path = quote(subject, safe="")
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        registered = http.post(f"/subjects/{path}/versions", json=SCHEMA)
        assert registered.status_code == 200, registered.text
        assert registered.json()["id"] == 1
        assert http.get("/subjects").json() == [subject]
        assert http.get(f"/subjects/{path}/versions").json() == [1]
        got = http.get(f"/subjects/{path}/versions/latest").json()
        assert (got["subject"], got["version"], got["id"]) == (subject, 1, 1)
        assert http.post(f"/subjects/{path}", json=SCHEMA).json()["subject"] == subject
        assert http.put(f"/config/{path}", json={"compatibility": "NONE"}).json() == {"compatibility": "NONE"}
        assert http.get(f"/config/{path}").json() == {"compatibilityLevel": "NONE"}
        assert http.post(f"/compatibility/subjects/{path}/versions/latest", json=SCHEMA).json() == \
            {"is_compatible": True}
        assert http.get("/schemas/ids/1/versions").json() == [{"subject": subject, "version": 1}]
        assert http.delete(f"/subjects/{path}").json() == [1]
        assert http.delete(f"/subjects/{path}?permanent=true").json() == [1]
        assert http.get("/subjects?deleted=true").json() == []


def test_unencoded_slash_is_not_a_subject(registry_gateway):
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        answer = http.post("/subjects/team/orders-value/versions", json=SCHEMA)
        assert (answer.status_code, answer.json()["error_code"]) == (404, 404)
        assert http.get("/subjects").json() == []
