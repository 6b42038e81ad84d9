"""TLS for the listeners: the standard library's `ssl` through `trio.SSLStream` (no crypto of ours).

`TlsFiles(cert, key, ca)` builds the server's SSLContext from PEM files and rebuilds it when one
of them changes (checked at most once a second, when a connection arrives), so a renewed
certificate is served without a restart; a file that cannot be loaded then keeps the previous
context (logged). With a CA file, clients must present a certificate it signed (mTLS); the
principal is then "User:" + the certificate subject as Kafka writes it (RFC 2253, e.g.
"User:CN=app,O=Example").

Reads return every whole TLS record already received (`WholeReads`), not one record per call:
librdkafka writes a produce request as many small records (one per buffer slice, a few bytes to
1 KiB each), and one trio pass per record left TLS produce about a quarter of plaintext's rate.
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
TLS_RECORD = 16384  # the most plaintext one TLS record carries


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


class WholeReads(ssl.SSLObject):
    """The SSLObject of the gateway's TLS streams (`SSLContext.sslobject_class`): `read(size)`
    decrypts records until it has `size` bytes or meets a partial record or the end (OpenSSL's
    SSL_read stops after one record). An error met after some records is raised by the next read."""

    _failure: ssl.SSLError | None = None

    def read(self, size: int = 1024, buffer=None):
        if buffer is not None:
            return super().read(size, buffer)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        parts: list[bytes] = []
        got = 0
        while got < size:
            try:
                part = super().read(min(size - got, TLS_RECORD))
            except ssl.SSLError as exc:
                if not parts:
                    raise
                if not isinstance(exc, ssl.SSLWantReadError):
                    self._failure = exc
                break
            if not part:  # the peer's close_notify: the next read returns b"" again
                break
            parts.append(part)
            got += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)


def server_context(cert: str, key: str, ca: str | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.sslobject_class = WholeReads
    try:
        ctx.load_cert_chain(cert, key)
        if ca:
            ctx.load_verify_locations(cafile=ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as exc:
        raise TlsError(f"cannot load TLS files ({cert}, {key}{', ' + ca if ca else ''}): {exc}") from None
    return ctx


def client_context(cert: str, key: str, ca: str | None = None) -> ssl.SSLContext:
    """A gateway's context for connecting to another gateway's TLS remoting port: the peer must show
    a certificate for its advertised host signed by `ca` (without one: by a CA in `cert`'s file, or
    that self-signed certificate itself); this gateway shows `cert` in case the peer asks (--tls-ca)."""
    ctx = ssl.create_default_context(cafile=ca or cert)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
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


class _LargeReads:
    """The TCP stream under TLS, read 256 KiB at a time as on plaintext listeners (trio's SSLStream
    asks its transport for 64 KiB): fewer trio passes per produce request."""

    def __init__(self, stream) -> None:
        self._stream = stream

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await self._stream.receive_some(max_bytes or (1 << 18))

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


async def accept(stream: trio.SocketStream, files: TlsFiles) -> trio.SSLStream | None:
    """The TLS stream over an accepted connection, or None when the handshake fails or stalls
    (logged at DEBUG: scanners and plaintext clients are common, not our problem)."""
    tls = trio.SSLStream(_LargeReads(stream), files.context(), server_side=True)
    with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
        try:
            await tls.do_handshake()
            return tls
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("TLS handshake failed: %s", exc.__cause__ or exc)
            return None
    log.debug("TLS handshake timed out")
    return None
