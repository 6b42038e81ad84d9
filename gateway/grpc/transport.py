"""gRPC over HTTP/2 on one trio stream: `h2` (sans-I/O) does HTTP/2, `codec.grpc` the message
framing. One task reads the socket and feeds h2; each request stream runs its method in its own
task (`Call`) under the connection's nursery, cancelled when the client resets the stream, when
its `grpc-timeout` passes (DEADLINE_EXCEEDED) or when the connection ends.

Flow control: received DATA is acknowledged at once while a call holds few unread messages, and
only as the method reads them otherwise, so a client that sends faster than a method reads is
held back by HTTP/2 windows (bounded memory). Outbound DATA waits for window updates.
"""
from __future__ import annotations

import collections
import logging

import h2.config
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import trio

from codec.grpc import FramingError, MessageReader, StatusCode, frame, parse_timeout, status_trailers
from gateway.grpc.http2 import GrpcH2Connection

log = logging.getLogger("rocketgate.grpc")

MAX_CONCURRENT_STREAMS = 256
MAX_HEADER_LIST_SIZE = 64 * 1024
QUEUED_MESSAGES = 8  # unread request messages per call before its DATA stops being acknowledged
READ_SIZE = 65536
# The header blocks of every successful call, as bytes (h2 takes them as they are; HPACK output
# of these is cached by gateway.grpc.http2.CachingEncoder).
RESPONSE_HEADERS = ((b":status", b"200"), (b"content-type", b"application/grpc"))
OK_TRAILERS = ((b"grpc-status", b"0"),)


class CallEnded(Exception):
    """The method ends the call with this gRPC status (not a bug: a bad request, a deadline)."""

    def __init__(self, status: StatusCode, message: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Call:
    """One request stream as its method sees it: `receive()` the next request message (None at
    the end of the client's side), `send(payload)` one response message; `metadata` holds the
    request headers (e.g. x-mq-client-id), `deadline` the trio time the call must end by."""

    def __init__(self, conn: "GrpcConnection", stream_id: int, path: str, metadata: dict, deadline: float) -> None:
        self.conn, self.stream_id, self.path = conn, stream_id, path
        self.metadata, self.deadline = metadata, deadline
        self.reader = MessageReader(conn.max_message_size)
        self.messages: collections.deque = collections.deque()  # (payload, flow-controlled bytes)
        self.owed = 0  # received bytes not yet acknowledged to the peer
        self.ended = False  # the client half-closed (END_STREAM) or reset the stream
        self.failed: FramingError | None = None
        self.arrived: trio.Event | None = None  # made when the method waits for a message
        self.window: trio.Event | None = None  # made when a send waits for a window update
        self.headers_sent = False
        # Unary and server-streaming methods leave their responses to the flush that sends the
        # trailers: one write per call (two small writes would meet Nagle and delayed ACKs).
        self.defer_flush = False
        self.closed = False  # trailers sent or stream reset
        self.scope = trio.CancelScope(deadline=deadline)  # cancelled by a reset, or at the deadline

    @property
    def client_id(self) -> str:
        return self.metadata.get("x-mq-client-id", "")

    def _wake(self) -> None:
        if self.arrived is not None:
            self.arrived.set()

    async def receive(self) -> bytes | None:
        while not self.messages:
            if self.failed is not None:
                raise CallEnded(self.failed.status, str(self.failed))
            if self.ended:
                if self.reader.pending:
                    raise CallEnded(StatusCode.INTERNAL, "the stream ended inside a gRPC message")
                return None
            self.arrived = trio.Event()
            await self.arrived.wait()
        payload, size = self.messages.popleft()
        self.conn.acknowledge(self, size)
        return payload

    async def receive_one(self) -> bytes:
        """The single request message of a unary or server-streaming call."""
        payload = await self.receive()
        if payload is None:
            raise CallEnded(StatusCode.INTERNAL, "the request carried no message")
        return payload

    async def send(self, payload: bytes) -> None:
        await self.conn.send_message(self, frame(payload))

    async def send_many(self, payloads: list[bytes]) -> None:
        """Several response messages in as few DATA frames as the peer's frame size allows (a
        ReceiveMessage answer: status, up to 32 messages, delivery timestamp)."""
        if payloads:
            await self.conn.send_message(self, b"".join([frame(p) for p in payloads]))


class GrpcConnection:
    """Serves one HTTP/2 connection; `methods` maps "/package.Service/Method" to an async
    `handler(call)` returning None (the status is OK) or raising CallEnded."""

    def __init__(self, stream, methods: dict, *, max_message_size: int, socket=None) -> None:
        self.stream = stream
        self.socket = socket if socket is not None else getattr(stream, "socket", None)  # the TCP socket
        self.methods = methods
        self.max_message_size = max_message_size
        # Inbound headers are validated (a malformed request is the peer's); outbound ones are the
        # few fixed ones this module builds, so h2 need not check and normalise them on every call.
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8", validate_inbound_headers=True,
                                           validate_outbound_headers=False, normalize_outbound_headers=False)
        self.h2 = GrpcH2Connection(config)
        self.calls: dict[int, Call] = {}
        self._send_lock = trio.Lock()
        self._flush_wanted = trio.Event()
        self.closed = False
        self.services: dict = {}  # name -> per-connection background helper (see `service`)

    async def serve(self) -> None:
        h = self.h2
        h.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_SIZE})
        h.initiate_connection()
        await self.flush()
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                nursery.start_soon(self._writer)
                while not self.closed:
                    try:
                        data = await self.stream.receive_some(READ_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                    if not data:
                        break
                    try:
                        events = h.receive_data(data)
                    except h2.exceptions.ProtocolError as exc:
                        log.info("closing a gRPC connection: HTTP/2 protocol error: %s", exc)
                        await self.flush()  # h2 queued a GOAWAY
                        break
                    for event in events:
                        self._on_event(event)
                    await self.flush()
                nursery.cancel_scope.cancel()
        finally:
            self.closed = True

    def _on_event(self, event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._start_call(event.stream_id, event.headers, event.stream_ended is not None)
        elif isinstance(event, h2.events.DataReceived):
            self._on_data(event)
        elif isinstance(event, h2.events.StreamEnded):
            call = self.calls.get(event.stream_id)
            if call is not None:
                call.ended = True
                call._wake()
        elif isinstance(event, h2.events.StreamReset):
            call = self.calls.get(event.stream_id)
            if call is not None:
                call.ended = call.closed = True
                call.scope.cancel()
        elif isinstance(event, h2.events.WindowUpdated):
            targets = self.calls.values() if event.stream_id == 0 else [self.calls.get(event.stream_id)]
            for call in targets:
                if call is not None and call.window is not None:
                    call.window.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.closed = True

    def _start_call(self, stream_id: int, headers, ended: bool) -> None:
        meta = dict(headers)
        path = meta.get(":path", "")
        deadline = float("inf")
        if "grpc-timeout" in meta:
            try:
                deadline = trio.current_time() + parse_timeout(meta["grpc-timeout"])
            except ValueError:
                self._trailers_only(stream_id, StatusCode.INTERNAL, f"bad grpc-timeout {meta['grpc-timeout']!r}")
                return
        if meta.get(":method") != "POST" or not meta.get("content-type", "").startswith("application/grpc"):
            self._refuse_http(stream_id)
            return
        handler = self.methods.get(path)
        if handler is None:
            self._trailers_only(stream_id, StatusCode.UNIMPLEMENTED, f"unknown method {path}")
            return
        log.debug("gRPC call %s on stream %d", path, stream_id)
        call = Call(self, stream_id, path, meta, deadline)
        call.ended = ended
        self.calls[stream_id] = call
        self.nursery.start_soon(self._run_call, call, handler)

    def _refuse_http(self, stream_id: int) -> None:
        self.h2.send_headers(stream_id, [(":status", "415"), ("content-type", "text/plain")], end_stream=True)

    def _trailers_only(self, stream_id: int, status: StatusCode, message: str) -> None:
        self.h2.send_headers(stream_id, [*RESPONSE_HEADERS, *_trailers(status, message)], end_stream=True)

    def _on_data(self, event) -> None:
        call = self.calls.get(event.stream_id)
        size = event.flow_controlled_length
        if call is None or call.closed:
            if size:
                self.h2.acknowledge_received_data(size, event.stream_id) if call else \
                    self.h2.increment_flow_control_window(size)
            return
        try:
            payloads = call.reader.feed(event.data) if call.failed is None else []
        except FramingError as exc:
            call.failed = exc
            payloads = []
        for i, payload in enumerate(payloads):
            call.messages.append((payload, size if i == len(payloads) - 1 else 0))
        if not payloads:
            self._ack(call, size)  # part of a message (bounded by the reader's cap) or a refused one
        elif len(call.messages) <= QUEUED_MESSAGES:
            call.messages[-1] = (call.messages[-1][0], 0)
            self._ack(call, size)
        call._wake()

    def _ack(self, call: Call, size: int) -> None:
        if size and not call.closed:
            try:
                self.h2.acknowledge_received_data(size, call.stream_id)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                self.h2.increment_flow_control_window(size)

    def acknowledge(self, call: Call, size: int) -> None:
        """A method read a message whose DATA was held back: let the client send more."""
        if size:
            self._ack(call, size)
            self.want_flush()

    async def _run_call(self, call: Call, handler) -> None:
        status, message = StatusCode.OK, ""
        with call.scope:
            try:
                await handler(call)
            except CallEnded as exc:
                status, message = exc.status, exc.message
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._lost()
                return
            except Exception as exc:  # a bug in one method must not end the connection
                log.exception("gRPC method %s failed", call.path)
                status, message = StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}"
        self.calls.pop(call.stream_id, None)
        if call.scope.cancelled_caught:  # a reset (the call is closed then) or the deadline
            status, message = StatusCode.DEADLINE_EXCEEDED, "deadline exceeded"
        self._finish(call, status, message)
        call.closed = True

    def _finish(self, call: Call, status: StatusCode, message: str) -> None:
        """Queue the trailers (the writer sends them with whatever else this turn of the event
        loop queued: one socket write for many calls under load)."""
        if call.closed or self.closed:
            return
        try:
            trailers = _trailers(status, message)
            if call.headers_sent and trailers is OK_TRAILERS:
                self.h2.send_fixed_headers(call.stream_id, OK_TRAILERS, end_stream=True)
            elif call.headers_sent:
                self.h2.send_headers(call.stream_id, trailers, end_stream=True)
            else:
                self._trailers_only(call.stream_id, status, message)
            call.closed = True
            if not call.ended:  # the client still sends: it may stop now
                self.h2.reset_stream(call.stream_id, error_code=h2.errors.ErrorCodes.NO_ERROR)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            call.closed = True
        self.want_flush()

    async def send_message(self, call: Call, data: bytes) -> None:
        h = self.h2
        if call.closed or self.closed:
            raise CallEnded(StatusCode.CANCELLED, "the stream is closed")
        if not call.headers_sent:
            h.send_fixed_headers(call.stream_id, RESPONSE_HEADERS)
            call.headers_sent = True
        view = memoryview(data)
        while view:
            if call.closed or self.closed:
                raise CallEnded(StatusCode.CANCELLED, "the stream is closed")
            window = min(h.local_flow_control_window(call.stream_id), h.max_outbound_frame_size)
            if window <= 0:
                call.window = trio.Event()
                await self.flush()
                await call.window.wait()
                continue
            h.send_data(call.stream_id, bytes(view[:window]))
            view = view[window:]
        if not call.defer_flush:
            await self.flush()

    def want_flush(self) -> None:
        self._flush_wanted.set()

    async def _writer(self) -> None:
        """Sends what h2 queued, once per turn of the event loop in which anything asked to."""
        while True:
            await self._flush_wanted.wait()
            self._flush_wanted = trio.Event()
            await self.flush()

    async def flush(self) -> None:
        """Send what h2 queued. Without a write under way this yields to the event loop only to
        write (most reads queue nothing to send, and each yield is a turn of the scheduler)."""
        lock = self._send_lock
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            data = self.h2.data_to_send()
            if data and not self.closed:
                try:
                    await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._lost()
        finally:
            lock.release()

    def service(self, name: str, factory):
        """A per-connection helper `factory()` whose async `run()` goes on in the background until
        the connection ends; made and started on the first call with this name."""
        found = self.services.get(name)
        if found is None:
            found = self.services[name] = factory()
            self.nursery.start_soon(found.run)
        return found

    def _lost(self) -> None:
        """The peer is gone: end the connection (every call with it)."""
        self.closed = True
        nursery = getattr(self, "nursery", None)
        if nursery is not None:
            nursery.cancel_scope.cancel()



def _trailers(status: StatusCode, message: str):
    return OK_TRAILERS if status == StatusCode.OK and not message else status_trailers(status, message)
