"""The credential store and the SASL state machines (PLAIN, SCRAM-SHA-256/512), with RFC 7677's
SCRAM-SHA-256 test vector and Kafka's failure messages."""
import base64
import hashlib
import json
import os
import stat

import pytest
import scramp

from security.credentials import (ADMIN_PASSWORD_ENV, CredentialError, CredentialStore, ScramCredential,
                                  credential_from_salted_password, scram_credential)
from security.sasl import (MAX_TOKEN_BYTES, AuthenticationFailed, PlainServer, ScramServer, UnsupportedMechanism,
                           server_for)

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


@pytest.fixture
def store(tmp_path):
    s = CredentialStore(str(tmp_path / "config"))
    s.set_password("alice", "alice-secret")
    return s


# ---------------------------------------------------------------- credential store
def test_password_is_never_stored_and_file_is_private(store):
    text = open(store.path).read()
    assert "alice-secret" not in text
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    doc = json.loads(text)
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        cred = doc["users"]["alice"]["scram"][mech]
        assert cred["iterations"] >= 4096 and set(cred) == {"salt", "stored_key", "server_key", "iterations"}


def test_credentials_survive_a_reload(store, tmp_path):
    again = CredentialStore(os.path.dirname(store.path))
    assert again.scram("alice", "SCRAM-SHA-256") == store.scram("alice", "SCRAM-SHA-256")
    assert again.describe("alice") == [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 4096)]
    assert again.verify_plain("alice", "alice-secret")


def test_too_few_iterations_or_unknown_mechanism_are_refused(store):
    with pytest.raises(CredentialError):
        store.set_password("bob", "pw", iterations=4095)
    with pytest.raises(CredentialError):
        store.set_password("bob", "pw", mechanisms=("SCRAM-SHA-1",))
    with pytest.raises(CredentialError):
        store.set_password("", "pw")
    assert store.users() == ["alice"]


def test_salted_password_form_matches_the_password_form():
    salt = b"0123456789abcdef"
    for mech, hf in (("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")):
        salted = hashlib.pbkdf2_hmac(hf, b"pencil", salt, 4096)
        assert credential_from_salted_password(mech, salt, salted, 4096) == scram_credential(mech, "pencil", 4096, salt)


def test_scram_credential_round_trips_through_json():
    cred = scram_credential("SCRAM-SHA-512", "x", 5000)
    assert ScramCredential.from_json(json.loads(json.dumps(cred.to_json()))) == cred


def test_bootstrap_admin_only_on_an_empty_store(tmp_path):
    s = CredentialStore(str(tmp_path / "a"))
    assert s.bootstrap_admin({ADMIN_PASSWORD_ENV: "boot"})
    assert s.verify_plain("admin", "boot") and not s.verify_plain("admin", "other")
    assert s.scram("admin", "SCRAM-SHA-256") and s.scram("admin", "SCRAM-SHA-512")
    assert s.access_key("admin").secret == "boot" and s.access_key("admin").user == "admin"
    assert not s.bootstrap_admin({ADMIN_PASSWORD_ENV: "again"})  # not empty any more
    assert s.verify_plain("admin", "boot")
    empty = CredentialStore(str(tmp_path / "b"))
    assert not empty.bootstrap_admin({})  # no variable: nothing created
    assert empty.empty


def test_access_keys(store):
    store.set_access_key("AK1", "SK1", user="alice")
    assert store.access_key("AK1").user == "alice"
    assert CredentialStore(os.path.dirname(store.path)).access_key("AK1").secret == "SK1"
    assert store.delete_access_key("AK1") and store.access_key("AK1") is None
    with pytest.raises(CredentialError):
        store.set_access_key("AK2", "")


def test_delete_scram(store):
    assert store.delete_scram("alice", "SCRAM-SHA-512")
    assert store.describe("alice") == [("SCRAM-SHA-256", 4096)]
    assert not store.delete_scram("alice", "SCRAM-SHA-512")
    assert store.delete_scram("alice", "SCRAM-SHA-256")
    assert store.users() == [] and not store.verify_plain("alice", "alice-secret")


# ---------------------------------------------------------------- SCRAM
def test_rfc7677_scram_sha256_vector(tmp_path):
    """RFC 7677 section 3: user "user", password "pencil"."""
    s = CredentialStore(str(tmp_path))
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    s.set_scram("user", "SCRAM-SHA-256", scram_credential("SCRAM-SHA-256", "pencil", 4096, salt))
    server = ScramServer(s, "SCRAM-SHA-256", server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.step(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.principal == "User:user"


def _scram(store, mech, user, password, server=None):
    client = scramp.ScramClient([mech], user, password)
    server = server or server_for(mech, store)
    client.set_server_first(server.step(client.get_client_first().encode()).decode())
    final = client.get_client_final()
    client.set_server_final(server.step(final.encode()).decode())  # checks the server's signature
    return server, final


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_right_and_wrong_password(store, mech):
    server, _ = _scram(store, mech, "alice", "alice-secret")
    assert server.principal == "User:alice"
    for user, password in (("alice", "wrong"), ("mallory", "alice-secret")):
        with pytest.raises(AuthenticationFailed) as info:
            _scram(store, mech, user, password)
        assert info.value.message == GENERIC.format(mech) and info.value.error_code == 58


def test_scram_user_without_that_mechanism_fails(store):
    store.delete_scram("alice", "SCRAM-SHA-512")
    with pytest.raises(AuthenticationFailed):
        _scram(store, "SCRAM-SHA-512", "alice", "alice-secret")


def test_scram_escaped_user_name(tmp_path):
    s = CredentialStore(str(tmp_path))
    s.set_password("a,b=c", "pw")
    server, _ = _scram(s, "SCRAM-SHA-256", "a,b=c", "pw")
    assert server.principal == "User:a,b=c"


def test_replayed_client_final_fails(store):
    _, final = _scram(store, "SCRAM-SHA-256", "alice", "alice-secret")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
    server = server_for("SCRAM-SHA-256", store)
    server.step(client.get_client_first().encode())
    with pytest.raises(AuthenticationFailed):
        server.step(final.encode())  # the earlier session's nonce and proof
    assert not server.complete and server.principal is None


def test_no_step_after_completion_or_failure(store):
    server, final = _scram(store, "SCRAM-SHA-256", "alice", "alice-secret")
    with pytest.raises(AuthenticationFailed):
        server.step(final.encode())
    bad = server_for("SCRAM-SHA-256", store)
    with pytest.raises(AuthenticationFailed):
        bad.step(b"garbage")
    with pytest.raises(AuthenticationFailed):  # a failed exchange stays failed
        bad.step(scramp.ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret").get_client_first().encode())


def test_unsupported_mechanism(store):
    with pytest.raises(UnsupportedMechanism):
        server_for("GSSAPI", store)
    with pytest.raises(UnsupportedMechanism):
        server_for("PLAIN", store, enabled=("SCRAM-SHA-256",))


# ---------------------------------------------------------------- PLAIN
def test_plain_messages_are_kafkas(store):
    ok = server_for("PLAIN", store)
    assert ok.step(b"\x00alice\x00alice-secret") == b"" and ok.principal == "User:alice"
    assert server_for("PLAIN", store).step(b"alice\x00alice\x00alice-secret") == b""
    cases = {b"\x00alice\x00nope": "Authentication failed: Invalid username or password",
             b"\x00mallory\x00alice-secret": "Authentication failed: Invalid username or password",
             b"bob\x00alice\x00alice-secret":
                 "Authentication failed: Client requested an authorization id that is different from username",
             b"\x00\x00pw": GENERIC.format("PLAIN"),
             b"\x00alice\x00": GENERIC.format("PLAIN"),
             b"no-separators": GENERIC.format("PLAIN")}
    for token, message in cases.items():
        with pytest.raises(AuthenticationFailed) as info:
            PlainServer(store).step(token)
        assert info.value.message == message, token


def test_plain_password_keeps_everything_after_the_second_nul(tmp_path):
    s = CredentialStore(str(tmp_path))
    s.set_password("u", "a:b,c=d")
    assert server_for("PLAIN", s).step("\x00u\x00a:b,c=d".encode()) == b""
    with pytest.raises(CredentialError):  # SASLprep refuses a NUL inside a password
        s.set_password("u", "a\x00b")
    with pytest.raises(AuthenticationFailed):
        server_for("PLAIN", s).step(b"\x00u\x00a:b\x00extra")


def test_oversized_token_is_refused_by_its_length(store):
    class Huge:
        def __len__(self):
            return MAX_TOKEN_BYTES + 1

        def __bytes__(self):
            raise AssertionError("an oversized token must not be read")
    for mech in ("PLAIN", "SCRAM-SHA-256"):
        with pytest.raises(AuthenticationFailed):
            server_for(mech, store).step(Huge())


# ---------------------------------------------------------------- a Kafka connection's session
def test_session_handshake_then_authenticate(store):
    from security.sasl import SaslSession
    s = SaslSession(store, "1.2.3.4")
    assert s.authenticate(b"\x00alice\x00alice-secret")[0] == 34  # before the handshake
    assert s.handshake("PLAIN") == (0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    assert s.handshake("PLAIN")[0] == 34  # only once
    assert s.authenticate(b"\x00alice\x00alice-secret") == (0, None, b"")
    assert s.authenticated and s.principal == "User:alice"
    assert s.authenticate(b"\x00alice\x00alice-secret")[0] == 34
    bad = SaslSession(store, "1.2.3.4", enabled=("SCRAM-SHA-512",))
    assert bad.handshake("PLAIN") == (33, ["SCRAM-SHA-512"])


def test_session_failures_are_rate_limited(store):
    from security.audit import FailureLimiter
    from security.sasl import SaslSession
    limiter = FailureLimiter(rate=0.001, burst=2)
    for _ in range(2):
        s = SaslSession(store, "6.6.6.6", limiter=limiter)
        s.handshake("PLAIN")
        code, message, _ = s.authenticate(b"\x00alice\x00nope")
        assert (code, message) == (58, "Authentication failed: Invalid username or password")
    s = SaslSession(store, "6.6.6.6", limiter=limiter)
    s.handshake("PLAIN")
    assert s.authenticate(b"\x00alice\x00alice-secret") == (58, GENERIC.format("PLAIN"), b"")  # blocked: unchecked
    assert not s.authenticated
    other = SaslSession(store, "7.7.7.7", limiter=limiter)
    other.handshake("PLAIN")
    assert other.authenticate(b"\x00alice\x00alice-secret")[0] == 0
