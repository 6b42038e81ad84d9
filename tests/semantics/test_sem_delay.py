"""The delay scheduler against a real store: due delivery, ordering, persistence, crash recovery."""
import time

import trio

from codec.remoting.message import Message, tag_hash
from semantics.delay import DelayScheduler
from semantics.routing import SCHEDULE_TOPIC, DelayLevels, route
from semantics_fixtures import app, reopen, st  # noqa: F401 - fixtures

NOW = int(time.time() * 1000)
LEVELS = DelayLevels("1s 5s 10s")


def send(s, topic="T", qid=1, now=NOW, **props):
    born = {"born_timestamp": props.pop("born_timestamp")} if "born_timestamp" in props else {}
    m = route(Message(topic=topic, queue_id=qid, body=props.pop("body", b"hi"), properties=props, **born), now, LEVELS)
    return s.append(m)


def real(s, topic="T", qid=1):
    return [m for _o, m in s.read(topic, qid, 0, 1000).entries]


def test_delivers_when_due_not_before(st):
    send(st, DELAY="2", TAGS="TagA", KEYS="k1", UNIQ_KEY="U1")
    assert st.max_offset(SCHEDULE_TOPIC, 1) == 1 and st.max_offset("T", 1) == 0
    d = DelayScheduler(st, LEVELS)
    count, upcoming = d.deliver_due(NOW + 4999)
    assert count == 0 and upcoming == NOW + 5000
    assert st.max_offset("T", 1) == 0
    count, upcoming = d.deliver_due(NOW + 5000)
    assert count == 1 and upcoming is None
    [m] = real(st)
    assert m.topic == "T" and m.queue_id == 1 and m.body == b"hi"
    assert "DELAY" not in m.properties
    assert m.properties["REAL_TOPIC"] == "T" and m.properties["UNIQ_KEY"] == "U1"
    assert m.properties["SCHEDULE_OFFSET"] == "1:0"
    assert st.units("T", 1, 0, 1)[0][2] == tag_hash("TagA")  # tags code from TAGS again
    assert [x.topic for x in st.query_by_key("T", "k1")] == ["T"]
    assert d.deliver_due(NOW + 10_000) == (0, None)  # not twice


def test_levels_and_timers_in_due_order(st):
    send(st, DELAY="3", body=b"L3")                       # due +10 s
    send(st, DELAY="1", body=b"L1")                       # due +1 s
    send(st, __STARTDELIVERTIME=str(NOW + 7000), body=b"T7")
    send(st, __STARTDELIVERTIME=str(NOW + 3000), body=b"T3")
    send(st, DELAY="99", body=b"Lmax")                   # capped to level 3
    d = DelayScheduler(st, LEVELS)
    seen = []
    for t in (500, 1000, 3000, 7000, 9999, 10_000):
        d.deliver_due(NOW + t)
        seen.append(sorted(m.body for m in real(st)))
    assert seen == [
        [], [b"L1"], [b"L1", b"T3"], [b"L1", b"T3", b"T7"], [b"L1", b"T3", b"T7"],
        [b"L1", b"L3", b"Lmax", b"T3", b"T7"],
    ]


def test_progress_survives_restart(st, reopen):
    for i in range(5):
        send(st, DELAY="1", body=b"%d" % i)
    send(st, __STARTDELIVERTIME=str(NOW + 500), body=b"t1")
    send(st, __STARTDELIVERTIME=str(NOW + 50_000), body=b"t2")
    send(st, __STARTDELIVERTIME=str(NOW + 600), body=b"t3")
    d = DelayScheduler(st, LEVELS)
    d.deliver_due(NOW + 1000)
    d.persist()
    doc = st.read_config("delayOffset.json")
    assert doc["offsetTable"]["1"] == 5 and doc["offsetTable"]["4"] == 1
    assert doc["timerLoaded"] == 3 and doc["timerNext"] == [NOW + 50_000, 1]
    st = reopen(st)
    send(st, DELAY="1", body=b"5", now=NOW + 1000)
    d2 = DelayScheduler(st, LEVELS)
    assert d2.recover(NOW + 60_000) == 0
    d2.deliver_due(NOW + 60_000)
    bodies = sorted(m.body for m in real(st))
    assert bodies == [b"0", b"1", b"2", b"3", b"4", b"5", b"t1", b"t2", b"t3"]


def test_crash_between_delivery_and_persist_delivers_once(st, reopen):
    for i in range(3):
        send(st, DELAY="1", body=b"%d" % i)
    send(st, __STARTDELIVERTIME=str(NOW + 800), body=b"t")
    d = DelayScheduler(st, LEVELS)
    d.persist()
    assert d.deliver_due(NOW + 1000)[0] == 4
    # crash: the progress file still says nothing was delivered
    st = reopen(st)
    assert st.read_config("delayOffset.json")["offsetTable"]["1"] == 0
    d2 = DelayScheduler(st, LEVELS)
    assert d2.recover(NOW + 2000) == 4
    assert d2.deliver_due(NOW + 2000)[0] == 0
    assert sorted(m.body for m in real(st)) == [b"0", b"1", b"2", b"t"]


def test_partial_round_recovers_the_rest(st, reopen):
    for i in range(3):
        send(st, DELAY="1", body=b"%d" % i)
    d = DelayScheduler(st, LEVELS)
    d.persist()
    # deliver only the first entry by hand, as if the process died mid-round
    phys = st.units(SCHEDULE_TOPIC, 0, 0, 1)[0][0]
    st.append(d.real_copy(st.get(phys), 0))
    st = reopen(st)
    d2 = DelayScheduler(st, LEVELS)
    assert d2.recover(NOW + 2000) == 1
    assert d2.deliver_due(NOW + 2000)[0] == 2
    assert sorted(m.body for m in real(st)) == [b"0", b"1", b"2"]


def test_inner_batch_delivered_once_with_its_tags_codes_and_keys(st):
    codes = [tag_hash("x"), 0, tag_hash("y")]
    m = Message(topic="B", queue_id=0, body=b"batch-bytes", properties={"DELAY": "1"}, batch_count=3,
                tags_codes=codes, keys=["k1", "k2"])
    st.append(route(m, NOW, LEVELS))
    st.append(route(Message(topic="B", queue_id=0, body=b"b2", properties={"__STARTDELIVERTIME": str(NOW + 10)},
                            batch_count=2, tags_codes=[5, 6]), NOW, LEVELS))
    d = DelayScheduler(st, LEVELS)
    assert d.deliver_due(NOW + 1000)[0] == 2
    assert st.max_offset("B", 0) == 5
    assert d.cursor[0] == 3
    assert [u[2] for u in st.units("B", 0, 0, 5)] == codes + [5, 6]
    assert [m.body for m in st.query_by_key("B", "k2")] == [b"batch-bytes"]
    assert "REAL_TAGS_CODES" not in st.read("B", 0, 0).entries[0][1].properties


def test_service_wakes_on_arrival_and_delivers(app):
    levels = DelayLevels("1s")
    d = DelayScheduler(app.store, levels)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(d.run)
            await trio.sleep(0.2)  # the service is now asleep with nothing pending
            now = int(time.time() * 1000)
            app.store.append(route(Message("W", 0, b"x", {"DELAY": "1"}), now, levels))
            app.store.append(route(Message("W", 0, b"y", {"__STARTDELIVERTIME": str(now + 300)}), now, levels))
            with trio.fail_after(10):
                while app.store.max_offset("W", 0) < 2:
                    await trio.sleep(0.02)
            nursery.cancel_scope.cancel()
        return now

    start = trio.run(main)
    got = real(app.store, "W", 0)
    assert [m.body for m in got] == [b"y", b"x"]
    assert all(m.store_timestamp >= start + 300 for m in got)
    assert got[1].store_timestamp >= start + 1000
    assert app.store.read_config("delayOffset.json")["offsetTable"]["1"] == 1


def test_progress_beyond_the_queue_end_is_pulled_back(st):
    st.write_config("delayOffset.json", {"offsetTable": {"1": 7, "4": 9}, "timerLoaded": 9, "timerNext": None})
    d = DelayScheduler(st, LEVELS)  # at start, before new sends
    send(st, DELAY="1", body=b"L")
    send(st, __STARTDELIVERTIME=str(NOW + 100), body=b"T")
    assert d.deliver_due(NOW + 1000)[0] == 2
    assert sorted(m.body for m in real(st)) == [b"L", b"T"]


def test_a_recalled_timer_message_is_dropped_when_due_even_after_a_restart(st, reopen):
    now = int(time.time() * 1000)  # recall forgets marks by the wall clock, so not the import-time NOW
    send(st, __STARTDELIVERTIME=str(now + 3000), now=now, UNIQ_KEY="KEEP", body=b"kept")
    send(st, __STARTDELIVERTIME=str(now + 3000), now=now, UNIQ_KEY="GONE", body=b"gone")
    send(st, __STARTDELIVERTIME=str(now + 3000), now=now, UNIQ_KEY="GONE", topic="Other", body=b"other topic")
    d = DelayScheduler(st, LEVELS)
    d.recall("T", "GONE", now + 3000)
    d.recall("T", "NO-SUCH", now + 3000)  # names nothing: cancels nothing
    st = reopen(st)
    d2 = DelayScheduler(st, LEVELS)  # the marks were persisted with the progress at once
    d2.recover(now + 5000)
    d2.deliver_due(now + 5000)
    assert [m.body for m in real(st)] == [b"kept"]
    assert [m.body for m in real(st, "Other")] == [b"other topic"]


class _SteppedClock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms


def test_a_message_stored_while_the_clock_ran_an_hour_ahead_waits_only_its_delay(st):
    """Seed 2602 (docs/faults.md): a gateway's clock ran +3600 s while it stored delayed messages; back
    at true time each head was capped at now + its delay, recomputed every round, so it never came due
    and held its whole level back for the hour. The cap now counts from when it was first found."""
    for body in (b"ahead", b"held"):  # store timestamps stay at the peak (store/commitlog.py): both ahead
        send(st, now=NOW + 3_600_000, DELAY="2", body=body, born_timestamp=NOW)  # due an hour and 5 s on
    send(st, now=NOW, DELAY="2", body=b"behind")  # due in 5 s, behind them in the level
    clock = _SteppedClock(NOW)
    d = DelayScheduler(st, LEVELS, clock=clock)
    assert d.deliver_due(clock.ms)[0] == 0
    clock.ms = NOW + 5000  # each due at its born time + 5 s, not one delay after the other
    assert d.deliver_due(clock.ms)[0] == 3
    assert [m.body for m in real(st)] == [b"ahead", b"held", b"behind"]
