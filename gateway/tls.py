"""TLS for the listeners: the standard library's `ssl` through `trio.SSLStream` (no crypto of ours).

`TlsFiles(cert, key, ca)` builds the server's SSLContext from PEM files and rebuilds it when one
of them changes (checked at most once a second, when a connection arrives), so a renewed
certificate is served without a restart; a file that cannot be loaded then keeps the previous
context (logged). With a CA file, clients must present a certificate it signed (mTLS); the
principal is then "User:" + the certificate subject as Kafka writes it (RFC 2253, e.g.
"User:CN=app,O=Example").
"""
from __future__ import annotations

import logging
import os
import ssl
import time

import trio

log = logging.getLogger("rocketgate.tls")
HANDSHAKE_TIMEOUT_S = 10.0
RELOAD_CHECK_S = 1.0


class TlsError(ValueError):
    """The certificate, key or CA file cannot be loaded (a startup error)."""


def _stamp(path: str | None):
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def server_context(cert: str, key: str, ca: str | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
        if ca:
            ctx.load_verify_locations(cafile=ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as exc:
        raise TlsError(f"cannot load TLS files ({cert}, {key}{', ' + ca if ca else ''}): {exc}") from None
    return ctx


class TlsFiles:
    """The current server SSLContext for --tls-cert/--tls-key[/--tls-ca]."""

    def __init__(self, cert: str, key: str, ca: str | None = None, clock=time.monotonic) -> None:
        self.cert, self.key, self.ca = cert, key, ca
        self._clock = clock
        self._ctx = server_context(cert, key, ca)
        self._stamps = self._current()
        self._checked = clock()

    def _current(self):
        return _stamp(self.cert), _stamp(self.key), _stamp(self.ca)

    def context(self) -> ssl.SSLContext:
        now = self._clock()
        if now - self._checked >= RELOAD_CHECK_S:
            self._checked = now
            stamps = self._current()
            if stamps != self._stamps:
                self._stamps = stamps
                try:
                    self._ctx = server_context(self.cert, self.key, self.ca)
                    log.info("reloaded TLS certificate %s", self.cert)
                except TlsError as exc:
                    log.error("%s; still serving the previous certificate", exc)
        return self._ctx


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out


_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
          "stateOrProvinceName": "ST", "localityName": "L", "streetAddress": "STREET", "domainComponent": "DC",
          "userId": "UID"}


def subject_principal(cert: dict | None) -> str | None:
    """"User:<subject>" for a peer certificate (`SSLObject.getpeercert()`), RFC 2253 order as Java's
    X500Principal.getName() (the last RDN first); None without a certificate."""
    if not cert or not cert.get("subject"):
        return None
    rdns = ["+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn) for rdn in cert["subject"]]
    return "User:" + ",".join(reversed(rdns))


async def accept(stream: trio.SocketStream, files: TlsFiles) -> trio.SSLStream | None:
    """The TLS stream over an accepted connection, or None when the handshake fails or stalls
    (logged at DEBUG: scanners and plaintext clients are common, not our problem)."""
    tls = trio.SSLStream(stream, files.context(), server_side=True)
    with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
        try:
            await tls.do_handshake()
            return tls
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("TLS handshake failed: %s", exc.__cause__ or exc)
            return None
    log.debug("TLS handshake timed out")
    return None
