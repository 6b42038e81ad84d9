"""Fixtures of the semantics tests (imported by name: a second conftest.py would shadow tests/conftest.py)."""
import time

import pytest
import trio

import store


class MiniApp:
    """A store in the place of gateway.app.App, for tests of one semantics service."""

    def __init__(self, s):
        self.store = s


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
    from gateway.app import build_app
    from gateway.config import GatewayConfig

    cfg = GatewayConfig(data_dir=str(tmp_path / "gw"), kafka_port=free_port(), remoting_port=free_port(),
                        **settings)
    app = build_app(cfg)
    st = app.store
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


def poll_settled(consumer, want: int, timeout: float = 30.0, settle: float = 2.0, poll: float = 0.3) -> list:
    """Messages a confluent-kafka consumer polls until `want` have come (or `timeout`), then `settle`
    seconds more, so anything extra (a duplicate) shows up too. The caller closes the consumer."""
    got = []
    deadline = time.monotonic() + timeout
    until = None
    while time.monotonic() < (until or deadline):
        m = consumer.poll(poll)
        if m is not None and m.error() is None:
            got.append(m)
        if until is None and len(got) >= want:
            until = time.monotonic() + settle
    return got


def confluent_group_read(g, group: str, topic: str, want: int, commit: bool) -> list[str]:
    """A subscribed confluent-kafka consumer of `group` (earliest when nothing is committed): the
    values it reads, 2 s past `want` for anything extra; commits its position when asked."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        got = poll_settled(c, want)
        if commit:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return sorted(m.value().decode() for m in got)


def native_lite_read(g, group: str, topic: str, want: int) -> list[str]:
    """A subscribed (group-balanced) native lite pull consumer of `group`, first offset when nothing
    is committed: what it reads (2 s past `want` for anything extra), then commit() of the polled
    positions."""
    from client import ConsumeFrom, LitePullConsumer

    c = LitePullConsumer(group, g.namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe(topic)
    c.start()
    got: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < want and time.monotonic() < deadline:
            got += [m.body.decode() for m in c.poll(1.0)]
        got += [m.body.decode() for m in c.poll(2.0)]
        c.commit()
    finally:
        c.shutdown()
    return sorted(got)
