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


async def _listen(app: App, name: str, port: int, handler, task_status=trio.TASK_STATUS_IGNORED) -> None:
    listeners = await trio.open_tcp_listeners(port, host=app.config.host)
    bound = listeners[0].socket.getsockname()[1]
    log.info("%s listener ready on %s:%d", name, app.config.host, bound)
    task_status.started(bound)

    async def serve_one(stream: trio.SocketStream) -> None:
        try:
            await handler(stream, app)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # a bug in one connection must not take the server down
            log.exception("%s connection failed", name)
        finally:
            with trio.move_on_after(1):
                await stream.aclose()

    await trio.serve_listeners(serve_one, listeners)


async def _serve(app: App) -> None:
    from gateway.kafka import handle_connection as kafka_handler
    from gateway.remoting import handle_connection as remoting_handler

    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            if app.sync_flush:
                nursery.start_soon(app.group_commit.run)
            else:
                nursery.start_soon(run_async_flush, app.store)
            nursery.start_soon(run_retention, app)
            for service in app.services:
                nursery.start_soon(service, app)
            await nursery.start(_listen, app, "kafka", app.config.kafka_port, kafka_handler)
            await nursery.start(_listen, app, "remoting", app.config.remoting_port, remoting_handler)
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break


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
        sys.stderr.write(f"rocketgate: error: data dir {config.data_dir!r} is not writable: {exc.strerror}\n")
        return 2
    try:
        store = open_store(config)
    except OSError as exc:
        sys.stderr.write(f"rocketgate: error: cannot open store in {config.data_dir!r}: {exc}\n")
        return 2
    app = App(config, store)
    from semantics import install_services

    install_services(app)
    try:
        trio.run(_serve, app)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            sys.stderr.write(f"rocketgate: error: port in use: {exc}\n")
            return 2
        raise
    finally:
        offsets = getattr(app, "offsets", None)
        if offsets is not None:
            offsets.persist()
        store.close()  # flushes and writes the checkpoint
    log.info("stopped cleanly")
    return 0
