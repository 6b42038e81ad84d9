"""Kafka delegation tokens (KIP-48): what Kafka's DelegationTokenManager keeps, on the user store's dir.

A token is an id (a random Kafka Uuid string) and its HMAC-SHA512 under the cluster's secret key
(`--delegation-token-secret-key-file`, Kafka's `delegation.token.secret.key`), owned by a principal,
renewable by the owner, the requester and the named renewers until its max lifetime. A client logs in
with SCRAM as user <token id>, password base64(hmac), and the extension tokenauth=true; it then acts as
the owner (`security.sasl`). Kept in `<data>/config/delegation_tokens.json` (mode 0600, atomically
written; the HMAC is the token's password, so the file is as secret as credentials.json) and so kept
across restarts. Tokens expired an hour ago are dropped (Kafka's expiry check interval).
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac as hmac_lib
import json
import os
import uuid

from security.credentials import MIN_ITERATIONS, SCRAM_MECHANISMS, ScramCredential, scram_credential
from store.config import atomic_write, read_json

FILE = "delegation_tokens.json"
MAX_LIFETIME_MS = 7 * 24 * 3600 * 1000  # Kafka's delegation.token.max.lifetime.ms
EXPIRY_TIME_MS = 24 * 3600 * 1000  # Kafka's delegation.token.expiry.time.ms (the renew period)
PURGE_AFTER_MS = 3600 * 1000  # Kafka's delegation.token.expiry.check.interval.ms

NONE = 0
TOKEN_NOT_FOUND = 62
TOKEN_OWNER_MISMATCH = 63
TOKEN_EXPIRED = 66


@dataclasses.dataclass
class Token:
    token_id: str
    hmac: bytes
    owner: str  # "User:alice"
    requester: str
    renewers: list[str]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    def to_json(self) -> dict:
        doc = dataclasses.asdict(self)
        doc["hmac"] = base64.b64encode(self.hmac).decode("ascii")
        return doc

    @classmethod
    def from_json(cls, doc: dict) -> "Token":
        return cls(str(doc["token_id"]), base64.b64decode(doc["hmac"]), str(doc["owner"]), str(doc["requester"]),
                   [str(r) for r in doc["renewers"]], int(doc["issue_ms"]), int(doc["expiry_ms"]), int(doc["max_ms"]))

    def owner_or_renewer(self, principal: str) -> bool:
        """Kafka's TokenInformation.ownerOrRenewer: may renew, expire and describe the token."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


def kafka_uuid() -> str:
    """Kafka's Uuid.toString: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


class TokenStore:
    """The tokens of one data dir. `secret` None: tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED)."""

    def __init__(self, config_dir: str, secret: bytes | None = None, max_lifetime_ms: int = MAX_LIFETIME_MS,
                 expiry_time_ms: int = EXPIRY_TIME_MS) -> None:
        self.path = os.path.join(config_dir, FILE)
        self.secret, self.max_lifetime_ms, self.expiry_time_ms = secret, max_lifetime_ms, expiry_time_ms
        self._tokens: dict[str, Token] = {}
        self._scram: dict[tuple[str, str], ScramCredential] = {}  # (token id, mechanism), made once
        self._load()

    @property
    def enabled(self) -> bool:
        return bool(self.secret)

    def _load(self) -> None:
        doc = read_json(self.path) or {}
        self._tokens = {t.token_id: t for t in map(Token.from_json, doc.get("tokens") or [])}

    def _persist(self) -> None:
        doc = {"version": 1, "tokens": [t.to_json() for t in self._tokens.values()]}
        atomic_write(self.path, json.dumps(doc, indent=1).encode(), mode=0o600)

    def _purge(self, now_ms: int) -> None:
        for token in [t for t in self._tokens.values() if t.expiry_ms + PURGE_AFTER_MS < now_ms]:
            del self._tokens[token.token_id]

    def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int, now_ms: int) -> Token:
        """A new token (Kafka: a max lifetime <= 0 asks for the configured one, a longer one is cut to it)."""
        self._purge(now_ms)
        lifetime = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(max_lifetime_ms, self.max_lifetime_ms)
        token_id = kafka_uuid()
        mac = hmac_lib.new(self.secret, token_id.encode("utf-8"), hashlib.sha512).digest()
        max_ms = now_ms + lifetime
        token = Token(token_id, mac, owner, requester, list(renewers), now_ms, min(max_ms, now_ms + self.expiry_time_ms),
                      max_ms)
        self._tokens[token_id] = token
        self._persist()
        return token

    def _by_hmac(self, mac: bytes) -> Token | None:
        return next((t for t in self._tokens.values() if hmac_lib.compare_digest(t.hmac, mac)), None)

    def renew(self, mac: bytes, principal: str, period_ms: int, now_ms: int) -> tuple[int, int]:
        """(error code, new expiry): as Kafka's DelegationTokenControlManager.renewDelegationToken."""
        token = self._by_hmac(mac)
        if token is None:
            return TOKEN_NOT_FOUND, 0
        if token.expired(now_ms):
            return TOKEN_EXPIRED, 0
        if not token.owner_or_renewer(principal):
            return TOKEN_OWNER_MISMATCH, 0
        period = self.expiry_time_ms if period_ms < 0 else period_ms
        token.expiry_ms = min(token.max_ms, now_ms + period)
        self._persist()
        return NONE, token.expiry_ms

    def expire(self, mac: bytes, principal: str, period_ms: int, now_ms: int) -> tuple[int, int]:
        """(error code, expiry): a negative period removes the token now."""
        token = self._by_hmac(mac)
        if token is None:
            return TOKEN_NOT_FOUND, 0
        if not token.owner_or_renewer(principal):
            return TOKEN_OWNER_MISMATCH, 0
        if period_ms < 0:
            del self._tokens[token.token_id]
            self._persist()
            return NONE, now_ms
        if token.expired(now_ms):
            return TOKEN_EXPIRED, 0
        token.expiry_ms = min(token.max_ms, now_ms + period_ms)
        self._persist()
        return NONE, token.expiry_ms

    def tokens(self) -> list[Token]:
        return list(self._tokens.values())

    def login(self, token_id: str, mechanism: str, now_ms: int) -> tuple[ScramCredential, str] | None:
        """(SCRAM credential, owner) of a live token for a tokenauth login, else None."""
        token = self._tokens.get(token_id)
        if token is None or not self.enabled or token.expired(now_ms) or mechanism not in SCRAM_MECHANISMS:
            return None
        key = (token_id, mechanism)
        if key not in self._scram:
            password = base64.b64encode(token.hmac).decode("ascii")
            self._scram[key] = scram_credential(mechanism, password, MIN_ITERATIONS)
        return self._scram[key], token.owner
