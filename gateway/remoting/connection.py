"""One remoting connection: read frames, dispatch requests, write responses.

Requests are handled in arrival order, except the ones that may wait (long-polled pulls, sends
waiting for a sync flush), whose handlers continue in their own task, so one client connection
can carry pulls, sends and heartbeats at once (the Java client shares one connection for all).
Malformed input closes this connection only.
"""
from __future__ import annotations

import functools
import logging

import trio

from codec.remoting import ProtocolError, RemotingCommand, ResponseCode, encode
from codec.remoting.command import FrameReader, Outbox
from client.remoting import write_coalesced
from gateway.remoting import handlers

log = logging.getLogger("rocketgate.remoting")


class Channel:
    """The server side of one client connection; registered clients keep a reference to it."""

    def __init__(self, stream: trio.SocketStream, app, nursery: trio.Nursery) -> None:
        self.stream = stream
        self.app = app
        self.nursery = nursery
        self._outbox = Outbox()
        self.closed = False
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
        await write_coalesced(self.stream, self._outbox, frames)

    def send_oneway(self, cmd: RemotingCommand) -> None:
        """Server-initiated oneway request (e.g. NOTIFY_CONSUMER_IDS_CHANGED); best effort."""
        if not self.closed:
            self.nursery.start_soon(self._send_quietly, cmd)

    async def _send_quietly(self, cmd: RemotingCommand) -> None:
        try:
            await self.send(cmd)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    def spawn(self, req: RemotingCommand, coro_fn) -> None:
        """Finish a request in its own task: `coro_fn()` returns the response (or None)."""
        self.nursery.start_soon(self._finish, req, coro_fn)

    async def _finish(self, req: RemotingCommand, coro_fn) -> None:
        try:
            resp = await coro_fn()
        except ProtocolError as exc:
            resp = req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        except Exception as exc:  # a handler bug answers this request only
            log.exception("remoting request %d failed", req.code)
            resp = req.response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
        await self.reply(req, resp)

    async def reply(self, req: RemotingCommand, resp: RemotingCommand | None) -> None:
        if resp is None or req.is_oneway:
            return
        resp.opaque = req.opaque
        try:
            await self.send(resp)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass


def _install(app) -> None:
    """First connection: register the transaction check sender with semantics.transactions."""
    if app.state.get("rocketmq.installed"):
        return
    app.state["rocketmq.installed"] = True
    from semantics.transactions import register_checker
    register_checker(app, "remoting", functools.partial(handlers.broker.send_transaction_check, app))


async def handle_connection(stream: trio.SocketStream, app) -> None:
    _install(app)
    reader = FrameReader()
    async with trio.open_nursery() as nursery:
        channel = Channel(stream, app, nursery)
        try:
            while True:
                data = await stream.receive_some(256 * 1024)
                if not data:
                    break
                reader.feed(data)
                answers = []  # the answers to every request in this read go out in one write
                while (req := reader.next_command()) is not None:
                    if req.is_response:
                        continue  # answers to our oneway notifications are not expected
                    resp = _dispatch(channel, req)
                    if resp is not None and not req.is_oneway:
                        resp.opaque = req.opaque
                        answers.append(encode(resp))
                if answers:
                    await channel.write(b"".join(answers))
        except ProtocolError as exc:
            log.info("closing remoting connection from %s: %s", channel.address, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        finally:
            channel.closed = True
            handlers.channel_closed(channel)
            nursery.cancel_scope.cancel()


def _dispatch(channel: Channel, req: RemotingCommand) -> RemotingCommand | None:
    """The immediate answer to `req` (None when a task answers later)."""
    handler = handlers.HANDLERS.get(req.code)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("request %d from %s: %s (%d body bytes)", req.code, channel.address, req.ext_fields, len(req.body))
    if handler is None:
        resp = req.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                            remark=f" request type {req.code} not supported")
    else:
        try:
            resp = handler(channel, req)
            if resp is handlers.DEFERRED:
                return None
        except ProtocolError as exc:
            resp = req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        except Exception as exc:  # a handler bug answers this request only
            log.exception("remoting request %d failed", req.code)
            resp = req.response(ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
    if log.isEnabledFor(logging.DEBUG) and resp is not None:
        log.debug("answer to %d: %d %s %s", req.code, resp.code, resp.remark or "", resp.ext_fields)
    return resp
