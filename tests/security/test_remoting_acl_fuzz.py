"""Fuzzing the remoting ACL check (security.remoting_guard + codec.remoting.acl): garbage header fields
and bodies (any request code, any text, lone surrogates, unreadable JSON bodies), and signed requests
changed after signing. The check never raises, answers anything it refuses with NO_PERMISSION, and
never lets a request through whose signature is not the access key's over exactly these bytes."""
import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting import acl as sig
from security import Security
from security.remoting_guard import NAMESRV_CODES

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CODES = sorted({v for k, v in vars(RC).items() if k.isupper() and isinstance(v, int)} - NAMESRV_CODES)
_addresses = (f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in itertools.count(1))  # own failure bucket each
text = st.text(st.characters(codec=None, blacklist_categories=()), max_size=40)  # lone surrogates included
bodies = st.one_of(st.binary(max_size=200), st.sampled_from([
    b'{"consumerDataSet": 5}', b'{"consumerDataSet": [{"groupName": null}]}', b"{", b"[]", b'{"mqSet": "x"}',
    b'{"clientID": "c", "consumerDataSet": [{"groupName": "g", "subscriptionDataSet": [{"topic": 7}]}]}']))


@pytest.fixture(scope="module")
def sec(tmp_path_factory):
    s = Security(str(tmp_path_factory.mktemp("acl-fuzz")), super_users=["User:root"], environ={})
    s.credentials.set_access_key("AK", "SK", user="alice")
    s.credentials.set_access_key("ROOT", "RS", user="root")
    return s


def _check(sec, cmd):
    answer = sec.check_remoting(cmd, next(_addresses))
    assert answer is None or (answer.code == ResponseCode.NO_PERMISSION and answer.remark), answer
    return answer


@SETTINGS
@given(code=st.one_of(st.sampled_from(CODES), st.integers(-2**31, 2**31 - 1)),
       fields=st.dictionaries(text, text, max_size=6), body=bodies,
       access_key=st.one_of(st.none(), st.sampled_from(["AK", "ROOT", ""]), text),
       signature=st.one_of(st.none(), text), version=st.integers(-1, 1000))
def test_garbage_requests_never_raise_or_pass(sec, code, fields, body, access_key, signature, version):
    if code in NAMESRV_CODES:
        return  # not authenticated at all, as a NameServer
    if access_key is not None:
        fields[sig.ACCESS_KEY] = access_key
    if signature is not None:
        fields[sig.SIGNATURE] = signature
    answer = _check(sec, RemotingCommand(code=code, ext_fields=fields, body=body, version=version))
    assert answer is not None  # no request without the right signature gets through


@SETTINGS
@given(code=st.sampled_from(CODES), fields=st.dictionaries(text, text, max_size=6), body=bodies,
       change=st.sampled_from(["field", "new field", "body", "signature", "token", "drop"]), value=text,
       byte=st.integers(0, 255))
def test_changed_after_signing_never_passes(sec, code, fields, body, change, value, byte):
    cmd = RemotingCommand(code=code, ext_fields=dict(fields), body=body)
    sig.sign(cmd, "ROOT", "RS")  # the super user: a correct signature is allowed everything
    before = (dict(cmd.ext_fields), cmd.body)
    f = cmd.ext_fields
    if change == "field":
        key = sorted(f)[byte % len(f)]
        f[key] = value
    elif change == "new field":
        f[value or "x"] = f.get(value or "x", "") + "!"
    elif change == "body":
        cmd.body = cmd.body + bytes([byte])
    elif change == "signature":
        f[sig.SIGNATURE] = value
    elif change == "token":
        f[sig.SECURITY_TOKEN] = f.get(sig.SECURITY_TOKEN, "") + value + "t"
    else:
        del f[sig.SIGNATURE]
    answer = _check(sec, cmd)
    if (dict(cmd.ext_fields), cmd.body) == before:
        return  # the change happened to change nothing
    if cmd.ext_fields.get(sig.ACCESS_KEY) != "ROOT":
        assert answer is not None  # another (or no) key: not the super user any more
        return
    assert answer is not None and answer.remark == "check signature failed.", (change, answer)
