"""Authentication and authorization shared by both protocols (docs/security.md).

`security.credentials` (users, SCRAM credentials, RocketMQ access keys), `security.sasl` (server-side
SASL exchanges), `security.acl` (the ACL model), `security.rocketmq_perms` (RocketMQ permissions as
ACLs), `security.audit` (denial log, failure rate limit), `security.remoting_guard` (the remoting
port's checks). `Security` ties them to one config dir; `from_config(config, config_dir)` gives the
gateway's (`app.security`; None when `--authorizer` is not `acl`). `Authentication` is the part a SASL
listener needs without an authorizer (as Kafka without `authorizer.class.name`: who the client is, never
what it may do); `authentication_for` gives the gateway's (`app.authentication`).
"""
from __future__ import annotations

import os
import time

from security.acl import Authorizer
from security.audit import DenialLog, FailureLimiter
from security.credentials import CredentialStore
from security.remoting_guard import RemotingGuard
from security.tokens import EXPIRY_TIME_MS, MAX_LIFETIME_MS, TokenStore

RELOAD_CHECK_S = 1.0


def _stamp(path: str):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class Authentication:
    """The credential store of one data dir, the denial log and the failure limit: what SASL listeners
    check passwords against. The store file changed by another process (the `python -m security` tool,
    AlterUserScramCredentials) is re-read within a second (`refresh`), or at once (`reread`)."""

    def __init__(self, config_dir: str, environ=os.environ, clock=time.monotonic, tokens=None) -> None:
        self.credentials = CredentialStore(config_dir)
        self.tokens = tokens or TokenStore(config_dir)  # delegation tokens (disabled without a secret key)
        self.credentials.bootstrap_admin(environ)
        self.denials = DenialLog(clock=clock)
        self.limiter = FailureLimiter(rate=1.0, burst=20, clock=clock)
        self._clock = clock
        self._checked = clock()
        self._stamps = self._current()

    def _watched(self) -> list:
        """The stores re-read when their file changes (each has `path` and `_load`)."""
        return [self.credentials, self.tokens]

    def _current(self):
        return tuple(_stamp(store.path) for store in self._watched())

    def refresh(self) -> None:
        """Re-read the files if they changed (checked at most once per RELOAD_CHECK_S)."""
        now = self._clock()
        if now - self._checked < RELOAD_CHECK_S:
            return
        self._checked = now
        self.reread()

    def reread(self) -> None:
        """Re-read the files that changed, now."""
        stamps = self._current()
        for store, old, new in zip(self._watched(), self._stamps, stamps):
            if old != new:
                store._load()
        self._stamps = stamps


class Security(Authentication):
    """Authentication plus the authorizer and the remoting guard (`--authorizer acl`); the ACL file is
    re-read like the credential store."""

    def __init__(self, config_dir: str, super_users=(), allow_everyone_if_no_acl_found: bool = False,
                 environ=os.environ, clock=time.monotonic, inter_broker=None, tokens=None) -> None:
        self.authorizer = Authorizer(config_dir, super_users, allow_everyone_if_no_acl_found)
        super().__init__(config_dir, environ, clock, tokens)
        self.remoting = RemotingGuard(self.credentials, self.authorizer, self.denials, self.limiter, inter_broker)

    def _watched(self) -> list:
        return [self.credentials, self.tokens, self.authorizer]

    def check_remoting(self, req, address: str):
        """None, or the answer refusing this remoting request."""
        self.refresh()
        return self.remoting.check(req, address)


def parse_principals(text: str) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def from_config(config, config_dir: str, environ=os.environ) -> Security | None:
    """The gateway's Security for its GatewayConfig (None when `--authorizer` is not `acl`): the
    credential store (bootstrapped from ROCKETGATE_ADMIN_PASSWORD) and the ACLs of `config_dir`."""
    if getattr(config, "authorizer", "none") != "acl":
        return None
    return Security(config_dir, parse_principals(config.super_users), config.allow_everyone_if_no_acl_found,
                    environ, inter_broker=getattr(config, "inter_broker", None), tokens=token_store(config, config_dir))


def authentication_for(config, security: Security | None, config_dir: str,
                       environ=os.environ) -> Authentication | None:
    """What SASL listeners authenticate against: the authorizer's own store with `--authorizer acl`,
    else the data dir's store when a Kafka listener is SASL (authentication without authorization, as
    Kafka without an authorizer), else None."""
    if security is not None:
        return security
    protocols = [getattr(config, "kafka_security_protocol", "PLAINTEXT")]
    protocols += [lst.protocol for lst in getattr(config, "listeners", ())]
    if not any(p.startswith("SASL_") for p in protocols):
        return None
    return Authentication(config_dir, environ, tokens=token_store(config, config_dir))


def token_store(config, config_dir: str) -> TokenStore:
    """The data dir's delegation tokens with the gateway's secret key and lifetimes (docs/security.md)."""
    secret = None
    path = getattr(config, "delegation_token_secret_key_file", None)
    if path:
        with open(path, "rb") as f:
            secret = f.read().strip() or None
    return TokenStore(config_dir, secret, getattr(config, "delegation_token_max_lifetime_ms", MAX_LIFETIME_MS),
                      getattr(config, "delegation_token_expiry_time_ms", EXPIRY_TIME_MS))
