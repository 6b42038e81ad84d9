"""One client connection: requests matched to responses by opaque, oneway sends, and
server-initiated requests handed to a callback."""
from __future__ import annotations

import dataclasses
import itertools
import logging

import trio

from codec.remoting import FLAG_ONEWAY, JSON, ProtocolError, RemotingCommand, encode
from codec.remoting import acl
from codec.remoting.command import FrameReader, Outbox
from client.errors import MQClientError, RequestTimeout

log = logging.getLogger("rocketgate.client")
CLIENT_VERSION = 409  # the MQVersion ordinal we claim (4.9.8)
_opaques = itertools.count(1)


WRITE_TIMEOUT_S = 30.0


async def write_coalesced(stream, outbox: Outbox, frames: bytes) -> None:
    """Queue `frames`; if no write is in progress, write everything queued until the outbox is
    empty. Shielded: a cancelled caller must not strand frames that other tasks queued meanwhile."""
    if not outbox.add(frames):
        return  # the task writing now sends these with its own
    try:
        with trio.CancelScope(shield=True), trio.fail_after(WRITE_TIMEOUT_S):
            while data := outbox.take():
                await stream.send_all(data)
    except trio.TooSlowError:
        raise trio.BrokenResourceError("peer stopped reading") from None
    finally:
        outbox.writing = False


@dataclasses.dataclass(frozen=True)
class SessionCredentials:
    """A RocketMQ access key: every request is signed with it as AclClientRPCHook signs (codec.remoting.acl)."""
    access_key: str
    secret_key: str
    security_token: str | None = None

    @classmethod
    def of(cls, access_key: str | None, secret_key: str | None,
           security_token: str | None = None) -> "SessionCredentials | None":
        """The credentials for the clients' access_key/secret_key options (None when not given)."""
        if access_key is None and secret_key is None:
            return None
        if not access_key or not secret_key:
            raise ValueError("access_key and secret_key go together")
        return cls(access_key, secret_key, security_token)

    def sign(self, cmd: RemotingCommand) -> None:
        acl.sign(cmd, self.access_key, self.secret_key, self.security_token)


class _Pending:
    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: RemotingCommand | None = None


class Connection:
    def __init__(self, addr: str, stream: trio.SocketStream, serialize_type: int, on_request,
                 credentials: SessionCredentials | None = None) -> None:
        self.addr = addr
        self.credentials = credentials
        self.stream = stream
        self.serialize_type = serialize_type
        self.on_request = on_request  # fn(connection, RemotingCommand) for server-initiated requests
        self.pending: dict[int, _Pending] = {}
        self.outbox = Outbox()
        self.closed = False

    @classmethod
    async def open(cls, addr: str, nursery: trio.Nursery, serialize_type: int = JSON, on_request=None,
                   credentials: SessionCredentials | None = None):
        host, _, port = addr.rpartition(":")
        try:
            stream = await trio.open_tcp_stream(host, int(port))
        except OSError as exc:
            raise MQClientError(f"connect to {addr} failed: {exc}") from exc
        conn = cls(addr, stream, serialize_type, on_request, credentials)
        nursery.start_soon(conn._read_loop)
        return conn

    def _prepare(self, cmd: RemotingCommand) -> RemotingCommand:
        cmd.opaque = next(_opaques) & 0x7FFFFFFF
        cmd.language = "PYTHON"
        cmd.version = CLIENT_VERSION
        cmd.serialize_type = self.serialize_type
        if self.credentials is not None:
            self.credentials.sign(cmd)
        return cmd

    async def _write(self, cmd: RemotingCommand) -> None:
        if self.closed:
            raise MQClientError(f"connection to {self.addr} is closed")
        try:
            await write_coalesced(self.stream, self.outbox, encode(cmd))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.closed = True
            raise MQClientError(f"send to {self.addr} failed: {exc}") from exc

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self._prepare(cmd)
        pending = self.pending[cmd.opaque] = _Pending()
        try:
            await self._write(cmd)
            with trio.move_on_after(timeout):
                await pending.event.wait()
            if pending.response is None:
                if self.closed:
                    raise MQClientError(f"connection to {self.addr} closed while waiting for a response")
                raise RequestTimeout(f"no response from {self.addr} to request {cmd.code} in {timeout}s")
            return pending.response
        finally:
            self.pending.pop(cmd.opaque, None)

    async def oneway(self, cmd: RemotingCommand) -> None:
        self._prepare(cmd)
        cmd.flag |= FLAG_ONEWAY
        await self._write(cmd)

    async def reply(self, response: RemotingCommand) -> None:
        response.serialize_type = self.serialize_type
        await self._write(response)

    async def _read_loop(self) -> None:
        reader = FrameReader()
        try:
            while True:
                data = await self.stream.receive_some(256 * 1024)
                if not data:
                    break
                reader.feed(data)
                while (cmd := reader.next_command()) is not None:
                    if cmd.is_response:
                        pending = self.pending.get(cmd.opaque)
                        if pending is not None:
                            pending.response = cmd
                            pending.event.set()
                    elif self.on_request is not None:
                        self.on_request(self, cmd)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ProtocolError) as exc:
            log.debug("connection to %s ended: %s", self.addr, exc)
        finally:
            await self.close()

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
        for pending in list(self.pending.values()):
            pending.event.set()
        with trio.move_on_after(1) as scope:
            scope.shield = True
            await self.stream.aclose()
