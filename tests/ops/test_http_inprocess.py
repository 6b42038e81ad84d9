"""The HTTP service inside one trio run, next to an App: /readyz follows the readiness state
(listeners not up yet → 503, up → 200, shutting down → 503), and the shutdown trigger ends the
server; a port in use is a startup error naming the port."""
from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
import trio

from gateway.app import StartupError, build_app
from gateway.config import GatewayConfig
from gateway.ops.http import HttpService, bind_http
from gateway.services import start_services
from gateway_process import free_port


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_readiness_follows_the_gateway_and_shutdown_stops_the_server(tmp_path):
    port = free_port()
    cfg = GatewayConfig(data_dir=str(tmp_path / "data"), http_port=port)

    async def main():
        app = build_app(cfg)
        try:
            async with trio.open_nursery() as nursery:
                await start_services(app, nursery)
                served = trio.Event()

                async def http():
                    await HttpService(app).run()
                    served.set()  # returned: the shutdown trigger ended it

                nursery.start_soon(http)
                await trio.sleep(0.5)
                assert await trio.to_thread.run_sync(_status, port, "/healthz") == 200
                assert await trio.to_thread.run_sync(_status, port, "/readyz") == 503
                app.stats.listeners_up = True
                assert await trio.to_thread.run_sync(_status, port, "/readyz") == 200
                app.stats.stop()
                with trio.fail_after(10):
                    await served.wait()
                with pytest.raises(OSError):
                    await trio.to_thread.run_sync(socket.create_connection, ("127.0.0.1", port), 2)
                nursery.cancel_scope.cancel()
        finally:
            app.store.close()

    trio.run(main)


def test_http_port_in_use_is_a_startup_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(StartupError, match=fr"cannot listen for http on 127.0.0.1:{port} \(--http-port\): address already in use"):
            bind_http(GatewayConfig(http_port=port))
    assert bind_http(GatewayConfig()) is None  # no --http-port: no HTTP server
