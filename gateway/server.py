"""The gateway process: one App (gateway.app), two listeners and the background services
(gateway.services) in one trio nursery; SIGTERM ends it within one cancel-scope deadline."""
from __future__ import annotations

import errno
import logging
import os
import signal
import sys

import trio

from gateway.app import App, StartupError, build_app
from gateway.config import GatewayConfig
from gateway.services import start_services, write_left

log = logging.getLogger("rocketgate")

# On SIGTERM, connections busy with a request get this long to answer it; idle ones close at once.
SHUTDOWN_GRACE = 1.0


class _Connections:
    """The open connections; `wait_idle()` returns once none is busy with a request."""

    def __init__(self) -> None:
        self.open: set[_Connection] = set()
        self._idle: trio.Event | None = None  # set up by wait_idle

    def changed(self) -> None:
        if self._idle is not None and all(c.idle() for c in self.open):
            self._idle.set()

    async def wait_idle(self) -> None:
        self._idle = trio.Event()
        self.changed()
        await self._idle.wait()


class _Connection:
    """The stream a connection handler gets: the trio SocketStream, marked busy from the moment
    request bytes arrive until an answer is sent and the handler waits for the next request
    (a request without an answer keeps it busy until the shutdown deadline)."""

    __slots__ = ("_stream", "_all", "receiving", "unanswered")

    def __init__(self, stream: trio.SocketStream, connections: _Connections) -> None:
        self._stream = stream
        self._all = connections
        self.receiving = False
        self.unanswered = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        self.receiving = True
        self._all.changed()
        try:
            data = await self._stream.receive_some(max_bytes)
        finally:
            self.receiving = False
        if data:
            self.unanswered = True
        return data

    async def send_all(self, data) -> None:
        await self._stream.send_all(data)
        self.unanswered = False
        self._all.changed()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def idle(self) -> bool:
        """Waiting for a request, every request it read answered."""
        return self.receiving and not self.unanswered


async def _bind(config: GatewayConfig, name: str, port: int) -> list[trio.socket.SocketType]:
    """Bound (not yet listening) sockets for `port` on every address of --host, as
    trio.open_tcp_listeners binds them. Connecting is refused until _listen; a bind error is a
    StartupError (not an OSError in an ExceptionGroup: this runs before any nursery)."""
    tsocket = trio.socket
    socks: list[trio.socket.SocketType] = []
    try:
        for family, type_, proto, _, sockaddr in await tsocket.getaddrinfo(
                config.host, port, type=tsocket.SOCK_STREAM, flags=tsocket.AI_PASSIVE):
            sock = tsocket.socket(family, type_, proto)
            socks.append(sock)
            sock.setsockopt(tsocket.SOL_SOCKET, tsocket.SO_REUSEADDR, 1)
            if family == tsocket.AF_INET6:
                sock.setsockopt(tsocket.IPPROTO_IPV6, tsocket.IPV6_V6ONLY, 1)
            await sock.bind(sockaddr)
    except OSError as exc:
        for sock in socks:
            sock.close()
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise StartupError(f"cannot listen for {name} on {config.host}:{port}: {reason}") from None
    return socks


async def _bind_both(config: GatewayConfig) -> dict[str, list]:
    kafka = await _bind(config, "kafka", config.kafka_port)
    try:
        remoting = await _bind(config, "remoting", config.remoting_port)
    except StartupError:
        for sock in kafka:
            sock.close()
        raise
    return {"kafka": kafka, "remoting": remoting}


def _close_all(bound: dict[str, list]) -> None:
    for socks in bound.values():
        for sock in socks:
            sock.close()


def _listen(socks: list) -> list[trio.SocketListener]:
    for sock in socks:
        sock.listen(0xFFFF)  # the kernel caps it at net.core.somaxconn
    return [trio.SocketListener(sock) for sock in socks]


async def _serve(app: App, bound: dict[str, list] | None = None) -> None:
    """Serve until SIGTERM/SIGINT: then stop accepting, let busy connections finish their request
    (up to SHUTDOWN_GRACE), close them all, stop the services. Binds the ports unless given them."""
    from gateway.kafka import handle_connection as kafka_handler
    from gateway.remoting import handle_connection as remoting_handler

    handlers = {"kafka": kafka_handler, "remoting": remoting_handler}
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        if bound is None:
            bound = await _bind_both(app.config)
        connections = _Connections()
        async with trio.open_nursery() as services:
            await start_services(app, services)
            async with trio.open_nursery() as conns:
                accepting = []  # one cancel scope per listener: a scope is entered once
                for name, socks in bound.items():
                    listeners = _listen(socks)
                    accepting.append(trio.CancelScope())
                    conns.start_soon(_accept, accepting[-1], listeners,
                                     _serve_one(app, name, handlers[name], connections), conns)
                    log.info("%s listener ready on %s:%d", name, app.config.host,
                             listeners[0].socket.getsockname()[1])
                async for signum in signals:
                    log.info("received %s, shutting down", signal.Signals(signum).name)
                    break
                for scope in accepting:  # closes the listening sockets
                    scope.cancel()
                with trio.move_on_after(SHUTDOWN_GRACE):
                    await connections.wait_idle()
                conns.cancel_scope.cancel()
            # The flush services ran until every connection was done; _run() flushes the rest.
            services.cancel_scope.cancel()


async def _accept(scope: trio.CancelScope, listeners, serve_one, conns: trio.Nursery) -> None:
    with scope:
        await trio.serve_listeners(serve_one, listeners, handler_nursery=conns)


def _serve_one(app: App, name: str, handler, connections: _Connections):
    async def serve_one(stream: trio.SocketStream) -> None:
        conn = _Connection(stream, connections)
        connections.open.add(conn)
        try:
            await handler(conn, app)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # a bug in one connection must not take the server down
            log.exception("%s connection failed", name)
        finally:
            connections.open.discard(conn)
            connections.changed()
            with trio.move_on_after(1):
                await stream.aclose()

    return serve_one


def main(config: GatewayConfig) -> int:
    logging.basicConfig(
        level=getattr(logging, config.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        os.makedirs(config.data_dir, exist_ok=True)
        probe = os.path.join(config.data_dir, ".write-test")
        with open(probe, "wb") as f:
            f.write(b"x")
        os.unlink(probe)
    except OSError as exc:
        sys.stderr.write(f"rocketgate: error: data dir {config.data_dir!r} is not writable: {exc.strerror or exc}\n")
        return 2
    try:
        return trio.run(_run, config)
    except StartupError as exc:
        sys.stderr.write(f"rocketgate: error: {exc}\n")
        return 2


async def _run(config: GatewayConfig) -> int:
    # Bind first: a port in use is reported before store recovery runs (and logs); the ports
    # refuse connections until everything is ready (they listen in _serve).
    bound = await _bind_both(config)
    try:
        app = build_app(config)
        if config.verify:
            checked = app.store.verify()
            log.info("verify: checked %d CommitLog entries, %d quarantined", checked, len(app.store.quarantined()))
    except BaseException:
        _close_all(bound)
        raise
    try:
        await _serve(app, bound)
    finally:
        app.offsets.persist()
        write_left(app.config_writer.writer)
        app.store.close()  # flushes and writes the checkpoint
    log.info("stopped cleanly")
    return 0
