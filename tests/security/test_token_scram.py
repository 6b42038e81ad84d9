"""SCRAM logins with a delegation token (security.sasl + security.tokens, no server): Kafka's client-first
message carries the extension tokenauth=true after the nonce, the user is the token id, the password
base64(hmac); the principal is the token's owner, flagged as token-authenticated. An expired token, a
token id without tokenauth, and a wrong hmac all fail with the generic message."""
from __future__ import annotations

import base64

import pytest
import scramp

from security.credentials import CredentialStore
from security.sasl import NONE, SASL_AUTHENTICATION_FAILED, SaslSession
from security.tokens import TokenStore

MECH = "SCRAM-SHA-256"


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def now(self) -> float:
        return self.ms / 1000


def _login(session: SaslSession, user: str, password: str, tokenauth: bool) -> tuple[int, int]:
    """(error code of the first round, of the second)."""
    client = scramp.ScramClient([MECH], user, password)
    first = client.get_client_first()
    if tokenauth:
        first += ",tokenauth=true"
        client.client_first_bare += ",tokenauth=true"  # the proof covers the extension, as Kafka's client sends it
    assert session.handshake(MECH)[0] == NONE
    code, _msg, out = session.authenticate(first.encode())
    if code != NONE:
        return code, code
    client.set_server_first(out.decode())
    code2, _msg, _out = session.authenticate(client.get_client_final().encode())
    return code, code2


@pytest.fixture
def stores(tmp_path):
    clock = Clock()
    tokens = TokenStore(str(tmp_path), b"secret", max_lifetime_ms=10_000, expiry_time_ms=5_000)
    token = tokens.create("User:alice", "User:alice", [], -1, clock.ms)
    return CredentialStore(str(tmp_path)), tokens, token, clock


def _session(stores) -> SaslSession:
    creds, tokens, _token, _clock = stores
    return SaslSession(creds, tokens=tokens)


def _hmac(token) -> str:
    return base64.b64encode(token.hmac).decode()


def test_token_login_acts_as_the_owner(stores, monkeypatch):
    creds, tokens, token, clock = stores
    monkeypatch.setattr("time.time", clock.now)
    session = _session(stores)
    assert _login(session, token.token_id, _hmac(token), tokenauth=True) == (NONE, NONE)
    assert session.principal == "User:alice" and session.token_authenticated


def test_token_id_without_tokenauth_is_no_user(stores, monkeypatch):
    _creds, _tokens, token, clock = stores
    monkeypatch.setattr("time.time", clock.now)
    assert _login(_session(stores), token.token_id, _hmac(token), tokenauth=False)[0] == SASL_AUTHENTICATION_FAILED


def test_wrong_hmac_fails(stores, monkeypatch):
    _creds, _tokens, token, clock = stores
    monkeypatch.setattr("time.time", clock.now)
    assert _login(_session(stores), token.token_id, "d3Jvbmc=", tokenauth=True)[1] == SASL_AUTHENTICATION_FAILED


def test_expired_token_fails(stores, monkeypatch):
    _creds, _tokens, token, clock = stores
    clock.ms += 6_000  # past the 5 s expiry, never renewed
    monkeypatch.setattr("time.time", clock.now)
    assert _login(_session(stores), token.token_id, _hmac(token), tokenauth=True)[0] == SASL_AUTHENTICATION_FAILED


def test_password_login_is_not_token_authenticated(stores):
    creds, _tokens, _token, _clock = stores
    creds.set_password("bob", "bob-secret")
    session = _session(stores)
    assert _login(session, "bob", "bob-secret", tokenauth=False) == (NONE, NONE)
    assert session.principal == "User:bob" and not session.token_authenticated


def test_renew_is_capped_by_the_max_lifetime(stores):
    _creds, tokens, token, clock = stores
    assert tokens.renew(token.hmac, "User:alice", 60_000, clock.ms + 1_000) == (0, token.max_ms)
    assert tokens.renew(token.hmac, "User:bob", 1_000, clock.ms + 1_000)[0] == 63
