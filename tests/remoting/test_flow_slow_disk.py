"""A slow disk must not stall the gateway: while a store write is blocked (`--store-write-delay-ms`, a
throttled disk on demand; Apache RocketMQ has no such switch, so this runs against the gateway only),
name-server route lookups on other connections are still answered, and new sends are refused at once
with RocketMQ's [PC_SYNCHRONIZED] remark once the write has held the store past
`--os-page-cache-busy-timeout-ms`, instead of waiting behind it. The order of the answers is what is
asserted (the write lasts 1.5 s, the other requests come 0.6 s into it), not their latency."""
import threading
import time

from codec.remoting import RequestCode as RC, ResponseCode as R
from semantics.flow_control import PC_BUSY
from test_server import send_fields
from wire import Peer

DELAY_S = 1.5


def test_route_lookups_and_refusals_do_not_wait_for_a_blocked_write(gateway_factory):
    g = gateway_factory(extra_args=["--store-write-delay-ms", str(int(DELAY_S * 1000)),
                                    "--os-page-cache-busy-timeout-ms", "300"])
    producer = Peer(g.namesrv)
    assert producer.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "SlowT"}).code == R.SUCCESS
    first = producer.call(RC.SEND_MESSAGE_V2, send_fields("SlowT", 0), b"one")  # slow: the disk is seen slow
    assert first.code == R.SUCCESS, first.remark
    time.sleep(DELAY_S + 0.1)  # the busy period that write started (it ran on the loop) is over

    answered = []  # (what, response code), in the order the answers arrived

    def slow_send():
        resp = producer.call(RC.SEND_MESSAGE_V2, send_fields("SlowT", 1), b"two")
        answered.append(("slow send", resp.code))

    sender = threading.Thread(target=slow_send)
    sender.start()
    time.sleep(0.6)  # the write is in progress, past the 300 ms busy limit
    route = Peer(g.namesrv).call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "SlowT"})
    answered.append(("route", route.code))
    refused = Peer(g.namesrv).call(RC.SEND_MESSAGE_V2, send_fields("SlowT", 2), b"three")
    answered.append(("refused send", refused.code))
    sender.join(30)
    assert answered == [("route", R.SUCCESS), ("refused send", R.SYSTEM_BUSY), ("slow send", R.SUCCESS)]
    assert refused.remark == PC_BUSY
