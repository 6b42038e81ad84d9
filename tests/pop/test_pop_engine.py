"""The pop engine over a real store: leases, acks, redelivery, dead letters, filters, restart."""
from __future__ import annotations

import pytest
import trio

import store
from pop_env import Clock, open_store
from semantics.offsets import OffsetTable
from semantics.pop import INIT_MAX, PopEngine, Receipt
from semantics.sql92 import subscription_filter

G, T = "g1", "T"


@pytest.fixture
def env(tmp_path):
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(10):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i, properties={"TAGS": "a" if i % 2 == 0 else "b"}))
    clock = Clock()
    offsets = OffsetTable(s)
    yield s, clock, offsets, PopEngine(s, offsets, clock=clock)
    s.close()


def receipts(result, group=G, topic=T):
    return [Receipt(group, topic, 0, d.offset, result.pop_time) for d in result.deliveries]


def test_acquire_ack_advances_committed_offset(env):
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 4, 30_000)
    assert [d.offset for d in got.deliveries] == [0, 1, 2, 3]
    assert [d.message.body for d in got.deliveries] == [b"m0", b"m1", b"m2", b"m3"]
    assert got.rest == 6
    r = receipts(got)
    assert eng.ack([r[1]])[0] == 1
    assert offsets.fetch(G, T, 0) is None or offsets.fetch(G, T, 0) == 0
    assert eng.ack([r[0], r[2]])[0] == 2
    assert offsets.fetch(G, T, 0) == 3
    # the next acquire does not see in-flight or acknowledged records
    assert [d.offset for d in eng.acquire(G, T, 0, 32, 30_000).deliveries] == [4, 5, 6, 7, 8, 9]


def test_bad_receipts_change_nothing(env):
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 2, 30_000)
    r0, r1 = receipts(got)
    before = eng.state(G, T, 0).to_json()
    assert eng.ack([Receipt("other", T, 0, 0, got.pop_time)])[0] == 0  # another group
    assert eng.ack([Receipt(G, T, 0, 5, got.pop_time)])[0] == 0  # never delivered
    assert eng.ack([Receipt(G, T, 0, 0, got.pop_time + 1)])[0] == 0  # wrong pop time
    assert eng.renew(Receipt(G, T, 0, 7, got.pop_time), 1000) is None
    assert eng.state(G, T, 0).to_json() == before
    assert eng.ack([r0])[0] == 1
    assert eng.ack([r0])[0] == 0  # duplicate
    clock.now += 30_001
    assert eng.ack([r1])[0] == 0  # expired
    assert eng.renew(r1, 1000) is None


def test_redelivery_after_expiry_counts_deliveries(env):
    s, clock, offsets, eng = env
    first = eng.acquire(G, T, 0, 2, 100)
    assert eng.acquire(G, T, 0, 2, 100).deliveries[0].offset == 2  # 0 and 1 are invisible
    clock.now += 101
    again = eng.acquire(G, T, 0, 2, 100)
    assert [(d.offset, d.count) for d in again.deliveries] == [(0, 2), (1, 2)]
    assert eng.ack(receipts(first))[0] == 0  # the first receipts are stale now
    assert eng.ack(receipts(again))[0] == 2


def test_renew_and_release(env):
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 2, 100)
    r0, r1 = receipts(got)
    deadline, _ = eng.renew(r0, 10_000)
    assert deadline == clock.now + 10_000
    assert eng.release([r1])[0] == 1
    clock.now += 200
    again = eng.acquire(G, T, 0, 1, 100)
    assert [(d.offset, d.count) for d in again.deliveries] == [(1, 2)]
    assert eng.ack([r0])[0] == 1  # the renewed receipt is still valid


def test_dead_letter_after_max_deliveries(env):
    s, clock, offsets, eng = env
    dead = []
    for _ in range(3):
        got = eng.acquire(G, T, 0, 1, 10, max_deliveries=3, dead_letter=lambda g, m, o: dead.append((g, o)))
        assert [d.offset for d in got.deliveries] == [0]
        clock.now += 11
    got = eng.acquire(G, T, 0, 1, 10, max_deliveries=3, dead_letter=lambda g, m, o: dead.append((g, o)))
    assert dead == [(G, 0)]
    assert [d.offset for d in got.deliveries] == [1]
    assert eng.state(G, T, 0).start == 1


def test_reject_sends_to_sink_and_finishes(env):
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 1, 1000)
    sunk = []
    assert eng.reject(receipts(got), lambda g, m, o: sunk.append(m.body))[0] == 1
    assert sunk == [b"m0"]
    assert eng.state(G, T, 0).start == 1


def test_tag_and_sql_filters_skip_for_good(env):
    s, clock, offsets, eng = env
    tags = subscription_filter("TAG", "a")
    got = eng.acquire(G, T, 0, 32, 1000, tag_filter=tags.matches_code,
                      keep=lambda m, o: tags.matches_properties(m.properties))
    assert [d.offset for d in got.deliveries] == [0, 2, 4, 6, 8]
    eng.ack(receipts(got))
    assert eng.state(G, T, 0).start == 10
    sql = subscription_filter("SQL92", "TAGS = 'b'")
    got = eng.acquire("g2", T, 0, 32, 1000, keep=lambda m, o: sql.matches_properties(m.properties))
    assert [d.offset for d in got.deliveries] == [1, 3, 5, 7, 9]


def test_window_bounds_memory(tmp_path):
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(50):
        s.append(store.Message(topic=T, queue_id=0, body=b"x"))
    eng = PopEngine(s, max_window=8, clock=Clock())
    assert len(eng.acquire(G, T, 0, 32, 1000).deliveries) == 8
    assert eng.acquire(G, T, 0, 32, 1000).deliveries == []
    s.close()


def test_init_mode_max_and_committed_offset(env):
    s, clock, offsets, eng = env
    assert eng.acquire("late", T, 0, 4, 1000, init_mode=INIT_MAX).deliveries == []
    offsets.commit("resumed", T, 0, 7)
    assert [d.offset for d in eng.acquire("resumed", T, 0, 4, 1000).deliveries] == [7, 8, 9]


@pytest.mark.parametrize("snapshot", [False, True])
def test_restart_replays_state(tmp_path, snapshot):
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(6):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i))
    clock = Clock()
    eng = PopEngine(s, clock=clock)
    got = eng.acquire(G, T, 0, 4, 5_000)
    r = receipts(got)
    eng.ack([r[0], r[2]])
    if snapshot:
        eng.snapshot()
    deadline, _ = eng.renew(r[3], 60_000)
    state_before = eng.state(G, T, 0).to_json()
    s.close()  # the log is in the CommitLog; nothing else is written at close

    s = open_store(tmp_path)
    eng = PopEngine(s, clock=clock)
    assert eng.state(G, T, 0).to_json() == state_before
    assert eng.ack([r[0]])[0] == 0  # acknowledged before the restart: stays finished
    # new records continue after the in-flight ones; offset 1 comes back after its deadline
    more = eng.acquire(G, T, 0, 32, 5_000)
    assert [d.offset for d in more.deliveries] == [4, 5]
    assert eng.ack(receipts(more))[0] == 2
    clock.now += 5_001
    again = eng.acquire(G, T, 0, 32, 5_000)
    assert [(d.offset, d.count) for d in again.deliveries] == [(1, 2)]
    assert eng.ack([r[3]])[0] == 1  # renewed before the restart, still leased
    assert again.pop_time > got.pop_time
    s.close()


def test_timer_service_wakes_at_deadline(env):
    s, clock, offsets, eng = env
    woken = []
    eng.notify = lambda topic, qid: woken.append((topic, qid, clock.now))

    async def main():
        async with trio.open_nursery() as nursery:
            await nursery.start(eng.run)
            eng.acquire(G, T, 0, 1, 50)
            await trio.sleep(0)
            assert woken == []
            clock.now += 50
            eng._wake.set()  # stands for the sleep ending at the deadline
            await trio.sleep(0.01)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert woken == [(T, 0, clock.now)]


def test_records_gone_with_retention_leave_the_window(env):
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 3, 1000)
    state = eng.state(G, T, 0)
    state.apply({"k": "move", "s": 2})  # what _state logs when the store's min offset passed 2
    assert state.start == 2 and sorted(state.leases) == [2]
    assert eng.ack(receipts(got))[0] == 1  # only offset 2 is still leased
    assert state.start == 3


def test_filtered_skips_replay_after_restart(tmp_path):
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(10):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i, properties={"TAGS": "a" if i in (3, 7) else "b"}))
    tags = subscription_filter("TAG", "a")
    eng = PopEngine(s, clock=Clock())
    got = eng.acquire(G, T, 0, 32, 1000, tag_filter=tags.matches_code,
                      keep=lambda m, o: tags.matches_properties(m.properties))
    assert [d.offset for d in got.deliveries] == [3, 7]
    before = eng.state(G, T, 0).to_json()
    assert before["start"] == 3 and before["done"] == [4, 5, 6, 8, 9]
    s.close()
    s = open_store(tmp_path)
    assert PopEngine(s, clock=Clock()).state(G, T, 0).to_json() == before
    s.close()


def test_timer_service_writes_the_snapshot_after_an_op(env):
    from semantics import pop, pop_log
    s, clock, offsets, eng = env

    async def main():
        async with trio.open_nursery() as nursery:
            await nursery.start(eng.run)
            eng.acquire(G, T, 0, 1, 10 * pop.SNAPSHOT_AFTER_MS)
            await trio.sleep(0.01)
            assert s.read_config(pop_log.SNAPSHOT_FILE, None) is None
            clock.now += pop.SNAPSHOT_AFTER_MS
            eng._wake.set()  # stands for the sleep ending
            await trio.sleep(0.01)
            nursery.cancel_scope.cancel()

    trio.run(main)
    doc = s.read_config(pop_log.SNAPSHOT_FILE, None)
    assert doc["queues"][0]["leases"][0][0] == 0


def test_whole_batches_lease_to_the_end_of_a_stored_batch(tmp_path):
    """Kafka's batch-optimized acquire: new records up to the end of the stored batch holding the
    last one, past max_n; `messages=False` decodes nothing."""
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    s.append(store.Message(topic=T, queue_id=0, body=b"x" * 50, batch_count=5))  # offsets 0-4, one entry
    s.append(store.Message(topic=T, queue_id=0, body=b"single"))  # offset 5
    eng = PopEngine(s, clock=Clock())
    got = eng.acquire(G, T, 0, 2, 1000, messages=False, whole_batches=True)
    assert [(d.offset, d.message) for d in got.deliveries] == [(o, None) for o in range(5)]
    assert [d.offset for d in eng.acquire(G, T, 0, 1, 1000, whole_batches=True).deliveries] == [5]
    strict = PopEngine(s, clock=Clock())
    assert [d.offset for d in strict.acquire("g2", T, 0, 2, 1000).deliveries] == [0, 1]
    s.close()


def test_ops_name_offsets_as_ranges_and_old_lists_still_replay(env):
    import json

    from semantics.pop_log import LOG_TOPIC
    from semantics.pop_state import QueueState
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 6, 30_000)
    eng.ack(receipts(got)[1:5])
    ops = [json.loads(m.body) for _, m in s.iterate(LOG_TOPIC, 0)]
    assert [(op["k"], op.get("r")) for op in ops[-2:]] == [("pop", [[0, 6]]), ("ack", [[1, 5]])]
    old = QueueState(0)  # the form logged before ranges
    old.apply({"k": "pop", "o": [0, 1, 2], "s": [], "n": 3, "d": 5, "p": 1})
    old.apply({"k": "ack", "o": [0, 2]})
    assert (old.start, sorted(old.leases), sorted(old.done)) == (1, [1], [2])


def test_acks_of_one_turn_are_logged_as_one_op(env):
    """ack_together: the acks gathered in one scheduling turn share one logged op; a receipt acked
    twice in the turn, or naming nothing, counts once / not at all; the next turn logs anew."""
    import json

    from semantics.pop_log import LOG_TOPIC
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 6, 30_000)
    r = receipts(got)
    before = s.max_offset(LOG_TOPIC, 0)
    answers = {}

    async def main():
        async def one(name, batch):
            answers[name] = await eng.ack_together(batch)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a", [r[0], r[1]])
            nursery.start_soon(one, "b", [r[1], r[2]])  # r[1] already in this turn
            nursery.start_soon(one, "c", [Receipt(G, T, 0, 5, got.pop_time + 1)])  # stale pop time
        answers["d"] = await eng.ack_together([r[3]])
    trio.run(main)
    assert sorted([answers["a"][0], answers["b"][0]]) == [1, 2]  # whichever ran first got r[1]
    assert (answers["c"][0], answers["d"][0]) == (0, 1)
    ops = [json.loads(m.body) for _, m in s.iterate(LOG_TOPIC, 0, start=before)]
    assert [(op["k"], op["r"]) for op in ops] == [("ack", [[0, 3]]), ("ack", [[3, 4]])]
    assert answers["a"][1] == answers["b"][1] > 0
    assert offsets.fetch(G, T, 0) == 4 and eng.ack([r[1]])[0] == 0


def test_raw_acquire_hands_over_stored_bytes_and_decodes_inner_batches(tmp_path):
    """raw=True: a plain new record is its stored bytes, not decoded; an inner batch (a Kafka record
    batch) is still decoded, and a redelivery too."""
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    s.append(store.Message(topic=T, queue_id=0, body=b"plain", properties={"TAGS": "a"}))
    s.append(store.Message(topic=T, queue_id=0, body=b"x" * 30, batch_count=3))
    clock = Clock()
    eng = PopEngine(s, clock=clock)
    got = eng.acquire(G, T, 0, 4, 1000, raw=True)
    first = got.deliveries[0]
    assert first.message is None and first.raw == s.read(T, 0, 0, max_count=1).entries[0][1].raw
    assert [(d.offset, d.raw, d.message.batch_count) for d in got.deliveries[1:]] == [(1, None, 3), (2, None, 3),
                                                                                        (3, None, 3)]
    clock.now += 1001
    again = eng.acquire(G, T, 0, 1, 1000, raw=True).deliveries[0]
    assert (again.offset, again.count, again.message.body) == (0, 2, b"plain")
    s.close()


def test_raw_acquire_filters_on_the_stored_properties_as_the_decoding_keep_does(env):
    """raw_keep: the exact check of a plain record on its stored properties (no decode); the records
    kept and their bytes are those of the decoding path with the same filter."""
    s, clock, offsets, eng = env
    for expression_type, expression in (("SQL92", "TAGS = 'b'"), ("TAG", "a")):
        f = subscription_filter(expression_type, expression)
        keep = lambda m, o, f=f: f.matches_properties(m.properties)  # noqa: E731
        decoded = eng.acquire("decoding-" + expression, T, 0, 32, 1000, keep=keep)
        raw = eng.acquire("raw-" + expression, T, 0, 32, 1000, keep=keep, raw=True, raw_keep=f.matches_properties)
        assert [d.offset for d in raw.deliveries] == [d.offset for d in decoded.deliveries]
        assert len(raw.deliveries) == 5
        assert [d.raw for d in raw.deliveries] == [d.message.raw for d in decoded.deliveries]
        assert all(d.message is None for d in raw.deliveries)
        assert eng.state("raw-" + expression, T, 0).next == 10  # the others skipped for good


def test_raw_acquire_skips_a_corrupt_entry_as_a_decoding_read_does(tmp_path):
    import glob

    import codec.remoting.message as M
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for body in (b"good0", b"flipped", b"good2"):
        s.append(store.Message(topic=T, queue_id=0, body=body))
    s.flush()
    phys = s.units(T, 0, 1, 1)[0][0]
    path = sorted(glob.glob(str(tmp_path / "data" / "commitlog" / "*")))[0]
    with open(path, "r+b") as f:
        f.seek(phys + M.BODY_AT)
        f.write(b"F")
    got = PopEngine(s, clock=Clock()).acquire(G, T, 0, 3, 1000, raw=True)
    assert [d.offset for d in got.deliveries] == [0, 2] and s.is_quarantined(phys)
    s.close()


def test_gathered_acks_skip_a_lease_that_changed_before_the_commit(env):
    s, clock, offsets, eng = env
    got = eng.acquire(G, T, 0, 2, 1000)
    pending = {}
    assert eng.gather_acks(receipts(got), pending) == 2
    assert eng.gather_acks(receipts(got)[:1], pending) == 0  # already gathered
    clock.now += 1001
    again = eng.acquire(G, T, 0, 1, 1000)  # offset 0 delivered again: a new lease
    assert [d.offset for d in again.deliveries] == [0]
    eng.commit_acks(pending)
    state = eng.state(G, T, 0)
    assert sorted(state.leases) == [0] and state.leases[0].pop_time == again.pop_time and 1 in state.done


def test_groups_and_queues_views(env):
    """The read views the console uses: groups with POP state (popped or reset), and their queues."""
    s, clock, offsets, eng = env
    assert eng.groups() == set()
    eng.acquire(G, T, 0, 1, 30_000)
    eng.reset("other", T, 0, 5)
    assert eng.groups() == {G, "other"}
    assert eng.queues("other") == [(T, 0)]
    eng.drop("other", T, 0)
    assert eng.groups() == {G}
