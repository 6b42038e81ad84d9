"""Server-side SASL mechanisms, sans I/O: PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802,
RFC 7677; the arithmetic is `scramp`'s).

Each exchange is a small state machine: `step(client_bytes) -> server_bytes`; when `complete`,
`principal` is "User:<name>". Any failure raises AuthenticationFailed carrying the message Kafka's
broker sends with SASL_AUTHENTICATION_FAILED (58): the generic "Authentication failed during
authentication due to invalid credentials with SASL mechanism <M>" for everything a mechanism
rejects without telling why (Kafka's SaslException), and PLAIN's own messages where Kafka's
PlainSaslServer gives one (SaslAuthenticationException). After a failure, or once complete, every
further step fails: a replayed or out-of-turn message never authenticates.
"""
from __future__ import annotations

import base64
import binascii
import time

from security.credentials import MAX_ITERATIONS, MIN_ITERATIONS, SCRAM_MECHANISMS, CredentialStore

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
MAX_TOKEN_BYTES = 524288  # Kafka's sasl.server.max.receive.size default


class AuthenticationFailed(Exception):
    """The exchange failed; `message` is what the client is told (error code 58)."""

    error_code = SASL_AUTHENTICATION_FAILED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnsupportedMechanism(Exception):
    """SaslHandshake named a mechanism this listener does not enable (error code 33)."""

    error_code = UNSUPPORTED_SASL_MECHANISM


def generic_failure(mechanism: str, reauthentication: bool = False) -> str:
    phase = "re-authentication" if reauthentication else "authentication"
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"


class _Exchange:
    """Shared bookkeeping: one-shot failure, size limit, completion."""

    name = ""

    def __init__(self, credentials: CredentialStore) -> None:
        self.credentials = credentials
        self.complete = False
        self.failed = False
        self.principal: str | None = None

    def step(self, token: bytes) -> bytes:
        if self.failed or self.complete:
            self.failed = True
            raise AuthenticationFailed(generic_failure(self.name))
        try:
            if len(token) > MAX_TOKEN_BYTES:
                raise _Rejected()
            return self._step(bytes(token))
        except AuthenticationFailed:
            self.failed = True
            raise
        except Exception:  # anything the mechanism rejects: the generic answer, never the detail
            self.failed = True
            raise AuthenticationFailed(generic_failure(self.name)) from None

    def _step(self, token: bytes) -> bytes:
        raise NotImplementedError

    def _done(self, user: str) -> None:
        self.complete = True
        self.principal = f"User:{user}"


class _Rejected(Exception):
    """Internal: reject with the generic message."""


class PlainServer(_Exchange):
    """authzid NUL authcid NUL passwd, split as Kafka's PlainSaslServer splits it."""

    name = "PLAIN"

    def _step(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        parts = text.split("\x00", 2)
        parts += [""] * (3 - len(parts))
        authzid, user, password = parts
        if not user or not password:
            raise _Rejected()
        if not self.credentials.verify_plain(user, password):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        self._done(user)
        return b""


class ScramServer(_Exchange):
    """Two steps: client-first → server-first, client-final → server-final. The client-first message may
    carry Kafka's SCRAM extensions after the nonce (`tokenauth=true`: the user is a delegation token's id,
    the principal its owner; `security.tokens`)."""

    def __init__(self, credentials: CredentialStore, mechanism: str, server_nonce: str | None = None,
                 tokens=None) -> None:
        super().__init__(credentials)
        self.name = mechanism  # server_nonce: only for test vectors (default: a fresh random one)
        import scramp  # ~50 ms of imports: paid by the first SCRAM login, not every start

        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info, s_nonce=server_nonce)
        self.tokens = tokens
        self._token_auth = False
        self.token_authenticated = False
        self._user: str | None = None
        self._first_done = False

    def _auth_info(self, user: str):
        """scramp's lookup, with the user name already unescaped (=2C, =3D)."""
        if self._token_auth:
            found = self.tokens.login(user, self.name, int(time.time() * 1000)) if self.tokens else None
            if found is None:
                raise _Rejected()  # unknown or expired token: the generic message, as Kafka's SaslException
            cred, self._user = found[0], found[1].partition(":")[2]
            return cred.salt, cred.stored_key, cred.server_key, cred.iterations
        cred = self.credentials.scram(user, self.name)
        if cred is None or not MIN_ITERATIONS <= cred.iterations <= MAX_ITERATIONS:
            raise _Rejected()  # Kafka: "Invalid user credentials", sent as the generic message
        self._user = user
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def _client_first(self, text: str) -> str:
        """Kafka's client-first message with its extensions taken off (scramp knows none); remembers
        tokenauth. The proof is still checked over the bare message as the client sent it."""
        header, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2:
            raise _Rejected()
        attributes = bare.split(",")
        core = [a for a in attributes if a[:2] in ("n=", "r=", "m=")]
        extensions = dict(a.partition("=")[::2] for a in attributes[len(core):])
        self._token_auth = extensions.get("tokenauth", "").lower() == "true"
        self._bare = bare
        return f"{header},{authzid},{','.join(core)}"

    def _step(self, token: bytes) -> bytes:
        text = token.decode("utf-8")  # strict: a message that is not UTF-8 is malformed
        if not self._first_done:
            self._server.set_client_first(self._client_first(text))
            self._server.client_first_bare = self._bare  # the AuthMessage covers the extensions too
            first = self._server.get_server_first()
            self._first_done = True
            return first.encode("utf-8")
        _require_canonical_proof(text)
        self._server.set_client_final(text)
        final = self._server.get_server_final()
        self.token_authenticated = self._token_auth
        self._done(self._user)
        return final.encode("utf-8")


def _require_canonical_proof(client_final: str) -> None:
    """The proof's base64 must be the one encoding of its bytes: a lenient decoder ignores the unused
    low bits of the last character, so a proof with one of those bits flipped would still log in (found
    by test_sasl_fuzz's mutated client-final case)."""
    proof = next((a[2:] for a in client_final.split(",") if a.startswith("p=")), None)
    try:
        if proof is None or base64.b64encode(base64.b64decode(proof, validate=True)).decode("ascii") != proof:
            raise _Rejected()
    except (binascii.Error, ValueError):
        raise _Rejected() from None


def server_for(mechanism: str, credentials: CredentialStore, enabled=MECHANISMS, tokens=None) -> _Exchange:
    """A new server-side exchange for `mechanism`; UnsupportedMechanism if it is not enabled."""
    if mechanism not in enabled or mechanism not in MECHANISMS:
        raise UnsupportedMechanism(f"Unsupported SASL mechanism {mechanism}")
    if mechanism == "PLAIN":
        return PlainServer(credentials)
    return ScramServer(credentials, mechanism, tokens=tokens)


NONE = 0


class SaslSession:
    """One Kafka connection's SASL authentication (KIP-152): SaslHandshake names the mechanism, then
    SaslAuthenticate rounds carry its tokens. The answers are (error code, message, bytes) as the
    Kafka responses carry them. Failures cost the client address a token of `limiter` (an address
    without tokens fails at once, unchecked) and are logged through `denials`."""

    def __init__(self, credentials: CredentialStore, address: str = "", enabled=MECHANISMS, limiter=None,
                 denials=None, tokens=None) -> None:
        self.credentials, self.address, self.enabled = credentials, address, tuple(enabled)
        self.tokens = tokens  # security.tokens.TokenStore: SCRAM logins with tokenauth=true
        self.limiter, self.denials = limiter, denials
        self.exchange: _Exchange | None = None
        self.principal: str | None = None
        self.failed = False

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    @property
    def token_authenticated(self) -> bool:
        """Logged in with a delegation token (Kafka lets such a principal neither create nor manage tokens)."""
        return self.authenticated and getattr(self.exchange, "token_authenticated", False)

    def handshake(self, mechanism: str) -> tuple[int, list[str]]:
        """SaslHandshake: (error code, the enabled mechanisms). Kafka closes the connection after an error."""
        if self.exchange is not None or self.failed:
            return ILLEGAL_SASL_STATE, list(self.enabled)
        try:
            self.exchange = server_for(mechanism, self.credentials, self.enabled, self.tokens)
        except UnsupportedMechanism:
            self.failed = True
            return UNSUPPORTED_SASL_MECHANISM, list(self.enabled)
        return NONE, list(self.enabled)

    def authenticate(self, token: bytes) -> tuple[int, str | None, bytes]:
        """SaslAuthenticate: (error code, error message, server bytes)."""
        if self.authenticated:
            return ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication", b""
        if self.exchange is None:
            return ILLEGAL_SASL_STATE, "SaslAuthenticate request received before SaslHandshake", b""
        if self.failed or (self.limiter is not None and self.limiter.blocked(self.address)):
            return self._failure(generic_failure(self.exchange.name))
        try:
            out = self.exchange.step(token)
        except AuthenticationFailed as exc:
            if self.limiter is not None:
                self.limiter.failed(self.address)
            return self._failure(exc.message)
        if self.exchange.complete:
            self.principal = self.exchange.principal
        return NONE, None, out

    def _failure(self, message: str) -> tuple[int, str, bytes]:
        self.failed = True
        if self.denials is not None:
            self.denials.denied("-", "authenticate", f"kafka SASL {self.exchange.name}", self.address, message)
        return SASL_AUTHENTICATION_FAILED, message, b""
