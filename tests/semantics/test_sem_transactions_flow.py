"""A transaction end through the flow control (`Transactions.end_in_turn`) on a slow disk: the outcome is
appended on the worker thread, and while that append is in progress the half counts as decided for an end
or a discard made on the event loop (the first outcome still wins, once)."""
import threading

import trio
import trio.testing

from semantics.flow_control import SendFlowControl
from semantics.routing import OP_TOPIC
from semantics.transactions import EndResult, Transactions
from semantics_fixtures import st  # noqa: F401 - fixture
from test_sem_transactions import half, visible


def test_an_end_off_the_loop_is_decided_once(st, monkeypatch):
    tx = Transactions(st)
    a, a_phys = half(st, b"a")
    gate, original = threading.Event(), st.append_many

    def held_append(msgs):  # the slow write: held until the test lets it go
        gate.wait(10)
        return original(msgs)

    async def main():
        flow = SendFlowControl()
        flow.slow_until = float("inf")  # the disk has been seen slow: appends go to the worker thread
        monkeypatch.setattr(st, "append_many", held_append)
        outcome = []

        async def commit():
            outcome.append(await tx.end_in_turn(flow, a, True, "PG", a_phys))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(commit)
            await trio.testing.wait_all_tasks_blocked()
            assert tx.in_flight == {a}
            assert tx.end(a, False)[0] is EndResult.ALREADY_DECIDED  # on the loop, during the append
            assert tx.discard(tx.half(a)) is None
            gate.set()
        (res, result), = outcome
        assert res is EndResult.COMMITTED and result is not None and tx.in_flight == set()
    trio.run(main)
    assert visible(st) == [b"a"]
    assert [o.properties["TAGS"] for _o, o in st.read(OP_TOPIC, 0, 0).entries] == ["d"]
    assert tx.end(a, False)[0] is EndResult.ALREADY_DECIDED
