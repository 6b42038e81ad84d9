"""semantics.flow_control.ProduceFlow (Kafka Produce's appends under send flow control), on a fake
store and a fake clock: where the appends run, and the throttle_time_ms each rule gives."""
import threading

import trio

from semantics.flow_control import SLOW_HOLD_S, ProduceFlow, SendFlowControl


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class FakeStore:
    """Each append takes `write_s` of the fake clock; it notes the thread it ran on."""
    flush_began = None
    last_flush_s = 0.0

    def __init__(self, clock, write_s):
        self.clock, self.write_s, self.threads = clock, write_s, []

    def append_many(self, msgs):
        self.threads.append(threading.get_ident())
        self.clock.now += self.write_s
        return [len(msgs)]


def _produce(flow, st, partitions=1):
    async def main():
        pf = ProduceFlow(flow, st)
        for _ in range(partitions):
            async with pf.turn() as append:
                assert await append(["m"]) == [1]
        return pf.throttle_ms()
    return trio.run(main)


def test_a_healthy_disk_appends_on_the_loop_unthrottled():
    clock = Clock()
    flow = SendFlowControl(page_cache_busy_ms=300, wait_in_queue_ms=200, clock=clock)
    st = FakeStore(clock, 0.01)
    assert _produce(flow, st, partitions=2) == 0
    assert st.threads == [threading.get_ident()] * 2 and flow.throttled == 0


def test_a_slow_disk_appends_off_the_loop_and_a_long_own_write_throttles():
    clock = Clock()
    flow = SendFlowControl(page_cache_busy_ms=300, wait_in_queue_ms=200, clock=clock)
    flow.slow_until = clock.now + SLOW_HOLD_S  # a write was seen slow
    st = FakeStore(clock, 0.2)
    assert _produce(flow, st) == 0  # 200 ms: slow, but within the busy limit
    assert _produce(flow, st, partitions=2) == 400  # its writes took 400 ms > 300: back off that long
    assert threading.get_ident() not in st.threads and flow.throttled == 1


def test_a_write_in_progress_past_the_limit_on_arrival_throttles():
    clock = Clock()
    began = clock.now
    flow = SendFlowControl(page_cache_busy_ms=300, wait_in_queue_ms=200, clock=clock,
                           writing_since=lambda: began)
    clock.now += 0.5  # another connection's write has been in progress 500 ms
    assert _produce(flow, FakeStore(clock, 0.0)) == 500
