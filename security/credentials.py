"""The user store shared by both protocols: SCRAM credentials (Kafka SASL) and RocketMQ access keys.

Kept in `<data>/config/credentials.json` (written atomically, mode 0600). A SCRAM credential is the
salt, the iteration count (>= 4096) and the stored and server keys of RFC 5802; the password is
never stored. SASL/PLAIN is verified against the user's SCRAM credential (the password is salted
and hashed again and compared with the stored key), so every user with a SCRAM credential can use
PLAIN. A RocketMQ access key's secret, however, is stored as it is: RocketMQ's signature is an
HMAC keyed with the secret itself, so the verifier must hold the secret. Whoever can read the file
can therefore sign RocketMQ requests as that key (not log in to Kafka): protect the data dir.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import logging
import os

from store.config import atomic_write, read_json

log = logging.getLogger("rocketgate.security")

FILE = "credentials.json"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations
ADMIN_USER = "admin"
ADMIN_PASSWORD_ENV = "ROCKETGATE_ADMIN_PASSWORD"
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


class CredentialError(ValueError):
    """A credential that cannot be stored (unknown mechanism, too few iterations, empty name...)."""


@dataclasses.dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict:
        b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return {"salt": b64(self.salt), "stored_key": b64(self.stored_key), "server_key": b64(self.server_key),
                "iterations": self.iterations}

    @classmethod
    def from_json(cls, doc: dict) -> "ScramCredential":
        return cls(base64.b64decode(doc["salt"]), base64.b64decode(doc["stored_key"]),
                   base64.b64decode(doc["server_key"]), int(doc["iterations"]))


@dataclasses.dataclass(frozen=True)
class AccessKey:
    secret: str
    user: str  # the principal is User:<user>, the same as the user's Kafka principal


def _check_mechanism(mechanism: str) -> None:
    if mechanism not in SCRAM_MECHANISMS:
        raise CredentialError(f"unsupported SCRAM mechanism {mechanism!r} (supported: {', '.join(SCRAM_MECHANISMS)})")


def _check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise CredentialError(f"iterations must be in {MIN_ITERATIONS}..{MAX_ITERATIONS}, not {iterations}")


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name or "\x00" in name:
        raise CredentialError(f"invalid {what} {name!r}")


def scram_credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                     salt: bytes | None = None) -> ScramCredential:
    """A fresh credential for `password` (random salt unless given)."""
    _check_mechanism(mechanism)
    _check_iterations(iterations)
    import scramp  # with asn1crypto ~50 ms of imports: paid by the first SCRAM user, not every start

    try:
        salt, stored_key, server_key, i = scramp.ScramMechanism(mechanism).make_auth_info(
            password, iteration_count=iterations, salt=salt)
    except scramp.ScramException as exc:  # e.g. a password SASLprep refuses
        raise CredentialError(f"unusable password: {exc}") from None
    return ScramCredential(bytes(salt), bytes(stored_key), bytes(server_key), int(i))


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """What Kafka's AlterUserScramCredentials sends (salt + SaltedPassword) as a stored credential."""
    _check_mechanism(mechanism)
    _check_iterations(iterations)
    hf = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", hf).digest()
    server_key = hmac.new(salted_password, b"Server Key", hf).digest()
    return ScramCredential(bytes(salt), hf(client_key).digest(), server_key, iterations)


class CredentialStore:
    """Users (SCRAM credentials per mechanism) and RocketMQ access keys, persisted on every change."""

    def __init__(self, config_dir: str) -> None:
        self.path = os.path.join(config_dir, FILE)
        os.makedirs(config_dir, exist_ok=True)
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._keys: dict[str, AccessKey] = {}
        self._load()

    # ------------------------------------------------------------ persistence
    def _load(self) -> None:
        """(Re)read the file: what another process (the `python -m security` tool) wrote wins."""
        self._users, self._keys = {}, {}
        try:
            doc = read_json(self.path)
        except ValueError as exc:
            raise CredentialError(f"{self.path} is not valid JSON: {exc}") from None
        if doc is None:
            return
        try:
            for user, mechs in (doc.get("users") or {}).items():
                self._users[user] = {m: ScramCredential.from_json(c) for m, c in (mechs.get("scram") or {}).items()}
            for key, entry in (doc.get("access_keys") or {}).items():
                self._keys[key] = AccessKey(entry["secret"], entry.get("user") or key)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise CredentialError(f"{self.path} is not a valid credential store: {exc!r}") from None

    def _persist(self) -> None:
        doc = {"version": 1,
               "users": {u: {"scram": {m: c.to_json() for m, c in sorted(mechs.items())}}
                         for u, mechs in sorted(self._users.items())},
               "access_keys": {k: {"secret": a.secret, "user": a.user} for k, a in sorted(self._keys.items())}}
        atomic_write(self.path, json.dumps(doc, indent=1).encode(), mode=0o600)

    @property
    def empty(self) -> bool:
        return not self._users and not self._keys

    # ------------------------------------------------------------ SCRAM users
    def set_password(self, user: str, password: str, mechanisms=SCRAM_MECHANISMS,
                     iterations: int = MIN_ITERATIONS) -> None:
        """Create or replace the user's credentials for `mechanisms` from a password."""
        _check_name(user, "user name")
        if not password:
            raise CredentialError("the password must not be empty")
        creds = {m: scram_credential(m, password, iterations) for m in mechanisms}
        self._users.setdefault(user, {}).update(creds)
        self._persist()

    def set_scram(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        _check_name(user, "user name")
        _check_mechanism(mechanism)
        _check_iterations(credential.iterations)
        self._users.setdefault(user, {})[mechanism] = credential
        self._persist()

    def delete_scram(self, user: str, mechanism: str) -> bool:
        """Remove one mechanism's credential; False when the user had none for it."""
        mechs = self._users.get(user)
        if not mechs or mechs.pop(mechanism, None) is None:
            return False
        if not mechs:
            del self._users[user]
        self._persist()
        return True

    def scram(self, user: str, mechanism: str) -> ScramCredential | None:
        return (self._users.get(user) or {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._users)

    def describe(self, user: str) -> list[tuple[str, int]]:
        """(mechanism, iterations) of the user's credentials (DescribeUserScramCredentials)."""
        return [(m, c.iterations) for m, c in sorted((self._users.get(user) or {}).items())]

    def verify_plain(self, user: str, password: str) -> bool:
        """SASL/PLAIN: does `password` match the user's SCRAM credential (SHA-256 first)?"""
        for mechanism in SCRAM_MECHANISMS:
            cred = self.scram(user, mechanism)
            if cred is not None:
                again = scram_credential(mechanism, password, cred.iterations, cred.salt)
                return hmac.compare_digest(again.stored_key, cred.stored_key)
        return False

    # ------------------------------------------------------------ RocketMQ access keys
    def set_access_key(self, access_key: str, secret: str, user: str | None = None) -> None:
        """Create or replace an access key; its requests act as principal User:<user> (default: the key)."""
        _check_name(access_key, "access key")
        if not secret:
            raise CredentialError("the secret key must not be empty")
        user = user or access_key
        _check_name(user, "user name")
        self._keys[access_key] = AccessKey(secret, user)
        self._persist()

    def delete_access_key(self, access_key: str) -> bool:
        if self._keys.pop(access_key, None) is None:
            return False
        self._persist()
        return True

    def access_key(self, access_key: str) -> AccessKey | None:
        return self._keys.get(access_key)

    def access_keys(self) -> list[str]:
        return sorted(self._keys)

    # ------------------------------------------------------------ bootstrap
    def bootstrap_admin(self, environ=os.environ) -> bool:
        """First start with an empty store: ROCKETGATE_ADMIN_PASSWORD creates user `admin` (SCRAM-SHA-256,
        SCRAM-SHA-512, hence PLAIN) and RocketMQ access key `admin` with that secret. True if it did."""
        password = environ.get(ADMIN_PASSWORD_ENV)
        if not password or not self.empty:
            return False
        self._users[ADMIN_USER] = {m: scram_credential(m, password) for m in SCRAM_MECHANISMS}
        self._keys[ADMIN_USER] = AccessKey(password, ADMIN_USER)
        self._persist()
        log.info("created user %r and RocketMQ access key %r from %s", ADMIN_USER, ADMIN_USER, ADMIN_PASSWORD_ENV)
        return True
