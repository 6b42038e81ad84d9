"""One remoting connection: read frames, dispatch requests, write responses.

Requests are handled in arrival order, except the ones that may wait (long-polled pulls, sends
waiting for a sync flush), whose handlers continue in their own task, so one client connection
can carry pulls, sends and heartbeats at once (the Java client shares one connection for all).
The requests parked that way are capped per connection (`--remoting-max-parked-requests`): beyond
the cap a new one is answered SYSTEM_BUSY at once, as a RocketMQ broker answers when its request
queue is full, instead of holding one more task. Malformed input closes this connection only.

Error policy at the handler boundary: a handler raises RequestError (gateway.remoting.headers) for
a request the client got wrong; that request gets the error answer and the connection goes on. Any
other exception is a bug: it is not answered, it ends this connection (the server logs it with its
traceback and keeps running).
"""
from __future__ import annotations

import functools
import logging
import time

import trio

import store
from codec.remoting import ProtocolError, RemotingCommand, RequestCode, ResponseCode, encode
from codec.remoting.command import FrameReader, Outbox
from gateway.cluster import remoting_queues
from gateway.cluster.ownership import clustered
from gateway.ops.stats import remoting_principal, stats_of
import gateway.remoting.diskless as diskless
from gateway.remoting.handlers import DEFERRED, HANDLERS, channel_closed
from gateway.remoting.headers import RequestError
from gateway.remoting.send import PreparedSend, append_error, finish_send, prepare_send
from semantics.flow_control import SendRefused

log = logging.getLogger("rocketgate.remoting")
WRITE_TIMEOUT_S = 30.0
# Sends appended together when several arrive in one read (the batch form keeps its own path).
_COALESCED_SENDS = frozenset((RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2))
_SENDS = _COALESCED_SENDS | {RequestCode.SEND_BATCH_MESSAGE}
# Metric labels: a request code's name (RocketMQ's RequestCode), else its number.
_CODE_NAMES = {v: k for k, v in vars(RequestCode).items() if k.isupper() and isinstance(v, int)}
# Answers that are not errors: a pull or query that found nothing (yet) is the normal case.
# RocketMQ's answer when a request finds its processor's queue full (NettyRemotingAbstract).
OVERLOAD = "[OVERLOAD]system busy, start flow control for a while"
_NOT_ERRORS = frozenset((ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
                         ResponseCode.PULL_OFFSET_MOVED, ResponseCode.QUERY_NOT_FOUND))


class Channel:
    """The server side of one client connection; registered clients keep a reference to it."""

    def __init__(self, stream: trio.SocketStream, app, nursery: trio.Nursery) -> None:
        self.stream = stream
        self.app = app
        self.stats = stats_of(app)
        self.nursery = nursery
        self._outbox = Outbox()
        self._pending: dict[int, list] = {}  # opaque -> [Event, response] of our own requests
        self._next_opaque = 0
        self.closed = False
        self.read_at: float | None = None
        self.parked = 0  # requests whose handler continues in a task of its own (spawn)
        self.before_answers: list = []  # called once the requests of a read are handled, before their answers leave
        self.overloaded = 0  # requests refused because `parked` was at the cap
        # a cluster member: queue ids are broker-local (gateway.cluster.remoting_queues)
        self.clustered = clustered(app)
        try:
            peer = stream.socket.getpeername()
            self.address = (peer[0], peer[1])
        except OSError:
            self.address = ("0.0.0.0", 0)
        self.local_port = stream.socket.getsockname()[1]

    @property
    def broker_addr(self) -> str:
        """This gateway's advertised host:port for remoting (what routes and msgIds name)."""
        return f"{self.app.config.advertised}:{self.local_port}"

    async def send(self, cmd: RemotingCommand) -> None:
        await self.write(encode(cmd))

    async def write(self, frames: bytes) -> None:
        """Queue `frames`; unless a write is in progress, write everything queued until the outbox is
        empty. Shielded: a cancelled task must not strand the frames that others queued meanwhile."""
        outbox = self._outbox
        self.stats.bytes_out["remoting"] += len(frames)
        if not outbox.add(frames):
            return  # the task writing now sends these with its own
        try:
            with trio.CancelScope(shield=True), trio.fail_after(WRITE_TIMEOUT_S):
                while data := outbox.take():
                    await self.stream.send_all(data)
        except trio.TooSlowError:
            raise trio.BrokenResourceError("peer stopped reading") from None
        finally:
            outbox.writing = False

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand | None:
        """A server-initiated request (e.g. GET_CONSUMER_RUNNING_INFO forwarded to the consumer);
        its response, or None when the client does not answer in time or goes away."""
        self._next_opaque = (self._next_opaque + 1) & 0x7FFFFFFF
        cmd.opaque, cmd.flag = self._next_opaque, 0
        slot = self._pending[cmd.opaque] = [trio.Event(), None]
        try:
            await self.send(cmd)
            with trio.move_on_after(timeout):
                await slot[0].wait()
            return slot[1]
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return None
        finally:
            self._pending.pop(cmd.opaque, None)

    def resolve(self, resp: RemotingCommand) -> None:
        """A response from the client: wake the request waiting for it (others are dropped)."""
        slot = self._pending.get(resp.opaque)
        if slot is not None:
            slot[1] = resp
            slot[0].set()

    def send_oneway(self, cmd: RemotingCommand) -> None:
        """Server-initiated oneway request (e.g. NOTIFY_CONSUMER_IDS_CHANGED); best effort."""
        if not self.closed:
            self.nursery.start_soon(self._send_quietly, cmd)

    async def _send_quietly(self, cmd: RemotingCommand) -> None:
        try:
            await self.send(cmd)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    def spawn(self, req: RemotingCommand, coro_fn, *, after_effects: bool = False) -> None:
        """Finish a request in its own task: `coro_fn()` returns the response (or None).

        With the connection's cap of parked requests reached, a request that has done nothing yet
        is answered SYSTEM_BUSY (`OVERLOAD`) instead; `after_effects=True` (a send already stored,
        waiting for its flush) is always parked, since refusing it would make the client resend."""
        limit = self.app.config.remoting_max_parked_requests
        if not after_effects and self.parked >= limit:
            self.overloaded += 1
            if self.overloaded == 1 or self.overloaded % 1000 == 0:  # not one line per refusal
                log.warning("remoting connection from %s has %d parked requests (--remoting-max-parked-requests): "
                            "answering SYSTEM_BUSY (%d so far)", self.address, self.parked, self.overloaded)
            busy = req.response(ResponseCode.SYSTEM_BUSY, remark=OVERLOAD)
            self.nursery.start_soon(self._refuse, req, busy, self.read_at)
            return
        self.parked += 1
        self.nursery.start_soon(self._finish, req, coro_fn, self.read_at)

    async def _refuse(self, req: RemotingCommand, resp: RemotingCommand, read_at: float | None) -> None:
        _observe(self, req, resp, read_at)
        await self.reply(req, resp)

    async def _finish(self, req: RemotingCommand, coro_fn, read_at: float | None = None) -> None:
        try:
            try:
                resp = await coro_fn()
            finally:
                self.parked -= 1
        except Exception as exc:
            resp = _mistake_answer(req, exc)
        _observe(self, req, resp, read_at)
        await self.reply(req, resp)

    async def reply(self, req: RemotingCommand, resp: RemotingCommand | None) -> None:
        if resp is None or req.is_oneway:
            return
        if self.clustered:
            remoting_queues.restore(self.app, req, resp)
        resp.opaque = req.opaque
        try:
            await self.send(resp)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass


async def handle_connection(stream: trio.SocketStream, app) -> None:
    guard = app.security  # None unless --authorizer acl
    topics = app.store.topics
    reader = FrameReader()
    async with trio.open_nursery() as nursery:
        channel = Channel(stream, app, nursery)
        stats = channel.stats
        stats.connection_opened("remoting")
        try:
            while True:
                data = await stream.receive_some(256 * 1024)
                if not data:
                    break
                stats.bytes_in["remoting"] += len(data)
                channel.read_at = time.monotonic()  # the send-queue wait starts here (flow control)
                reader.feed(data)
                answers = []  # the answers to every request in this read go out in one write
                sends = []  # prepared sends not yet appended
                topics_before = topics.submission
                while (req := reader.next_command()) is not None:
                    if req.is_response:
                        channel.resolve(req)
                        continue
                    if guard is not None and (refusal := guard.check_remoting(req, channel.address[0])):
                        _answer(channel, req, refusal, answers)  # not authenticated or not allowed
                        continue
                    if channel.clustered and (refusal := remoting_queues.translate(app, req)):
                        _answer(channel, req, refusal, answers)  # a queue this gateway does not lead
                        continue
                    if req.code in _SENDS:
                        resp = _guarded(req, prepare_send, channel, req)
                        if app.schema_validation.pending:  # schema ids this gateway lacks: ask, judge again
                            await app.schema_validation.learn()
                            resp = _guarded(req, prepare_send, channel, req)
                        if isinstance(resp, PreparedSend) and diskless.is_diskless_send(app, resp):
                            channel.spawn(req, functools.partial(diskless.send, channel, resp))
                            continue  # answered once its WAL object is committed
                        if isinstance(resp, PreparedSend):
                            if req.code in _COALESCED_SENDS:
                                sends.append(resp)
                            else:  # a batch is appended alone, after the sends before it
                                await _append_sends(channel, sends + [resp], answers, coalesce=False)
                                sends = []
                            continue
                    else:
                        if sends:  # a later request sees the earlier sends stored
                            await _append_sends(channel, sends, answers)
                            sends = []
                        resp = _dispatch(channel, req)
                    _answer(channel, req, resp, answers)
                if sends:
                    await _append_sends(channel, sends, answers)
                while channel.before_answers:  # e.g. the POP acks of this read, logged as one op
                    channel.before_answers.pop(0)()
                if topics.submission != topics_before:  # a topic was created or changed: durable first
                    await app.topics_written()
                if answers:
                    await channel.write(b"".join(answers))
        except ProtocolError as exc:
            log.info("closing remoting connection from %s: %s", channel.address, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        finally:
            stats.connections["remoting"] -= 1
            channel.closed = True
            for slot in channel._pending.values():
                slot[0].set()
            channel_closed(channel)
            nursery.cancel_scope.cancel()


def _answer(channel: Channel, req: RemotingCommand, resp: RemotingCommand | None, answers: list) -> None:
    if resp is None or resp is DEFERRED:  # a deferred answer is counted by Channel._finish
        return
    _observe(channel, req, resp, channel.read_at)
    if channel.clustered:
        remoting_queues.restore(channel.app, req, resp)
    if not req.is_oneway:
        resp.opaque = req.opaque
        answers.append(encode(resp))


def _observe(channel: Channel, req: RemotingCommand, resp: RemotingCommand | None, read_at) -> None:
    """Count one answered request (latency from the read that brought it; an error unless _NOT_ERRORS)."""
    seconds = time.monotonic() - read_at if read_at is not None else 0.0
    name = _CODE_NAMES.get(req.code, "unknown")  # any int32 may come: a bounded label set
    channel.stats.requests.observe("remoting", name, seconds, resp is not None and resp.code not in _NOT_ERRORS)
    channel.stats.principal_request("remoting", remoting_principal(channel.app, req))


def _guarded(req: RemotingCommand, fn, *args):
    """fn(*args), or the error answer to `req` if the client got the request wrong."""
    try:
        return fn(*args)
    except Exception as exc:
        return _mistake_answer(req, exc)


def _mistake_answer(req: RemotingCommand, exc: Exception) -> RemotingCommand:
    """The answer to a request the client got wrong. Any other exception is a bug: raised again,
    naming the request, to end this connection."""
    if isinstance(exc, RequestError):
        return exc.answer(req)
    if isinstance(exc, ProtocolError):  # RemotingCommand.get_int: a missing or non-numeric field
        return req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
    exc.add_note(f"while handling remoting request {req.code}")
    raise exc


async def _append_sends(channel: Channel, sends: list, answers: list, coalesce: bool = True) -> None:
    """Append the messages of several sends in one CommitLog write; if that fails (one bad message
    fails all), append them one request at a time so each gets its own answer. Appends go through
    `app.flow` (off the event loop while the disk is slow, where a send that waited too long for its
    turn is refused SYSTEM_BUSY)."""
    flow, st, read_at = channel.app.flow, channel.app.store, channel.read_at
    if coalesce and len(sends) > 1:
        try:
            results = await flow.append(st, [m for p in sends for m in p.msgs], read_at)
        except (store.StoreError, SendRefused):
            results = None
        if results is not None:
            pos = 0
            for p in sends:
                n = len(p.msgs)
                _answer(channel, p.req, _guarded(p.req, finish_send, channel, p, results[pos:pos + n]), answers)
                pos += n
            return
    for p in sends:
        try:
            results = await flow.append(st, p.msgs, read_at)
        except SendRefused as exc:
            _answer(channel, p.req, p.req.response(ResponseCode.SYSTEM_BUSY, remark=str(exc)), answers)
            continue
        except store.StoreError as exc:
            _answer(channel, p.req, append_error(p.req, exc), answers)
            continue
        _answer(channel, p.req, _guarded(p.req, finish_send, channel, p, results), answers)


def _dispatch(channel: Channel, req: RemotingCommand) -> RemotingCommand | None:
    """The immediate answer to `req` (None when a task answers later)."""
    handler = HANDLERS.get(req.code)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("request %d from %s: %s (%d body bytes)", req.code, channel.address, req.ext_fields, len(req.body))
    if handler is None:
        resp = req.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                            remark=f" request type {req.code} not supported")
    else:
        resp = _guarded(req, handler, channel, req)
        if resp is DEFERRED:
            return None
    if log.isEnabledFor(logging.DEBUG) and resp is not None:
        log.debug("answer to %d: %d %s %s", req.code, resp.code, resp.remark or "", resp.ext_fields)
    return resp
