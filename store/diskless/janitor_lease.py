"""Which gateway of a bucket runs the diskless janitor (docs/diskless.md, "One janitor per bucket").

Terms are objects `diskless/janitor/<term>` created with `if_absent`, so the store decides who takes
a term; the newest term's writer is the janitor and rewrites its object at every pass (a heartbeat).
Another gateway takes term + 1 once it has seen the newest term's object unchanged for `ttl_s` of its
own clock (no clock comparison between gateways). A paused holder that wakes sees the newer term and
stops. Exclusivity is only an economy: janitor passes of two gateways together are safe (janitor.py),
so a moment with two janitors costs repeated work, never data. Blocking: call from a worker thread."""
from __future__ import annotations

import json
import time
import uuid

from store.objstore.api import NotFound, ObjectStore, PreconditionFailed

PREFIX = "diskless/janitor/"
TERM_DIGITS = 12
KEEP_TERMS = 3  # older term objects are deleted by the holder


def term_key(term: int, prefix: str = PREFIX) -> str:
    return f"{prefix}{term:0{TERM_DIGITS}d}"


class JanitorLease:
    """The lease under `prefix` (the janitor's by default; gateway.diskless_pop_owner holds another
    under its own prefix); `info` goes into the holder's object for the others to read (`holder`)."""

    def __init__(self, store: ObjectStore, ttl_s: float, owner: str = "", prefix: str = PREFIX,
                 info: dict | None = None) -> None:
        self.store = store
        self.prefix = prefix
        self.info = dict(info or {})
        self.ttl_s = ttl_s
        self.owner = f"{owner}/{uuid.uuid4().hex}"
        self.term = -1  # the term this gateway holds, -1 when none
        self._beats = 0
        self._seen: tuple[int, bytes] | None = None  # (newest term, its body) as first seen
        self._seen_at = 0.0

    def hold(self) -> bool:
        """Whether this gateway is the bucket's janitor for the coming pass (renewing or taking the
        lease as needed)."""
        n = len(self.prefix)
        terms = sorted(int(i.key[n:]) for i in self.store.list(self.prefix) if i.key[n:].isdigit())
        newest = terms[-1] if terms else -1
        if newest >= 0 and newest == self.term:
            self._beat()
            for old in terms[:-KEEP_TERMS]:
                self.store.delete(term_key(old, self.prefix))
            return True
        self.term = -1
        if newest >= 0:
            try:
                body = self.store.get(term_key(newest, self.prefix))
            except NotFound:
                return False  # deleted as we looked: look again next pass
            now = time.monotonic()
            if self._seen != (newest, body):
                self._seen, self._seen_at = (newest, body), now
                return False
            if now - self._seen_at < self.ttl_s:
                return False
        return self._take(newest + 1)

    def _take(self, term: int) -> bool:
        try:
            self.store.put(term_key(term, self.prefix), self._body(), if_absent=True)
        except PreconditionFailed:  # another gateway took it first: remember whose it is
            try:
                self._seen, self._seen_at = (term, self.store.get(term_key(term, self.prefix))), time.monotonic()
            except NotFound:
                pass
            return False
        self.term = term
        return True

    def holder(self) -> dict:
        """The newest term's object as last read by a gateway not holding it ({} when unknown)."""
        if self._seen is None:
            return {}
        try:
            found = json.loads(self._seen[1])
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def _beat(self) -> None:
        self.store.put(term_key(self.term, self.prefix), self._body())

    def _body(self) -> bytes:
        self._beats += 1
        return json.dumps({**self.info, "owner": self.owner, "beat": self._beats}).encode()
