"""One Kafka client connection: a trio loop around the sans-I/O `codec.kafka.connection`.

Requests are handled one after the other (like a Kafka broker's muted channel), which keeps the
order pipelined idempotent producers rely on. One exception, pipelining: a handler may call
`conn.read_on()` once the order of its effects is settled (a diskless Produce whose batches joined the
WAL buffer); the next request is then read and handled while it waits, and the answers still go out
in request order (one task sends them, as Kafka requires). What the client gets wrong (a frame size outside
[10, max_frame_bytes], a request that does not decode) closes this connection with one warning,
rate-limited per peer address (`MALFORMED_LOG`);
an exception from a handler is our bug: it is logged with its traceback and closes this
connection only.

On a SASL listener only ApiVersions, SaslHandshake and SaslAuthenticate are served until the client
has authenticated; anything else, and a failed handshake or authentication, closes the connection
(as Kafka's broker does). `principal` is the SASL user, the client certificate's subject (mTLS),
else User:ANONYMOUS.
"""
from __future__ import annotations

import logging
import math
import os
import time

import trio

from codec.kafka.apis import BY_KEY
from codec.kafka.connection import CLOSED, NEED_DATA, Request, SaslToken, ServerConnection
from codec.kafka.schema import DecodeError
import gateway.kafka.access as access
import gateway.kafka.handlers as handlers
import gateway.kafka.quotas as quotas
from gateway.ops.stats import stats_of
from gateway.sendfile import FileRange, close_frame, send_parts
from gateway.tls import subject_principal
from security.audit import RateLimitedLog
from security.sasl import SaslSession

log = logging.getLogger("rocketgate.kafka")
RECV_CHUNK = 1 << 18
ANONYMOUS = "User:ANONYMOUS"
FAILED_AUTHENTICATION_DELAY_S = 0.1
PRE_AUTH_APIS = frozenset((17, 18, 36))  # SaslHandshake, ApiVersions, SaslAuthenticate
_API_NAMES = {key: api.name for key, api in BY_KEY.items()}  # metric labels
UNKNOWN_API = "unknown"
# What a client gets wrong is logged once a minute per peer address, with the count of the rest (a
# fuzzer or a broken client sends many); the server logs the last counts when it stops.
MALFORMED_LOG = RateLimitedLog(log)


class Connection:
    """Per-connection context handed to the handlers."""

    def __init__(self, stream, app) -> None:
        self.stream = stream
        self.app = app
        self.stats = stats_of(app)
        sock = stream.socket
        self.local_port = sock.getsockname()[1]
        try:
            self.peer_host = sock.getpeername()[0]
        except OSError:
            self.peer_host = ""
        self.client_id = ""
        self.listener = getattr(stream, "listener", None)  # gateway.listeners.Listener (None in unit tests)
        self.tls = bool(self.listener and self.listener.tls)
        peer_cert = stream.getpeercert() if self.tls else None
        self.principal = subject_principal(peer_cert) or ANONYMOUS
        self.sasl = None
        self.unframed_sasl = False  # a SaslHandshake v0 succeeded: the tokens come bare (no SaslAuthenticate)
        self.on_close: dict = {}  # key -> fn(), run when the connection ends (share sessions)
        self.request_bytes = 0  # size of the request being handled (Produce quotas charge it)
        self.mute_s = 0.0  # set by a handler: not read for this long after its answer (client quotas)
        self.read_on = None  # set per request: the handler lets the next request be read (pipelining)
        if self.listener is not None and self.listener.sasl:
            sec = app.authentication  # with or without an authorizer (docs/security.md)
            self.sasl = SaslSession(sec.credentials, self.peer_host, limiter=sec.limiter, denials=sec.denials,
                                    tokens=sec.tokens)

    def admitted(self, api_key: int) -> bool:
        """May this request be served now (SASL: only the handshake before authentication)?"""
        return self.sasl is None or self.sasl.authenticated or api_key in PRE_AUTH_APIS

    def authenticated(self, principal: str) -> None:
        self.principal = principal

    @property
    def may_manage_tokens(self) -> bool:
        """Kafka's allowTokenRequests: a SASL listener, and not logged in with a delegation token."""
        return self.sasl is not None and not self.sasl.token_authenticated


class _Job:
    """One request on its way: handled in its own task, answered by the connection's sender."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.began = time.perf_counter()
        self.read_on = trio.Event()  # the handler ended, or settled its order and let reading go on
        self.pipelined = False  # read_on came before the end
        self.handled = trio.Event()
        self.frame = None
        self.keep_open = True
        self.mute_s = 0.0
        self.answered = trio.Event()


async def handle_connection(stream, app) -> None:
    conn = Connection(stream, app)
    wire = ServerConnection(app.config.max_frame_bytes)
    stats = conn.stats
    stats.connection_opened("kafka")
    try:
        async with trio.open_nursery() as nursery:
            jobs_in, jobs_out = trio.open_memory_channel(math.inf)
            nursery.start_soon(_answer_in_order, conn, wire, jobs_out, nursery.cancel_scope)
            await _read_requests(conn, wire, nursery, jobs_in)
            nursery.cancel_scope.cancel()
    finally:
        stats.connections["kafka"] -= 1
        for fn in conn.on_close.values():
            fn()


async def _read_requests(conn: Connection, wire: ServerConnection, nursery, jobs_in) -> None:
    """Read and start requests until the connection must close; a request is answered before the
    next is read unless its handler called `read_on` (pipelining)."""
    stream, stats = conn.stream, conn.stats
    while True:
        try:
            event = wire.next_event()
        except DecodeError as exc:
            MALFORMED_LOG.warning((conn.peer_host,), "closing kafka connection from %s: %s", conn.peer_host, exc)
            return
        if event is NEED_DATA:
            data = await stream.receive_some(RECV_CHUNK)
            stats.bytes_in["kafka"] += len(data)
            wire.receive_data(data)
        elif event is CLOSED:
            return
        elif type(event) is SaslToken:
            if not await _authenticate_unframed(conn, wire, event.token):
                return
        else:
            if not _admitted(conn, event):
                return
            job = _Job(event)
            jobs_in.send_nowait(job)  # the sender answers jobs in this order
            conn.read_on = lambda job=job: _release(conn, job)
            nursery.start_soon(_handle, conn, job)
            await job.read_on.wait()
            if not job.pipelined:
                await job.answered.wait()
                if not job.keep_open:
                    return
        wire.raw_tokens = conn.unframed_sasl and not conn.sasl.authenticated


def _release(conn: Connection, job: _Job) -> None:
    """`conn.read_on` of `job`: let the next request be read now, unless the answer mutes the
    connection (a quota throttle: nothing is read until it is over)."""
    if job.read_on.is_set() or conn.mute_s:
        return
    job.pipelined = True
    job.read_on.set()


def _admitted(conn: Connection, request: Request) -> bool:
    header = request.header
    conn.client_id = header.client_id or ""
    if not conn.admitted(header.api_key):
        MALFORMED_LOG.warning((conn.peer_host,), "closing kafka connection from %s: api %d before SASL "
                              "authentication", conn.peer_host, header.api_key)
        return False
    return True


async def _authenticate_unframed(conn: Connection, wire: ServerConnection, token: bytes) -> bool:
    """One bare SASL token after a SaslHandshake v0, answered bare; False (close) when it fails, as
    Kafka closes such a connection (it has no frame to carry an error)."""
    error, message, out = conn.sasl.authenticate(token)
    if error:
        MALFORMED_LOG.warning((conn.peer_host,), "closing kafka connection from %s: SASL (handshake v0) "
                              "failed: %s", conn.peer_host, message)
        await trio.sleep(FAILED_AUTHENTICATION_DELAY_S)
        return False
    if conn.sasl.authenticated:
        conn.authenticated(conn.sasl.principal)
    frame = wire.token_frame(bytes(out or b""))
    await send_parts(conn.stream, [frame])
    conn.stats.bytes_out["kafka"] += len(frame)
    return True


async def _handle(conn: Connection, job: _Job) -> None:
    """Run the request's handler; its frame (None: no answer) and whether the connection stays open."""
    header, stats = job.request.header, conn.stats
    api = _API_NAMES.get(header.api_key, UNKNOWN_API)  # a fuzzer's api keys must not grow the label set
    stats.principal_request("kafka", conn.principal)
    conn.request_bytes = len(job.request.payload)
    try:
        job.frame = await handlers.handle(conn, header, job.request.payload)
    except access.Refused as exc:
        job.keep_open = False
        log.warning("closing kafka connection from %s (%s): %s", conn.peer_host, conn.principal, exc)
    except DecodeError as exc:
        job.keep_open = False
        MALFORMED_LOG.warning((conn.peer_host,), "closing kafka connection from %s: malformed %s v%d request: %s",
                              conn.peer_host, header.api_key, header.api_version, exc)
    except Exception:  # a handler bug: this connection only, the server keeps serving
        job.keep_open = False
        log.exception("closing kafka connection from %s: %s v%d request failed", conn.peer_host,
                      header.api_key, header.api_version)
    if not job.keep_open:
        stats.requests.observe("kafka", api, time.perf_counter() - job.began, error=True)
    if not job.pipelined:  # a pipelined job's mute was taken when it let reading go on (none)
        job.mute_s, conn.mute_s = conn.mute_s, 0.0
    job.handled.set()
    job.read_on.set()


async def _answer_in_order(conn: Connection, wire: ServerConnection, jobs_out, scope) -> None:
    """The connection's sender: each job's answer once it is handled, in request order; closes the
    connection (cancels `scope`) after a job that must close it."""
    async for job in jobs_out:
        await job.handled.wait()
        job.keep_open = job.keep_open and await _send_answer(conn, wire, job)
        if jobs_out.statistics().current_buffer_used and hasattr(conn.stream, "unanswered"):
            conn.stream.unanswered = True  # later requests still wait: not idle (graceful shutdown)
        job.answered.set()
        if not job.keep_open:
            scope.cancel()
            return


async def _send_answer(conn: Connection, wire: ServerConnection, job: _Job) -> bool:
    """Send one handled job's answer; False when the connection must close."""
    if not job.keep_open:
        return False
    header, stats, frame, mute_s = job.request.header, conn.stats, job.frame, job.mute_s
    api = _API_NAMES.get(header.api_key, UNKNOWN_API)
    if frame is None:  # acks=0 produce: no response; unknown API: close like Kafka does
        wire.send_nothing()
        known = header.api_key in handlers.HANDLERS or header.api_key == 18
        stats.requests.observe("kafka", api, time.perf_counter() - job.began, error=not known)
        if known and mute_s:  # a throttled acks=0 produce: muted all the same
            await trio.sleep(mute_s)
        return known
    if mute_s and not quotas.client_throttles(header.api_key, header.api_version):
        await trio.sleep(mute_s)  # an older client does not wait itself: the answer is held back
        mute_s = 0.0
    try:
        parts = wire.send(frame)
        await send_parts(conn.stream, _read_ranges(parts) if conn.tls else parts)
    finally:
        close_frame(frame)
    stats.bytes_out["kafka"] += sum(p.count if type(p) is FileRange else len(p) for p in parts)
    stats.requests.observe("kafka", api, time.perf_counter() - job.began)
    if mute_s:  # KIP-219: throttled, the connection is not read until the throttle time is over
        await trio.sleep(mute_s)
    if conn.sasl is not None and conn.sasl.failed:
        # Kafka's connection.failed.authentication.delay.ms: the client reads the answer first, and
        # a password guesser waits a little per attempt
        await trio.sleep(FAILED_AUTHENTICATION_DELAY_S)
        return False
    return True


def _read_ranges(parts):
    """The parts with each FileRange read into memory: sendfile would bypass TLS."""
    for part in parts:
        if type(part) is FileRange:
            yield os.pread(part.fd, part.count, part.offset)
        else:
            yield part
