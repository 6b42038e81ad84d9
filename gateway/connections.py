"""The connections the gateway serves (docs/robustness.md, "Connections"): the stream each handler
reads from (`Connection`: busy or idle, where its bytes stand among frames), the set of them
(`Connections`), and the budget of request bytes buffered by all of them together (`RequestBytes`)."""
from __future__ import annotations

import logging
import struct

import trio

log = logging.getLogger("rocketgate")
_SIZE = struct.Struct(">i")  # the frame size prefix of both protocols
PAUSE_LOG_PERIOD = 60.0  # at most one "pausing reads" line per this many seconds


class RequestBytes:
    """Bytes of requests read from clients and not yet handled (partly received frames, and whole
    frames waiting for their handler), over every connection of both ports, against a cap
    (`--max-buffered-request-bytes`). At the cap a connection stops reading before its next read,
    so the bytes stay in the kernel and TCP flow control holds the client back, until handled
    requests free room. Connections in the middle of a frame then read one at a time, the one that
    started waiting first (the `leader`) until its frame is whole, so they cannot all wait on each
    other. Reads already waiting for data when the cap is reached may still bring one read each."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self.peak = 0
        self.pauses = 0  # reads that had to wait for room
        self.leader: Connection | None = None
        self._lot = trio.lowlevel.ParkingLot()
        self._queue: list[Connection] = []  # connections in wait(), in the order they came
        self._logged_at = -PAUSE_LOG_PERIOD

    def change(self, delta: int) -> None:
        self.total += delta
        if self.total > self.peak:
            self.peak = self.total
        if delta < 0 and self._lot and self.total < self.cap:
            self._lot.unpark_all()

    def may_read(self, conn: Connection) -> bool:
        if self.total < self.cap or self.leader is conn:
            return True
        if self.leader is None and conn.frames.partial_bytes:
            first = next((c for c in self._queue if c.frames.partial_bytes), conn)
            if first is conn:  # mid-frame and first in line: finish this one frame even over the cap
                self.leader = conn
                return True
        return False

    def frame_done(self, conn: Connection) -> None:
        """`conn` ended its frame or closed: if it was leading, the next waiter may lead."""
        if self.leader is conn:
            self.leader = None
            if self._lot:
                self._lot.unpark_all()

    async def wait(self, conn: Connection) -> None:
        """Until `conn` may read."""
        self.pauses += 1
        now = trio.current_time()
        if now - self._logged_at >= PAUSE_LOG_PERIOD:
            self._logged_at = now
            log.warning("%d request bytes buffered (--max-buffered-request-bytes %d): pausing reads",
                        self.total, self.cap)
        self._queue.append(conn)
        try:
            while not self.may_read(conn):
                await self._lot.park()
        finally:
            self._queue.remove(conn)


class Connections:
    """The open connections and their shared request-byte budget; `wait_idle()` returns once
    none is busy with a request."""

    def __init__(self, max_buffered_request_bytes: int) -> None:
        self.open: set[Connection] = set()
        self.refused = 0  # connections closed at once since the cap was reached
        self.request_bytes = RequestBytes(max_buffered_request_bytes)
        self._idle: trio.Event | None = None  # set up by wait_idle

    def changed(self) -> None:
        if self._idle is not None and all(c.idle() for c in self.open):
            self._idle.set()

    async def wait_idle(self) -> None:
        self._idle = trio.Event()
        self.changed()
        await self._idle.wait()

    def closed(self, conn: Connection) -> None:
        self.open.discard(conn)
        conn.release()
        self.changed()


class Connection:
    """The stream a connection handler gets: the trio SocketStream, marked busy from the moment
    request bytes arrive until an answer is sent and the handler waits for the next request
    (a request without an answer keeps it busy until the shutdown deadline). Every read is charged
    to the shared `RequestBytes` budget and may wait for room first."""

    __slots__ = ("_stream", "_all", "receiving", "unanswered", "socket", "listener", "active_at", "max_idle",
                 "scope", "frames", "charged")

    def __init__(self, stream, connections: Connections, socket, listener, max_idle: float) -> None:
        self._stream = stream  # the SocketStream, or the SSLStream over it
        self._all = connections
        self.socket = socket
        self.listener = listener  # gateway.listeners.Listener
        self.receiving = False
        self.unanswered = False
        self.active_at = trio.current_time()  # last byte received or sent
        self.max_idle = max_idle  # seconds idle before the sweeper closes it
        self.scope: trio.CancelScope | None = None  # the handler's: cancelled to close the connection
        self.frames = FrameTracker()
        self.charged = 0  # bytes this connection counts in the budget

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        # The handler asks for more only once it handled every whole frame it was given.
        frames, budget = self.frames, self._all.request_bytes
        self._charge(frames.partial_bytes)
        if not budget.may_read(self):  # not `receiving` meanwhile: the wait is ours, not the client's
            paused_at = trio.current_time()
            await budget.wait(self)
            frames.pause(trio.current_time() - paused_at)
        self.receiving = True
        self._all.changed()
        try:
            data = await self._stream.receive_some(max_bytes)
        finally:
            self.receiving = False
        if data:
            self.unanswered = True
            self.active_at = trio.current_time()
            frames.received(data, self.active_at)
            self._charge(frames.partial_bytes + frames.ended_bytes)
            if frames.ended_bytes:
                budget.frame_done(self)
        return data

    def _charge(self, held: int) -> None:
        if held != self.charged:
            self._all.request_bytes.change(held - self.charged)
            self.charged = held

    def release(self) -> None:
        """The connection closed: nothing it read is held any more."""
        self._charge(0)
        self._all.request_bytes.frame_done(self)

    async def send_all(self, data) -> None:
        await self._stream.send_all(data)
        self.unanswered = False
        self.active_at = trio.current_time()
        self._all.changed()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def idle(self) -> bool:
        """Waiting for a request, every request it read answered."""
        return self.receiving and not self.unanswered

    def idle_too_long(self, now: float) -> bool:
        return self.idle() and now - self.active_at > self.max_idle

    def too_slow(self, now: float, deadline: float) -> bool:
        """Waiting for the rest of a request that began more than `deadline` ago (a slowloris)."""
        return self.receiving and self.frames.partial_since(now) > deadline


class FrameTracker:
    """Where the byte stream stands among frames (both protocols frame with a 4-byte big-endian size
    prefix): `partial_since(now)` is how long a frame has been partly received (0 at a boundary),
    `partial_bytes` how many of its bytes are here, `ended_bytes` the size of the frames the last
    read completed. One step per frame, no copy of the data."""

    __slots__ = ("_left", "_head", "_started", "partial_bytes", "ended_bytes")

    def __init__(self) -> None:
        self._left = 0  # bytes of the current frame's body still to come
        self._head = b""  # bytes of a size prefix received so far
        self._started = None  # when the current frame's first byte came
        self.partial_bytes = 0  # bytes of the current (incomplete) frame received, prefix included
        self.ended_bytes = 0  # bytes of the frames the last read completed (held until handled)

    def received(self, data, now: float) -> None:
        end = len(data)
        left = self._left
        if left >= end:  # inside one frame's body
            self._left = left - end
            if self._left:
                self.partial_bytes += end
                self.ended_bytes = 0
            else:
                self.ended_bytes = self.partial_bytes + end
                self.partial_bytes = 0
                self._started = None
            return
        ended = 0
        i = start = 0  # the current frame is data[start:i] (start < 0: it began in an earlier read)
        if left:  # the frame in progress ends here
            ended = self.partial_bytes + left
            i = start = left
        elif self._head:  # a size prefix split over reads
            held = len(self._head)
            self._head += bytes(data[:4 - held])
            if len(self._head) < 4:
                self.partial_bytes = len(self._head)
                self.ended_bytes = 0
                return
            start = -held
            i = 4 - held + max(_SIZE.unpack(self._head)[0], 0)
            self._head = b""
            if i <= end:
                ended = i - start
        unpack = _SIZE.unpack_from
        while end - i >= 4:
            start = i
            i += 4 + max(unpack(data, i)[0], 0)  # a bad size: the codec closes the connection
            if i <= end:
                ended += i - start
        if i > end:  # a frame goes on in the next read
            self._left = i - end
            if start >= 0 or self._started is None:
                self._started = now
            self.partial_bytes = end - start
        elif i < end:  # part of a size prefix
            self._left = 0
            self._head = bytes(data[i:end])
            self._started = now
            self.partial_bytes = end - i
        else:
            self._left = 0
            self._started = None
            self.partial_bytes = 0
        self.ended_bytes = ended

    def pause(self, seconds: float) -> None:
        """The gateway stopped reading for `seconds` (budget): the frame's deadline moves by as much."""
        if self._started is not None:
            self._started += seconds

    def partial_since(self, now: float) -> float:
        return 0.0 if self._started is None else now - self._started


class NoBudget:
    """A frame tracker for a stream whose reads hold nothing against the request-bytes budget
    (`partial_bytes`, `ended_bytes` stay 0) and that sees no frames: an HTTP/2 (gRPC) connection,
    where h2 takes every read at once and what a stream may buffer is bounded by its flow-control
    window and the maximum message size instead. Subclasses that do see frames override
    `received`, `pause` and `partial_since` for the slowloris check."""

    __slots__ = ()
    partial_bytes = 0
    ended_bytes = 0

    def received(self, data, now: float) -> None:
        pass

    def pause(self, seconds: float) -> None:
        pass

    def partial_since(self, now: float) -> float:
        return 0.0
