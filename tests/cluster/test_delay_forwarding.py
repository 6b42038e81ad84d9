"""The delay scheduler's forwarding (semantics.delay_forward) against a real store and a fake
router: a due message for a queue another gateway leads goes to that leader, never to the local
copy, and the schedule progress moves only once the leader acknowledged it (a refused or
unanswered forward, or a crash before the answer, delivers it again later: at-least-once). A
transaction committed for such a queue takes the same way."""
from __future__ import annotations

import time

import pytest
import trio

import store
from codec.remoting.message import Message
from semantics.delay import DelayScheduler
from semantics.delay_forward import FORWARD_RETRY_MS, HERE, held_copies
from semantics.routing import SCHEDULE_TOPIC, DelayLevels, route
from semantics.transactions import EndResult, Transactions

NOW = int(time.time() * 1000)
LEVELS = DelayLevels("1s 5s 10s")
LEADER_B = "127.0.0.1:1"  # the gateway leading queue 1 of T; queue 0 is led here


class FakeRouter:
    def __init__(self) -> None:
        self.taken: list[Message] = []
        self.refuse = False
        self.asked = 0
        self.resent: list[bool] = []  # each request's flag

    def target(self, topic: str, queue_id: int) -> str:
        return LEADER_B if (topic, queue_id) == ("T", 1) else HERE

    async def deliver(self, address: str, msgs: list, resent: bool = False) -> None:
        assert address == LEADER_B
        self.asked += 1
        self.resent.append(resent)
        if self.refuse:
            raise ConnectionError("leader unreachable")
        self.taken += msgs


class Clock:
    """The scheduler's wall clock, set by the test."""

    def __init__(self) -> None:
        self.now = NOW

    def now_ms(self) -> int:
        return self.now


def _open(path):
    return store.open(str(path), store.StoreConfig(commitlog_file_size=1 << 20, cq_units_per_file=1000))


@pytest.fixture
def st(tmp_path):
    s = _open(tmp_path / "data")
    yield s
    s.close()


def send(s, qid: int, body: bytes, **props) -> None:
    s.append(route(Message(topic="T", queue_id=qid, body=body, properties=props), NOW, LEVELS))


def local(s, qid: int) -> list[bytes]:
    return [m.body for _o, m in s.read("T", qid, 0, 1000).entries]


def test_due_messages_for_a_queue_led_elsewhere_go_to_its_leader_once_acknowledged(st):
    send(st, 0, b"here", DELAY="1")
    send(st, 1, b"level", DELAY="1")
    send(st, 1, b"timer", __STARTDELIVERTIME=str(NOW + 500))
    router, clock = FakeRouter(), Clock()
    d = DelayScheduler(st, LEVELS, clock=clock, router=router)
    router.refuse = True
    clock.now = NOW + 1000
    count, _ = d.deliver_due(clock.now)
    assert count == 3 and local(st, 0) == [b"here"]
    assert trio.run(d.forward) == 0 and router.asked == 1
    assert local(st, 1) == []  # never into this gateway's copy of a queue it does not lead
    doc = d.snapshot()  # nothing forwarded counts as delivered
    assert doc["offsetTable"]["1"] == 1 and doc["timerNext"][1] == 0  # "here" is; "level" and "timer" are not
    # the refusing leader is left alone for FORWARD_RETRY_MS: the level queue waits, nothing is lost
    assert d.deliver_due(NOW + 1100) == (0, NOW + 1100 + FORWARD_RETRY_MS)
    assert not d._fwd.batches
    router.refuse = False
    count, _ = d.deliver_due(NOW + 1000 + 2 * FORWARD_RETRY_MS)
    assert count == 2 and trio.run(d.forward) == 2
    assert sorted(m.body for m in router.taken) == [b"level", b"timer"]
    assert router.resent == [False, True, True]  # after a failed send the leader is told to look first
    assert all(m.topic == "T" and m.queue_id == 1 and "DELAY" not in m.properties for m in router.taken)
    doc = d.snapshot()
    assert doc["offsetTable"]["1"] == 2 and doc["timerNext"] is None
    assert d.deliver_due(NOW + 60_000) == (0, None)
    assert trio.run(d.forward) == 0 and len(router.taken) == 2 and local(st, 1) == []


def test_a_crash_before_the_leader_answers_delivers_again(st, tmp_path):
    send(st, 1, b"level", DELAY="1")
    router = FakeRouter()
    d = DelayScheduler(st, LEVELS, router=router)
    d.persist()
    d.deliver_due(NOW + 1000)  # collected; the process dies before forward() has an answer
    d.persist()
    st.close()
    st2 = _open(tmp_path / "data")
    try:
        d2 = DelayScheduler(st2, LEVELS, router=router)
        assert d2.recover(NOW + 2000) == 0
        assert d2.deliver_due(NOW + 2000)[0] == 1 and trio.run(d2.forward) == 1
        assert [m.body for m in router.taken] == [b"level"]
        assert router.resent == [True]  # due before the restart: perhaps taken before it
    finally:
        st2.close()


def test_a_timer_unit_in_flight_stays_pending_in_the_saved_progress(st):
    send(st, 1, b"timer", __STARTDELIVERTIME=str(NOW + 500))
    seen = {}

    class SlowRouter(FakeRouter):
        async def deliver(self, address, msgs, resent=False):
            seen["doc"] = d.snapshot()  # e.g. a recall persisting while the forward waits
            await super().deliver(address, msgs, resent)

    router = SlowRouter()
    d = DelayScheduler(st, LEVELS, router=router)
    d.deliver_due(NOW + 1000)
    assert trio.run(d.forward) == 1
    assert seen["doc"]["timerNext"] == [NOW + 500, 0]
    assert d.snapshot()["timerNext"] is None


def test_a_commit_for_a_queue_led_elsewhere_goes_through_the_scheduler(st):
    tx = Transactions(st, LEVELS)
    tx.leads = lambda topic, qid: (topic, qid) != ("T", 1)
    half = Message("T", 1, b"tx", {"TRAN_MSG": "true", "PGROUP": "PG", "UNIQ_KEY": "U-tx"}, sys_flag=0x4)
    r = st.append(route(half, NOW, LEVELS))
    assert tx.end(r.queue_offset, True, "PG", r.physical_offset, now=NOW)[0] is EndResult.COMMITTED
    assert local(st, 1) == [] and st.max_offset(SCHEDULE_TOPIC, LEVELS.timer_queue) == 1
    router = FakeRouter()
    d = DelayScheduler(st, LEVELS, router=router)
    assert d.deliver_due(NOW + 1)[0] == 1 and trio.run(d.forward) == 1
    [m] = router.taken
    assert m.body == b"tx" and m.sys_flag & 0xC == 0x8 and m.prepared_transaction_offset == r.physical_offset
    assert "__STARTDELIVERTIME" not in m.properties and local(st, 1) == []


def test_a_leader_finds_the_copies_of_a_resent_forward_by_their_sender(st):
    """`held_copies`: what CLUSTER_DELIVER looks up for a re-sent forward (gateway.cluster.delivery)."""
    send(st, 1, b"timer", __STARTDELIVERTIME=str(NOW + 500))
    router = FakeRouter()
    d = DelayScheduler(st, LEVELS, router=router, source="7")
    d.deliver_due(NOW + 1000)
    trio.run(d.forward)
    [copy] = router.taken
    assert copy.properties["SCHEDULE_SOURCE"] == "7"
    st.append(Message(topic="T", queue_id=1, body=b"other"))
    assert held_copies(st, [copy]) == {}  # not stored yet
    stored = st.append(copy)
    st.append(Message(topic="T", queue_id=1, body=b"later"))
    [(qoff, found)] = held_copies(st, [copy]).values()
    assert qoff == stored.queue_offset and found.body == b"timer"
    other_gateway = Message(topic="T", queue_id=1, body=b"timer", born_timestamp=copy.born_timestamp,
                            properties={**copy.properties, "SCHEDULE_SOURCE": "8"})
    assert held_copies(st, [other_gateway]) == {}  # the same schedule entry of another gateway
    assert held_copies(st, [copy], max_scan=1) == {}  # only the last entries are looked through
