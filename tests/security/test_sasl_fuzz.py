"""Fuzzing the SASL state machines: garbage, truncated, mutated and replayed messages never raise
anything but AuthenticationFailed, never authenticate, and keep no more than a bounded state."""
import pytest
import scramp
from hypothesis import HealthCheck, given, settings, strategies as st

from security.credentials import CredentialStore
from security.sasl import MAX_TOKEN_BYTES, MECHANISMS, AuthenticationFailed, server_for

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = CredentialStore(str(tmp_path_factory.mktemp("fuzz")))
    s.set_password("alice", "alice-secret")
    return s


def _feed(server, tokens) -> None:
    """Step through `tokens`; only AuthenticationFailed may come out, and then every later step fails."""
    failed = False
    for token in tokens:
        try:
            server.step(token)
        except AuthenticationFailed as exc:
            assert exc.error_code == 58 and exc.message.startswith("Authentication failed")
            failed = True
        else:
            assert not failed, "a failed exchange accepted another message"


def _valid_messages(store, mech):
    """A real client's first and final messages for one exchange (and the server that saw them)."""
    client = scramp.ScramClient([mech], "alice", "alice-secret")
    server = server_for(mech, store)
    first = client.get_client_first().encode()
    client.set_server_first(server.step(first).decode())
    return server, first, client.get_client_final().encode()


@SETTINGS
@given(mech=st.sampled_from(MECHANISMS), tokens=st.lists(st.binary(max_size=600), min_size=1, max_size=4))
def test_garbage_never_raises_or_authenticates(store, mech, tokens):
    server = server_for(mech, store)
    _feed(server, tokens)
    assert not server.complete and server.principal is None


@SETTINGS
@given(mech=st.sampled_from(MECHANISMS[1:]), cut=st.integers(min_value=0), which=st.sampled_from(["first", "final"]))
def test_truncated_scram_messages_fail(store, mech, cut, which):
    fresh, first, final = _valid_messages(store, mech)
    if which == "first":
        server = server_for(mech, store)
        token = first[:cut % len(first)]
        _feed(server, [token, final])
    else:
        server = fresh
        _feed(server, [final[:cut % len(final)]])
    assert not server.complete


@SETTINGS
@given(mech=st.sampled_from(MECHANISMS[1:]), pos=st.integers(min_value=0), bit=st.integers(0, 7))
def test_mutated_client_final_never_authenticates(store, mech, pos, bit):
    server, _, final = _valid_messages(store, mech)
    mutated = bytearray(final)
    mutated[pos % len(mutated)] ^= 1 << bit
    _feed(server, [bytes(mutated)])
    assert not server.complete and server.principal is None


@SETTINGS
@given(mech=st.sampled_from(MECHANISMS[1:]), extra=st.binary(max_size=64))
def test_replayed_client_final_never_authenticates(store, mech, extra):
    _, _, old_final = _valid_messages(store, mech)
    client = scramp.ScramClient([mech], "alice", "alice-secret")
    server = server_for(mech, store)
    _feed(server, [client.get_client_first().encode(), old_final, old_final + extra])
    assert not server.complete


def _retained(server) -> int:
    """Bytes of text the exchange (and scramp's server inside it) holds on to."""
    objs = [server] + ([server._server] if hasattr(server, "_server") else [])
    return sum(len(v) for o in objs for k, v in vars(o).items()
               if k != "credentials" and isinstance(v, (str, bytes)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mech=st.sampled_from(MECHANISMS), size=st.sampled_from([0, 100, 10_000, MAX_TOKEN_BYTES - 20,
                                                               MAX_TOKEN_BYTES + 1, 4 * MAX_TOKEN_BYTES]))
def test_state_is_bounded_by_the_token_limit(store, mech, size):
    """Whatever it is fed, an exchange keeps at most a few copies of one token of at most
    MAX_TOKEN_BYTES; a token over the limit is refused and nothing of it is kept."""
    server = server_for(mech, store)
    token = b"n,,n=alice,r=" + b"x" * size
    _feed(server, [token, token])
    kept = _retained(server)
    assert kept <= 3 * MAX_TOKEN_BYTES + 4096
    if len(token) > MAX_TOKEN_BYTES:
        assert server.failed and kept < 4096


@SETTINGS
@given(ops=st.lists(st.one_of(st.tuples(st.just("handshake"), st.sampled_from([*MECHANISMS, "GSSAPI", "", "plain"])),
                              st.tuples(st.just("auth"), st.binary(max_size=300))), max_size=8))
def test_session_in_any_order_never_raises_or_authenticates(store, ops):
    """Handshakes and tokens in any order and number: only Kafka error codes, never a principal."""
    from security.sasl import SaslSession
    session = SaslSession(store, "9.9.9.9")
    for op, arg in ops:
        if op == "handshake":
            code, mechanisms = session.handshake(arg)
            assert code in (0, 33, 34) and mechanisms == list(MECHANISMS)
        else:
            code, message, out = session.authenticate(arg)
            assert code in (0, 34, 58) and (code == 0) == (message is None)
    assert not session.authenticated


@pytest.mark.parametrize("mech", MECHANISMS[1:])
def test_a_proof_with_a_flipped_unused_base64_bit_never_authenticates(store, mech):
    """The proof's last base64 character before its padding carries unused low bits; flipping one
    leaves the decoded bytes as they were, so only a canonical-encoding check refuses it."""
    server, _, final = _valid_messages(store, mech)
    text = final.decode()
    proof = text.rpartition("p=")[2]
    last = len(text) - len(proof) + len(proof.rstrip("=")) - 1
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    assert proof.endswith("=")  # SHA-256's 32 bytes: 2 unused bits, SHA-512's 64 bytes: 4; bit 0 is one of them
    flipped = alphabet[alphabet.index(text[last]) ^ 1]
    _feed(server, [(text[:last] + flipped + text[last + 1:]).encode()])
    assert not server.complete and server.principal is None
