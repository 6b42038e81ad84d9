"""The topic table, producer ids and the transactional-id table are written by the App's off-loop
config writer: a change is not written on the event loop, and the calls that answer clients wait
until it is on disk (or, for topics, until a write attempt failed: kept in memory and retried)."""
import errno
import json
import os

import pytest
import trio

import store
from gateway.kafka.txn import init_transactional
from semantics.producer_state import CONFIG_NAME, ID_BLOCK
from store.topic_journal import TopicJournal, apply_record, decode_records
from store.txn_id_journal import read_table
from tests.gateway.test_app_inprocess import run_app


def _doc(tmp_path, name):
    path = tmp_path / "data" / "config" / name
    return json.loads(path.read_text()) if path.exists() else None


def _topics_on_disk(tmp_path):
    """topics.json with the topic journal's records applied (what a restart would load)."""
    table = dict((_doc(tmp_path, "topics.json") or {}).get("topicConfigTable", {}))
    journal = tmp_path / "data" / "config" / "topics.journal"
    for record in decode_records(journal.read_bytes())[0] if journal.exists() else []:
        apply_record(table, record)
    return set(table)


def test_created_topic_is_written_off_loop_and_on_disk_when_topics_written_returns(tmp_path):
    """--flush sync: the writer's thread appends and fsyncs the change before the answer."""
    async def body(app):
        await app.topics_written()  # the system topics of the first start
        app.store.topics.create("Fresh", read_queues=3, write_queues=3)
        during = _topics_on_disk(tmp_path)  # no await since the create: the loop did not write it
        await app.topics_written()
        return during, _topics_on_disk(tmp_path)

    during, after = run_app(tmp_path, body, flush="sync")
    assert "Fresh" not in during
    assert "Fresh" in after


def test_with_async_flush_a_created_topic_is_in_the_journal_at_once_and_fsynced_by_the_flusher(
        tmp_path, monkeypatch):
    """--flush async: the create appends its record on the spot (a kill -9 keeps it) and leaves
    nothing to wait for; the store's flush (every flush interval) fdatasyncs the journal."""
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))

    async def body(app):
        await app.topics_written()
        await trio.to_thread.run_sync(app.store.flush)
        journal = app.store.topics._journal
        with app.store._flusher.sync_lock:  # no background flush meanwhile
            before, synced[:] = app.store.topics.submission, []
            app.store.topics.create("Fresh", read_queues=3, write_queues=3)
            during, in_create = _topics_on_disk(tmp_path), list(synced)
        await trio.to_thread.run_sync(app.store.flush)  # what the async flush service runs
        return during, app.store.topics.submission - before, in_create, journal._fd in synced

    during, submitted, in_create, flushed = run_app(tmp_path, body)
    assert "Fresh" in during and submitted == 0 and in_create == []
    assert flushed


def test_a_failed_topic_write_ends_the_wait_and_is_retried(tmp_path, monkeypatch):
    real_append = TopicJournal._append
    failures = []

    def flaky_append(self, data):
        if b'"Full"' in data and not failures:
            failures.append("topics.journal")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, data)

    monkeypatch.setattr(TopicJournal, "_append", flaky_append)

    async def body(app):
        app.store.topics.create("Full")
        await app.topics_written()  # returns after the failed attempt: the topic stays in memory
        failed = "Full" in _topics_on_disk(tmp_path)
        app.store.topics.create("Later")
        await app.topics_written()
        return failed, _topics_on_disk(tmp_path), app.store.topics.get("Full") is not None

    failed, after, in_memory = run_app(tmp_path, body, flush="sync")
    assert failures == ["topics.journal"]
    assert not failed and in_memory
    assert {"Full", "Later"} <= after


def test_producer_ids_are_reserved_a_block_at_a_time_and_never_reused_after_a_restart(tmp_path):
    async def first(app):
        producers = app.kafka.producers
        ids = [producers.allocate() for _ in range(3)]
        await producers.reserved()
        return ids, _doc(tmp_path, CONFIG_NAME + ".json")

    ids, reserved = run_app(tmp_path, first)
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    assert reserved == {"next": ids[0] + ID_BLOCK}

    async def second(app):
        return app.kafka.producers.allocate()

    assert run_app(tmp_path, second) == ids[0] + ID_BLOCK


def test_init_transactional_answers_once_the_epoch_is_on_disk(tmp_path):
    async def body(app):
        first = await init_transactional(app, "tx-a", 60_000)
        second = await init_transactional(app, "tx-a", 60_000)
        return first, second, read_table(str(tmp_path / "data" / "config"))[0]

    first, second, table = run_app(tmp_path, body)
    assert second["producer_id"] == first["producer_id"]
    assert second["producer_epoch"] == first["producer_epoch"] + 1
    assert table["tx-a"]["epoch"] == second["producer_epoch"]


def test_a_store_opened_without_the_app_writes_topics_in_place(tmp_path):
    st = store.open(str(tmp_path / "data"))
    try:
        st.topics.create("Direct")
        assert "Direct" in _topics_on_disk(tmp_path)
    finally:
        st.close()


@pytest.mark.parametrize("flush", ["sync", "async"])
def test_topics_created_through_both_protocols_survive_kill_9_right_after_the_answer(gateway_factory, flush):
    from confluent_kafka.admin import AdminClient, NewTopic

    from client import Admin

    g = gateway_factory(flush=flush)
    kafka = AdminClient({"bootstrap.servers": f"127.0.0.1:{g.kafka_port}"})
    for future in kafka.create_topics([NewTopic("ByKafka", 3, 1)]).values():
        future.result(10)
    admin = Admin(g.namesrv).start()
    try:
        admin.create_topic("ByRemoting", queues=2)
    finally:
        admin.shutdown()
    g.kill9()
    g.start()
    kafka_topics = AdminClient({"bootstrap.servers": f"127.0.0.1:{g.kafka_port}"}).list_topics(timeout=10).topics
    assert len(kafka_topics["ByKafka"].partitions) == 3
    assert "ByRemoting" in kafka_topics
