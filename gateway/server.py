"""The gateway process: one App (gateway.app), two listeners and the background services
(gateway.services) in one trio nursery; SIGTERM ends it within one cancel-scope deadline."""
from __future__ import annotations

import errno
import logging
import signal
import sys

import trio

from gateway import data_dir
from gateway.app import App, StartupError, build_app
from gateway.cluster.ownership import SINGLE_NODE
from gateway.config import GatewayConfig
from gateway.connections import Connection, Connections
from gateway.listeners import bind_failure, endpoints
from gateway.shard_data import ShardDataError, refuse_sharded
from gateway.tls import TlsError, TlsFiles, accept as accept_tls
from gateway.services import start_services, write_left

log = logging.getLogger("rocketgate")

# On SIGTERM, connections busy with a request get this long to answer it; idle ones close at once.
SHUTDOWN_GRACE = 1.0
IDLE_SWEEP_PERIOD = 1.0  # how often idle connections are looked for


async def _bind(host: str, name: str, port: int, flag: str) -> list[trio.socket.SocketType]:
    """Bound (not yet listening) sockets for `port` on every address of `host`, as
    trio.open_tcp_listeners binds them. Connecting is refused until _listen; a bind error is a
    StartupError (not an OSError in an ExceptionGroup: this runs before any nursery)."""
    tsocket = trio.socket
    socks: list[trio.socket.SocketType] = []
    try:
        for family, type_, proto, _, sockaddr in await tsocket.getaddrinfo(
                host, port, type=tsocket.SOCK_STREAM, flags=tsocket.AI_PASSIVE):
            sock = tsocket.socket(family, type_, proto)
            socks.append(sock)
            sock.setsockopt(tsocket.SOL_SOCKET, tsocket.SO_REUSEADDR, 1)
            if family == tsocket.AF_INET6:
                sock.setsockopt(tsocket.IPPROTO_IPV6, tsocket.IPV6_V6ONLY, 1)
            await sock.bind(sockaddr)
    except OSError as exc:
        for sock in socks:
            sock.close()
        raise StartupError(f"cannot listen for {name} on {host}:{port} ({flag}): {bind_failure(exc)}") from None
    return socks


async def _bind_all(config: GatewayConfig) -> dict:
    """Listener (gateway.listeners) -> its bound sockets, for every port of the config."""
    bound = {}
    try:
        for listener in endpoints(config):
            name = listener.kind if listener.kind != "kafka" else f"kafka ({listener.name})"
            bound[listener] = await _bind(listener.host, name, listener.port, listener.origin)
    except StartupError:
        _close_all(bound)
        raise
    return bound


def _tls_files(config: GatewayConfig) -> TlsFiles | None:
    if not any(listener.tls for listener in endpoints(config)):
        return None
    try:
        return TlsFiles(config.tls_cert, config.tls_key, config.tls_ca)
    except TlsError as exc:
        raise StartupError(str(exc)) from None


def _close_all(bound: dict) -> None:
    for socks in bound.values():
        for sock in socks:
            sock.close()


def _listen(socks: list) -> list[trio.SocketListener]:
    for sock in socks:
        sock.listen(0xFFFF)  # the kernel caps it at net.core.somaxconn
    return [trio.SocketListener(sock) for sock in socks]


async def _serve(app: App, bound: dict | None = None, http=None, registry_port=None) -> None:
    """Serve until SIGTERM/SIGINT: then stop accepting, let busy connections finish their request
    (up to SHUTDOWN_GRACE), close them all, stop the services. Binds the ports unless given them."""
    from gateway.kafka import handle_connection as kafka_handler
    from gateway.kafka.connection import MALFORMED_LOG
    from gateway.remoting import handle_connection as remoting_handler

    handlers = {"kafka": kafka_handler, "remoting": remoting_handler}
    if app.config.grpc_port is not None:  # the RocketMQ SDK, grpc, opentelemetry: only when served
        from gateway.grpc.connection import handle_connection as grpc_handler
        handlers["grpc"] = grpc_handler
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        if bound is None:
            bound = await _bind_all(app.config)
        tls = _tls_files(app.config)
        connections = Connections(app.config.max_buffered_request_bytes)
        app.stats.request_bytes = connections.request_bytes
        async with trio.open_nursery() as services:
            await start_services(app, services)
            if http is not None:  # --http-port: /readyz answers 503 until the listeners are up
                from gateway.ops.http import HttpService  # the web stack: imported only when served
                await services.start(HttpService(app, http).run)
            if registry_port is not None:  # --schema-registry-port
                from gateway.schema_registry.service import SchemaRegistryService  # the same
                await services.start(SchemaRegistryService(app, registry_port).run)
            async with trio.open_nursery() as conns:
                conns.start_soon(_sweep_idle, connections, IDLE_SWEEP_PERIOD,
                                 app.config.request_deadline_ms / 1000)
                accepting = []  # one cancel scope per listener: a scope is entered once
                for listener, socks in bound.items():
                    listeners = _listen(socks)
                    accepting.append(trio.CancelScope())
                    serve_one = _serve_one(app, listener, handlers[listener.kind], connections,
                                           tls if listener.tls else None)
                    conns.start_soon(_accept, accepting[-1], listeners, serve_one, conns)
                    log.info("%s listener ready on %s:%d%s", listener.kind, listener.host,
                             listeners[0].socket.getsockname()[1],
                             "" if listener.protocol == "PLAINTEXT" else f" ({listener.name}, {listener.protocol})")
                app.stats.listeners_up = True
                async for signum in signals:
                    log.info("received %s, shutting down", signal.Signals(signum).name)
                    break
                app.stats.stop()  # /readyz answers 503; the HTTP server stops
                for scope in accepting:  # closes the listening sockets
                    scope.cancel()
                with trio.move_on_after(SHUTDOWN_GRACE):
                    await connections.wait_idle()
                conns.cancel_scope.cancel()
            MALFORMED_LOG.report_suppressed()
            # The flush services ran until every connection was done; _run() flushes the rest.
            services.cancel_scope.cancel()


async def _accept(scope: trio.CancelScope, listeners, serve_one, conns: trio.Nursery) -> None:
    with scope:
        async with trio.open_nursery() as loops:
            for listener in listeners:
                loops.start_soon(_accept_loop, listener, serve_one, conns)


# accept() failing for want of resources: wait and try again (the kernel keeps the backlog).
_ACCEPT_CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
ACCEPT_RETRY_DELAY = 0.1


async def _accept_loop(listener: trio.SocketListener, serve_one, conns: trio.Nursery) -> None:
    """trio.serve_listeners, but at the descriptor limit (EMFILE) it logs once per episode, not
    every retry: new connections wait in the backlog, the open ones keep being served."""
    starved = 0
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                raise
            if not starved:
                log.error("accept failed (%s): not accepting new connections until descriptors free up", exc)
            starved += 1
            await trio.sleep(ACCEPT_RETRY_DELAY)
            continue
        if starved:
            log.warning("accepting connections again (after %d failed tries)", starved)
            starved = 0
        conns.start_soon(serve_one, stream)


async def _sweep_idle(connections: Connections, period: float, request_deadline: float) -> None:
    """Close connections idle longer than their limit (Kafka's connections.max.idle.ms) and those
    that take longer than `request_deadline` to send one request (slowloris)."""
    while True:
        await trio.sleep(period)
        now = trio.current_time()
        for conn in list(connections.open):
            if conn.scope is None:
                continue
            if conn.idle_too_long(now):
                conn.scope.cancel()
            elif conn.too_slow(now, request_deadline):
                log.warning("closing a connection from %s: a request took over %.0f s to arrive",
                            _peer(conn), request_deadline)
                conn.scope.cancel()


def _peer(conn) -> str:
    try:
        return str(conn.socket.getpeername()[0])
    except (OSError, AttributeError, IndexError):
        return "?"


def _max_idle(config: GatewayConfig, name: str) -> float:
    if name == "kafka":
        return config.connections_max_idle_ms / 1000
    return float(config.remoting_channel_max_idle_seconds)


def _serve_one(app: App, listener, handler, connections: Connections, tls: TlsFiles | None):
    name = listener.kind
    max_idle = _max_idle(app.config, name)
    limit = app.config.max_connections

    async def serve_one(stream: trio.SocketStream) -> None:
        if len(connections.open) >= limit:
            connections.refused += 1
            if connections.refused == 1:
                log.warning("%d connections open (--max-connections): refusing new ones", limit)
            await _close(stream)
            return
        if connections.refused:
            log.warning("accepting connections again (%d refused at the cap)", connections.refused)
            connections.refused = 0
        conn = None
        try:
            secured = stream if tls is None else await accept_tls(stream, tls)
            if secured is None:
                return
            conn = Connection(secured, connections, stream.socket, listener, max_idle)
            connections.open.add(conn)
            with trio.CancelScope() as conn.scope:
                await handler(conn, app)
        except _PEER_GONE:
            pass
        except Exception as exc:  # a bug in one connection must not take the server down
            if not _peer_gone(exc):
                log.exception("%s connection failed", name)
        finally:
            if conn is not None:
                connections.closed(conn)
            else:
                connections.changed()
            # TLS: close_notify first, so the peer reads our last answer before the close
            await _close(conn._stream if conn is not None else stream)

    return serve_one


_PEER_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError)


def _peer_gone(exc: Exception) -> bool:
    """The peer went away, also when a connection's tasks (a pipelining reader and sender) all
    raised that inside a nursery's ExceptionGroup: the normal end of a connection, not a bug."""
    if isinstance(exc, BaseExceptionGroup):
        rest = exc.split(_PEER_GONE)[1]
        return rest is None
    return isinstance(exc, _PEER_GONE)


async def _close(stream) -> None:
    with trio.move_on_after(1):
        await stream.aclose()


def main(config: GatewayConfig) -> int:
    logging.basicConfig(
        level=getattr(logging, config.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        refuse_sharded(config.data_dir)
        lock = data_dir.take(config.data_dir)
    except (data_dir.DataDirError, ShardDataError) as exc:
        sys.stderr.write(f"rocketgate: error: {exc}\n")
        return 2
    try:
        return trio.run(_run, config)
    except StartupError as exc:
        sys.stderr.write(f"rocketgate: error: {exc}\n")
        return 2
    finally:
        lock.release()


async def _join(config: GatewayConfig):
    """With --cluster: this gateway's membership (gateway.cluster); alone: it owns everything."""
    if config.cluster is None:
        return SINGLE_NODE
    from gateway.cluster.service import JoinError, join  # the etcd client (httpx): only in a cluster

    try:
        return await join(config)
    except JoinError as exc:
        raise StartupError(f"cannot join the cluster: {exc}") from None


def _bind_web(config: GatewayConfig) -> tuple:
    """The bound hypercorn configs of --http-port (gateway.ops) and --schema-registry-port, None
    for each that is off. The web stack (hypercorn, starlette, prometheus_client: ~0.5 s of
    imports) is imported only when one of them is on."""
    http = registry = None
    if config.http_port is not None:
        from gateway.ops.http import bind_http
        http = bind_http(config)
    if config.schema_registry_port is not None:
        from gateway.schema_registry.service import bind_schema_registry
        registry = bind_schema_registry(config)
    return http, registry


async def _run(config: GatewayConfig) -> int:
    # Bind first: a port in use is reported before store recovery runs (and logs); the ports
    # refuse connections until everything is ready (they listen in _serve).
    bound = await _bind_all(config)
    try:
        _tls_files(config)  # a certificate that cannot be loaded stops the start here
        http, registry_port = _bind_web(config)
        app = build_app(config, ownership=await _join(config))
        if config.verify:
            checked = app.store.verify()
            log.info("verify: checked %d CommitLog entries, %d quarantined", checked, len(app.store.quarantined()))
    except BaseException:
        _close_all(bound)
        raise
    try:
        await _serve(app, bound, http, registry_port)
    finally:
        app.offsets.persist()
        write_left(app.config_writer.writer)
        app.store.close()  # flushes and writes the checkpoint
    log.info("stopped cleanly")
    return 0
