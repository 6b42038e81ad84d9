"""Fixtures of the semantics tests (imported by name: a second conftest.py would shadow tests/conftest.py)."""
import time

import pytest
import trio

import store


class MiniApp:
    """The parts of gateway.server.App the semantics services use, around a real store."""

    def __init__(self, s):
        self.store = s
        self.state = {}

    async def durable(self, end_offset):
        return None


@pytest.fixture
def st(tmp_path):
    s = store.open(str(tmp_path / "data"), store.StoreConfig(commitlog_file_size=1 << 20, cq_units_per_file=1000))
    yield s
    s.close()


@pytest.fixture
def reopen(tmp_path):
    """reopen(old_store) -> a new Store over the same directory (the old one is closed)."""
    def _reopen(old):
        old.close()
        return store.open(str(tmp_path / "data"), store.StoreConfig(commitlog_file_size=1 << 20, cq_units_per_file=1000))
    return _reopen


@pytest.fixture
def app(st):
    return MiniApp(st)


def wait_for(pred, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def run_gateway(tmp_path, client_part, **settings):
    """The gateway served in this process with semantics `settings` the command line does not
    offer yet (short check intervals, short delay levels), real sockets, while
    `client_part(namesrv, app)` runs in a worker thread; returns what it returns.
    The server runs in the main thread because it listens for signals."""
    from gateway_process import free_port, wait_port
    from gateway import server
    from gateway.config import GatewayConfig
    from semantics import install_services

    cfg = GatewayConfig(data_dir=str(tmp_path / "gw"), kafka_port=free_port(), remoting_port=free_port())
    for name, value in settings.items():
        setattr(cfg, name, value)
    st = server.open_store(cfg)
    app = server.App(cfg, st)
    install_services(app)
    outcome = {}

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server._serve, app)
            await trio.to_thread.run_sync(wait_port, cfg.remoting_port)
            try:
                outcome["value"] = await trio.to_thread.run_sync(
                    client_part, f"127.0.0.1:{cfg.remoting_port}", app)
            finally:
                nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    finally:
        st.close()
    return outcome["value"]
