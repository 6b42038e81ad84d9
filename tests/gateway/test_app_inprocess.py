"""The App built in-process over a tmp dir, its background services run under trio's MockClock
(autojump: every wait ends at once) with a wall clock that moves with it: timer-driven
behaviour (delay levels, transaction check-back, retention, offset persistence, retried
config writes) is checked in mock time, without real waiting."""
import errno
import json
import os

import trio
import trio.testing

from gateway.app import build_app
from gateway.config import GatewayConfig
from gateway.services import RETENTION_CHECK_INTERVAL, start_services
from semantics.clock import TrioWallClock
from semantics.offsets import PERSIST_INTERVAL
from semantics.routing import HALF_TOPIC, OP_TOPIC, route
from store import Message
from store.config import ConfigDir


def run_app(tmp_path, body, **settings):
    """`await body(app)` with the App's services running, all in mock time; returns its result."""
    cfg = GatewayConfig(data_dir=str(tmp_path / "data"), **settings)

    async def main():
        app = build_app(cfg, clock=TrioWallClock())
        try:
            async with trio.open_nursery() as nursery:
                await start_services(app, nursery)
                result = await body(app)
                nursery.cancel_scope.cancel()
        finally:
            app.store.close()
        return result

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_level_3_delay_is_delivered_after_mock_10_s(tmp_path):
    async def body(app):
        start = trio.current_time()
        app.store.append(route(Message("Later", 0, b"x", {"DELAY": "3"}), app.clock.now_ms(), app.delay_levels))
        await trio.sleep(9.5)
        early = app.store.max_offset("Later", 0)
        await trio.sleep(1.0)
        return early, app.store.max_offset("Later", 0), trio.current_time() - start

    early, late, elapsed = run_app(tmp_path, body)
    assert (early, late) == (0, 1)
    assert 10.5 <= elapsed < 11  # mock seconds


def test_unended_half_is_checked_each_interval_then_discarded(tmp_path):
    checks = []

    async def body(app):
        async def checker(group, half, _body):
            checks.append((group, half.queue_offset, trio.current_time()))
            return True

        app.transactions.checkers["test"] = checker
        msg = Message("Pay", 0, b"tx", {"TRAN_MSG": "true", "PGROUP": "PG"}, sys_flag=0x4)
        app.store.append(route(msg, app.clock.now_ms(), app.delay_levels))
        await trio.sleep(29)
        before = list(checks)
        await trio.sleep(60)  # checks at 30 s and 60 s
        checked = list(checks)
        undecided = app.transactions.outcome(0)
        await trio.sleep(2)  # the 90 s round discards it (check_max=2)
        ops = [m.properties["TRAN_OUTCOME"] for _o, m in app.store.read(OP_TOPIC, 0, 0).entries]
        return before, checked, undecided, app.transactions.outcome(0), ops

    before, checked, undecided, outcome, ops = run_app(tmp_path, body, transaction_check_max=2)
    assert before == []
    assert [(g, off) for g, off, _t in checked] == [("PG", 0), ("PG", 0)]
    assert [round(t) for _g, _off, t in checked] == [30, 60]
    assert undecided is None
    assert outcome in ("discard", "decided") and ops == ["discard"]


def test_retention_deletes_an_old_file_once_mock_time_passes_file_reserved_time(tmp_path):
    async def body(app):
        for i in range(60):  # ~4 CommitLog files of 4 KiB
            app.store.append(Message("Old", 0, b"%03d" % i + b"x" * 150))
        await trio.sleep(RETENTION_CHECK_INTERVAL - 1)
        before = app.store.min_offset("Old", 0)
        await trio.sleep(2)
        return before, app.store.min_offset("Old", 0), app.store.max_offset("Old", 0)

    # 0.01 h = 36 s: the files are old enough at the first retention check (60 s)
    before, after, top = run_app(tmp_path, body, commitlog_file_size=4096, file_reserved_hours=0.01)
    assert before == 0
    assert 0 < after < top == 60


def test_offsets_persist_off_loop_and_a_failed_write_is_retried(tmp_path, monkeypatch, caplog):
    real_write = ConfigDir.write
    failures = []

    def flaky_write(self, name, obj):
        if name.startswith("consumerOffset") and not failures:
            failures.append(name)
            raise OSError(errno.EMFILE, "Too many open files")
        real_write(self, name, obj)

    monkeypatch.setattr(ConfigDir, "write", flaky_write)
    path = tmp_path / "data" / "config" / "consumerOffset.json"

    def on_disk():
        return json.loads(path.read_text())["offsetTable"] if path.exists() else None

    async def body(app):
        app.offsets.commit("G", "T", 0, 7)
        await trio.sleep(PERSIST_INTERVAL - 0.1)
        before = on_disk()
        # The writer works in a thread while mock time jumps on: wait for the file, not a time.
        for _ in range(100_000):
            if on_disk() is not None:
                break
            await trio.sleep(0.01)
        return before, on_disk()

    before, after = run_app(tmp_path, body)
    assert before is None and failures == ["consumerOffset.json"]
    assert after == {"T@G": {"0": 7}}
    assert "config write failed" in caplog.text
    assert not [f for f in os.listdir(path.parent) if ".tmp." in f]


def test_sync_mode_commit_is_on_disk_when_wait_durable_returns(tmp_path):
    path = tmp_path / "data" / "config" / "consumerOffset.json"

    async def body(app):
        app.offsets.commit("G", "T", 1, 9)
        await app.offsets.wait_durable()
        return json.loads(path.read_text())["offsetTable"]

    assert run_app(tmp_path, body, flush="sync") == {"T@G": {"1": 9}}


def test_half_topic_exists_and_app_is_frozen(tmp_path):
    async def body(app):
        try:
            app.extra = 1
        except (AttributeError, TypeError):
            frozen = True
        else:
            frozen = False
        return frozen, app.store.topics.get(HALF_TOPIC) is not None, app.kafka is not None

    assert run_app(tmp_path, body) == (True, True, True)
