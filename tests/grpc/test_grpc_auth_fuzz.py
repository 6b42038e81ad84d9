"""Fuzzing the gRPC signature check (gateway.grpc.auth): garbage `authorization` and `x-mq-date-time`
headers (any text, lone surrogates, near-miss forms of the SDKs' header), any request message, and
signed headers changed after signing. The parser answers a value or Refused (never another
exception); `check` refuses with UNAUTHORIZED whatever does not carry the access key's signature of
exactly that date-time, and lets a correctly signed request through."""
from __future__ import annotations

import itertools
import types

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gateway.grpc import auth
from gateway.grpc.common import Code, RpcError, d, s
from security import Security

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_addresses = (f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in itertools.count(1))  # own failure bucket each
text = st.text(st.characters(codec=None, blacklist_categories=()), max_size=60)  # lone surrogates included
pieces = st.sampled_from(["MQv2-HMAC-SHA1", " ", ",", ", ", "=", "/", "Credential", "Signature", "SignedHeaders",
                          "AK", "x-mq-date-time", "0a", "zz", "ABCDEF", "\t", "=="])
headers = st.one_of(text, st.lists(pieces, max_size=12).map("".join))
DATE = "20261123T231500Z"


@pytest.fixture(scope="module")
def sec(tmp_path_factory):
    sec = Security(str(tmp_path_factory.mktemp("grpc-auth-fuzz")), super_users=["User:root"], environ={})
    sec.credentials.set_access_key("AK", "SK", user="root")
    return sec


def _call(metadata: dict):
    socket = types.SimpleNamespace(getpeername=lambda: (next(_addresses), 1))
    return types.SimpleNamespace(metadata=metadata, conn=types.SimpleNamespace(socket=socket))


def _signed(date: str = DATE, ak: str = "AK", sk: str = "SK") -> dict:
    return {"x-mq-date-time": date, "authorization":
            f"MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, Signature={auth.sign(sk, date)}"}


def _route(topic: str = "t"):
    return s.QueryRouteRequest(topic=d.Resource(name=topic))


@SETTINGS
@given(header=headers, date=st.one_of(st.none(), text))
def test_parser_answers_or_refuses(header, date):
    try:
        user, signature = auth.parse_authorization(header, date)
    except auth.Refused as exc:
        assert str(exc)
        return
    assert user is None or isinstance(user, str)
    assert signature is None or isinstance(signature, bytes)


@SETTINGS
@given(header=headers, date=st.one_of(st.none(), text))
def test_garbage_is_refused_unauthorized(sec, header, date):
    app = types.SimpleNamespace(security=sec)
    metadata = {"authorization": header} if date is None else {"authorization": header, "x-mq-date-time": date}
    with pytest.raises(RpcError) as refused:
        auth.check(app, _call(metadata), _route())
    assert refused.value.code == Code.UNAUTHORIZED and refused.value.message


@SETTINGS
@given(data=st.data())
def test_changed_signed_headers_are_refused(sec, data):
    app = types.SimpleNamespace(security=sec)
    metadata = _signed()
    auth.check(app, _call(dict(metadata)), _route())  # signed as the SDKs sign: through
    key = data.draw(st.sampled_from(sorted(metadata)))
    value = metadata[key]
    i = data.draw(st.integers(0, len(value)))
    changed = value[:i] + data.draw(st.text(min_size=1, max_size=3)) + value[i + data.draw(st.integers(0, 2)):]
    changed_metadata = {**metadata, key: changed}
    try:
        same = auth.parse_authorization(changed_metadata["authorization"], changed_metadata["x-mq-date-time"]) == \
            auth.parse_authorization(metadata["authorization"], DATE) and changed_metadata["x-mq-date-time"] == DATE
    except auth.Refused:
        same = False
    if same:
        return  # a change the proxy ignores too (the algorithm name, SignedHeaders, spaces, hex case, "/...")
    with pytest.raises(RpcError) as refused:
        auth.check(app, _call(changed_metadata), _route())
    assert refused.value.code == Code.UNAUTHORIZED


@SETTINGS
@given(payload=st.binary(max_size=200), kind=st.sampled_from(sorted(
    name for name in dir(s) if name.endswith("Request") or name == "TelemetryCommand")))
def test_needs_of_any_request(payload, kind):
    request = getattr(s, kind)()
    try:
        request.ParseFromString(payload)
    except Exception:  # noqa: BLE001 - not a message of this type
        return
    try:
        wanted = auth.needs(request)
    except auth.Refused as exc:
        assert str(exc).endswith(".")
        return
    assert all(isinstance(name, str) and name for _, _, name in wanted)


def test_sdk_signatures():
    """The signature of the Java and Python SDKs: hex HMAC-SHA1 of the date-time keyed by the secret."""
    assert auth.sign("SK", DATE) == "993c9eb68c48d7d93c093105476381d171b7c785"
    user, signature = auth.parse_authorization(_signed()["authorization"], DATE)
    assert user == "AK" and signature.hex() == auth.sign("SK", DATE)
    user, _ = auth.parse_authorization("MQv2-HMAC-SHA1 Credential=AK/20261123/region, Signature=00", DATE)
    assert user == "AK"
    for header, message in (("MQv2-HMAC-SHA1", "authentication header is incorrect."),
                            ("MQv2-HMAC-SHA1 Credential", "authentication keyValues length is incorrect, "
                                                          "actual length=1."),
                            ("MQv2-HMAC-SHA1 Credential=/", "authentication credential length is incorrect, "
                                                            "actual length=0."),
                            ("MQv2-HMAC-SHA1 Signature=abc", "create authentication context error.")):
        with pytest.raises(auth.Refused, match=message.replace(".", r"\.")):
            auth.parse_authorization(header, DATE)
    with pytest.raises(auth.Refused, match="datetime is null"):
        auth.parse_authorization("MQv2-HMAC-SHA1 Credential=AK", None)
