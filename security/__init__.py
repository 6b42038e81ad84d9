"""Authentication and authorization shared by both protocols (docs/security.md).

`security.credentials` (users, SCRAM credentials, RocketMQ access keys), `security.sasl` (server-side
SASL exchanges), `security.acl` (the ACL model), `security.rocketmq_perms` (RocketMQ permissions as
ACLs), `security.audit` (denial log, failure rate limit), `security.remoting_guard` (the remoting
port's checks). `Security` ties them to one config dir; `from_config(config, config_dir)` gives the
gateway's (`app.security`; None when `--authorizer` is not `acl`).
"""
from __future__ import annotations

import os
import time

from security.acl import Authorizer
from security.audit import DenialLog, FailureLimiter
from security.credentials import CredentialStore
from security.remoting_guard import RemotingGuard

RELOAD_CHECK_S = 1.0


def _stamp(path: str):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class Security:
    """The credential store, the authorizer and the remoting guard of one data dir. Files changed by
    another process (the `python -m security` tool) are re-read within a second (`refresh`)."""

    def __init__(self, config_dir: str, super_users=(), allow_everyone_if_no_acl_found: bool = False,
                 environ=os.environ, clock=time.monotonic, inter_broker=None) -> None:
        self.credentials = CredentialStore(config_dir)
        self.credentials.bootstrap_admin(environ)
        self.authorizer = Authorizer(config_dir, super_users, allow_everyone_if_no_acl_found)
        self.denials = DenialLog(clock=clock)
        self.limiter = FailureLimiter(rate=1.0, burst=20, clock=clock)
        self.remoting = RemotingGuard(self.credentials, self.authorizer, self.denials, self.limiter, inter_broker)
        self._clock = clock
        self._checked = clock()
        self._stamps = self._current()

    def _current(self):
        return _stamp(self.credentials.path), _stamp(self.authorizer.path)

    def refresh(self) -> None:
        """Re-read the files if they changed (checked at most once per RELOAD_CHECK_S)."""
        now = self._clock()
        if now - self._checked < RELOAD_CHECK_S:
            return
        self._checked = now
        stamps = self._current()
        if stamps != self._stamps:
            if stamps[0] != self._stamps[0]:
                self.credentials._load()
            if stamps[1] != self._stamps[1]:
                self.authorizer._load()
            self._stamps = stamps

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
                    environ, inter_broker=getattr(config, "inter_broker", None))
