"""The gateway process: one store, two listeners and the background services in one trio nursery."""
from __future__ import annotations

import errno
import logging
import os
import signal
import sys

import trio

from gateway.config import GatewayConfig
from gateway.flush import GroupCommit, run_async_flush
from gateway.longpoll import ArrivalHub

log = logging.getLogger("rocketgate")


class App:
    """Everything a connection handler needs: config, store, wake-ups, durability, shared tables."""

    def __init__(self, config: GatewayConfig, store) -> None:
        self.config = config
        self.store = store
        self.arrivals = ArrivalHub()
        self.store.add_listener(self.arrivals.notify)
        self.group_commit = GroupCommit(store)
        # Per-protocol shared state (group coordinator, producer ids, registered clients...),
        # created by the protocol modules on first use.
        self.state: dict[str, object] = {}
        self.services: list = []  # extra async callables(app) started with the listeners

    @property
    def sync_flush(self) -> bool:
        return self.config.flush == "sync"

    async def durable(self, end_offset: int) -> None:
        """In sync mode wait until the CommitLog is on disk up to `end_offset`; no-op in async mode."""
        if self.sync_flush:
            await self.group_commit.durable(end_offset)


def open_store(config: GatewayConfig):
    import store

    return store.open(
        config.data_dir,
        store.StoreConfig(
            commitlog_file_size=config.commitlog_file_size,
            max_message_size=config.max_message_bytes,
            flush=config.flush,
            # msgIds name this address: clients use it to view messages and send them back.
            store_host=(config.advertised, config.remoting_port),
        ),
    )


RETENTION_CHECK_INTERVAL = 60.0


async def run_retention(app: App) -> None:
    """Delete CommitLog files older than fileReservedTime; runs on the event loop like every append."""
    while True:
        await trio.sleep(RETENTION_CHECK_INTERVAL)
        deleted = app.store.delete_expired()
        if deleted:
            log.info("retention deleted %s", deleted)


class StartupError(Exception):
    """A problem the user can fix (port in use, bad setting): one line on stderr, exit status 2."""


# On SIGTERM, connections busy with a request get this long to answer it; idle ones close at once.
SHUTDOWN_GRACE = 1.0


class _Connection:
    """The stream a connection handler gets: the trio SocketStream, plus whether the handler is
    waiting for the next request (blocked in receive_some), which shutdown uses to tell idle
    connections from busy ones."""

    __slots__ = ("_stream", "_task", "receiving")

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._task = trio.lowlevel.current_task()
        self.receiving = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        self.receiving = True
        try:
            return await self._stream.receive_some(max_bytes)
        finally:
            self.receiving = False

    async def send_all(self, data) -> None:
        await self._stream.send_all(data)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def idle(self) -> bool:
        """Waiting for a request, with no task of its own (deferred answers, long polls) running."""
        return self.receiving and not any(n.child_tasks for n in self._task.child_nurseries)


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
        connections: set[_Connection] = set()

        async with trio.open_nursery() as services:
            if app.sync_flush:
                services.start_soon(app.group_commit.run)
            else:
                services.start_soon(run_async_flush, app.store)
            services.start_soon(run_retention, app)
            for service in app.services:
                services.start_soon(service, app)

            async with trio.open_nursery() as conns:
                accepting = []
                for name, socks in bound.items():
                    listeners = _listen(socks)
                    scope = trio.CancelScope()
                    accepting.append(scope)
                    conns.start_soon(_accept, scope, listeners, _serve_one(app, name, handlers[name], connections),
                                     conns)
                    log.info("%s listener ready on %s:%d", name, app.config.host,
                             listeners[0].socket.getsockname()[1])
                async for signum in signals:
                    log.info("received %s, shutting down", signal.Signals(signum).name)
                    break
                for scope in accepting:  # closes the listening sockets
                    scope.cancel()
                with trio.move_on_after(SHUTDOWN_GRACE):
                    while not all(c.idle() for c in connections):
                        await trio.sleep(0.01)
                conns.cancel_scope.cancel()
            # The flush services ran until every connection was done; _run() flushes the rest.
            services.cancel_scope.cancel()


async def _accept(scope: trio.CancelScope, listeners, serve_one, conns: trio.Nursery) -> None:
    with scope:
        await trio.serve_listeners(serve_one, listeners, handler_nursery=conns)


def _serve_one(app: App, name: str, handler, connections: set):
    async def serve_one(stream: trio.SocketStream) -> None:
        conn = _Connection(stream)
        connections.add(conn)
        try:
            await handler(conn, app)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # a bug in one connection must not take the server down
            log.exception("%s connection failed", name)
        finally:
            connections.discard(conn)
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
        try:
            store = open_store(config)
        except (OSError, ValueError) as exc:
            raise StartupError(f"cannot open store in {config.data_dir!r}: {exc}") from None
        try:
            app = App(config, store)
            from semantics import install_services

            install_services(app)
            from semantics import flow_control

            flow_control.install(app)  # times every store write (send flow control)
        except (OSError, ValueError) as exc:  # e.g. a bad --message-delay-level
            store.close()
            raise StartupError(str(exc)) from None
    except BaseException:
        _close_all(bound)
        raise
    try:
        await _serve(app, bound)
    finally:
        offsets = getattr(app, "offsets", None)
        if offsets is not None:
            offsets.persist()
        store.close()  # flushes and writes the checkpoint
    log.info("stopped cleanly")
    return 0
