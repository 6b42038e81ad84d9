"""A Hypothesis fuzz of the registry's REST API on a real gateway process: random methods, paths, query
flags and bodies (valid schemas among them) never get a 500, and a refused request changes nothing."""
from __future__ import annotations

import json
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, given, settings, strategies as st

from sr_fixtures import registry_gateway  # noqa: F401 - fixture
from test_sr_http import snapshot

SUBJECTS = st.sampled_from(["s", "t", "other", "a.b-value", "%20", "ü", ""]) | st.text(min_size=1, max_size=8)
VERSIONS = st.sampled_from(["1", "2", "latest", "-1", "0", "-2", "abc", "99999999999", "1.5"])
IDS = st.sampled_from(["1", "2", "0", "-1", "x", "4294967296"])
PATHS = st.one_of(
    st.just("/subjects"), st.builds("/subjects/{}".format, SUBJECTS),
    st.builds("/subjects/{}/versions".format, SUBJECTS),
    st.builds("/subjects/{}/versions/{}".format, SUBJECTS, VERSIONS),
    st.builds("/subjects/{}/versions/{}/schema".format, SUBJECTS, VERSIONS),
    st.builds("/subjects/{}/versions/{}/referencedby".format, SUBJECTS, VERSIONS),
    st.builds("/schemas/ids/{}".format, IDS), st.builds("/schemas/ids/{}/versions".format, IDS),
    st.builds("/schemas/ids/{}/subjects".format, IDS), st.builds("/schemas/ids/{}/schema".format, IDS),
    st.sampled_from(["/schemas", "/schemas/types", "/config", "/mode", "/", "/compatibility"]),
    st.builds("/config/{}".format, SUBJECTS), st.builds("/mode/{}".format, SUBJECTS),
    st.builds("/compatibility/subjects/{}/versions/{}".format, SUBJECTS, VERSIONS),
    st.text(max_size=20).map(lambda t: "/" + t))
FLAGS = st.dictionaries(st.sampled_from(["deleted", "permanent", "normalize", "verbose", "defaultToGlobal", "force",
                                         "subjectPrefix", "latestOnly"]),
                        st.sampled_from(["true", "false", "TRUE", "1", ""]), max_size=3)
FINITE = st.floats(allow_nan=False, allow_infinity=False)  # httpx refuses to send NaN or infinity as JSON
JSON = st.recursive(st.none() | st.booleans() | st.integers() | FINITE | st.text(max_size=10),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
                    max_leaves=10)
RECORD = st.builds(lambda name, typ, default: {"type": "record", "name": name, "fields": [
    dict({"name": "f", "type": typ}, **({"default": default} if default is not None else {}))]},
    st.sampled_from(["U", "V"]), st.sampled_from(["int", "long", "string", "bytes", ["null", "int"], "nope"]),
    st.sampled_from([None, 0, "x"]))
SCHEMA_BODY = st.fixed_dictionaries({"schema": RECORD.map(json.dumps) | st.text(max_size=30)}, optional={
    "schemaType": st.sampled_from(["AVRO", "avro", "PROTOBUF", "JSON", "XML", 3]),
    "references": JSON | st.lists(st.fixed_dictionaries({"name": st.sampled_from(["U", "V"]),
                                                          "subject": SUBJECTS, "version": st.integers(-2, 3)})),
    "id": st.integers(-1, 5) | JSON, "version": st.integers(-1, 5) | JSON})
SETTING_BODY = st.fixed_dictionaries({}, optional={
    "compatibility": st.sampled_from(["NONE", "FULL", "backward", "BAD", 7]),
    "compatibilityLevel": st.sampled_from(["FORWARD", "x"]), "mode": st.sampled_from(["READWRITE", "IMPORT", "X", 0])})
BODIES = st.one_of(st.none(), JSON, SCHEMA_BODY, SETTING_BODY)
RAW = st.binary(max_size=40)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]), path=PATHS, params=FLAGS,
       body=BODIES, raw=st.none() | RAW)
def test_fuzz_no_500_and_refusals_change_nothing(registry_gateway, method, path, params, body, raw):
    path = quote(path, safe="/%")  # control characters and spaces escaped, as a client sends them
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        before = snapshot(http)
        if raw is not None:
            answer = http.request(method, path, params=params, content=raw)
        else:
            answer = http.request(method, path, params=params, json=body)
        assert answer.status_code < 500, (method, path, params, body, answer.text)
        if answer.status_code >= 400:
            assert answer.json()["error_code"] and snapshot(http) == before, (method, path, body, answer.text)
