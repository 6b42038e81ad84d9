"""The pop engine's log appends (RMQ_SYS_POP_LOG) go through the flow control too
(`semantics.pop_writes`): on a slow disk (`--store-write-delay-ms`, a throttled disk on demand; Apache
RocketMQ has no such switch, so this runs against the gateway only) a POP_MESSAGE, an ACK_MESSAGE or a
CHANGE_MESSAGE_INVISIBLETIME whose op is being written does not hold up a name-server route lookup on
another connection, and is answered once its op is written. The order of the answers is asserted (each
write lasts 1.5 s, the lookup comes 0.6 s into the first), not their latency."""
from client.simple_consumer import _with_receipts
from codec.remoting import RequestCode as RC, ResponseCode as R
from test_flow_slow_disk_writers import _answers_in_order, _first_send, _slow_gateway
from wire import Peer

TOPIC, GROUP = "SlowPopT", "slowPopG"


def _pop(peer):
    return peer.call(RC.POP_MESSAGE, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "maxMsgNums": 32,
                                      "invisibleTime": 60_000, "pollTime": 0, "bornTime": 0, "initMode": 0})


def _receipt_fields(resp):
    m = _with_receipts(resp, TOPIC, "broker-a")[0]
    return {"consumerGroup": GROUP, "topic": TOPIC, "queueId": m.queue_id, "offset": m.queue_offset,
            "extraInfo": m.properties["POP_CK"]}


def test_pop_change_and_ack_on_a_slow_disk_do_not_hold_up_route_lookups(gateway_factory):
    g = _slow_gateway(gateway_factory)
    consumer = Peer(g.namesrv)
    _first_send(consumer, TOPIC)
    popped = []
    answered = _answers_in_order(g, TOPIC, lambda: popped.append(_pop(consumer)) or popped[-1])
    assert answered == [("route", R.SUCCESS), ("write", R.SUCCESS)]
    fields = _receipt_fields(popped[0])
    answered = _answers_in_order(g, TOPIC, lambda: consumer.call(RC.CHANGE_MESSAGE_INVISIBLETIME,
                                                                 {**fields, "invisibleTime": 60_000}))
    assert answered == [("route", R.SUCCESS), ("write", R.SUCCESS)]
    answered = _answers_in_order(g, TOPIC, lambda: consumer.call(RC.ACK_MESSAGE, fields))
    assert answered == [("route", R.SUCCESS), ("write", R.SUCCESS)]
    assert consumer.call(RC.ACK_MESSAGE, fields).code == R.NO_MESSAGE  # acknowledged once
    assert _pop(consumer).code == R.PULL_NOT_FOUND
