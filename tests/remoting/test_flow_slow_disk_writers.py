"""The store writers besides sends go through the flow control too (`semantics.flow_control.append_in_turn`):
on a slow disk (`--store-write-delay-ms`, a throttled disk on demand; Apache RocketMQ has no such switch,
so this runs against the gateway only) a consumer send-back or an END_TRANSACTION whose write is blocked
does not hold up a name-server route lookup on another connection. The order of the answers is what is
asserted (each write lasts 1.5 s, the lookup comes 0.6 s into it), not their latency."""
import threading
import time

from codec.remoting import RequestCode as RC, ResponseCode as R
from codec.remoting.message import parse_msg_id
from test_server import send_fields
from wire import Peer

DELAY_S = 1.5


def _slow_gateway(gateway_factory):
    return gateway_factory(extra_args=["--store-write-delay-ms", str(int(DELAY_S * 1000))])


def _first_send(peer, topic, props=None, **extra):
    """A send whose slow write makes the gateway see the disk as slow; waits out that write's effects."""
    assert peer.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code == R.SUCCESS
    resp = peer.call(RC.SEND_MESSAGE_V2, send_fields(topic, 0, props, **extra), b"one")
    assert resp.code == R.SUCCESS, resp.remark
    time.sleep(DELAY_S + 0.1)
    return resp


def _answers_in_order(g, topic, slow_call):
    """[(what, code)] in the order answered: `slow_call()` (a write) and a route lookup 0.6 s into it."""
    answered = []

    def writer():
        answered.append(("write", slow_call().code))

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.6)
    answered.append(("route", Peer(g.namesrv).call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code))
    thread.join(30)
    return answered


def test_a_send_back_on_a_slow_disk_does_not_hold_up_route_lookups(gateway_factory):
    g = _slow_gateway(gateway_factory)
    consumer = Peer(g.namesrv)
    sent = _first_send(consumer, "SlowBackT")
    offset = parse_msg_id(sent.ext_fields["msgId"])[2]
    answered = _answers_in_order(g, "SlowBackT", lambda: consumer.call(RC.CONSUMER_SEND_MSG_BACK, {
        "group": "slowG", "offset": str(offset), "delayLevel": "0", "originMsgId": sent.ext_fields["msgId"]}))
    assert answered == [("route", R.SUCCESS), ("write", R.SUCCESS)]
    assert Peer(g.namesrv).call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%slowG"}).code == R.SUCCESS


def test_an_end_transaction_on_a_slow_disk_does_not_hold_up_route_lookups(gateway_factory):
    g = _slow_gateway(gateway_factory)
    producer = Peer(g.namesrv)
    half = _first_send(producer, "SlowTxT", {"TRAN_MSG": "true", "PGROUP": "pg"}, f="4")
    fields = {"producerGroup": "pg", "tranStateTableOffset": half.ext_fields["queueOffset"],
              "commitLogOffset": str(parse_msg_id(half.ext_fields["msgId"])[2]), "commitOrRollback": "8",
              "fromTransactionCheck": "false", "msgId": half.ext_fields["msgId"]}
    answered = _answers_in_order(g, "SlowTxT", lambda: producer.call(RC.END_TRANSACTION, fields))
    assert answered == [("route", R.SUCCESS), ("write", R.SUCCESS)]
    again = Peer(g.namesrv).call(RC.END_TRANSACTION, fields)  # decided once: a second end changes nothing
    assert again.code == R.SUCCESS


def test_a_timer_delivery_on_a_slow_disk_does_not_hold_up_route_lookups(gateway_factory):
    """The delay scheduler's delivery write (due 2.5 s after the send, lasting 1.5 s) is still in progress
    when a route lookup is answered 0.6 s into it: nothing of it is visible yet; then it is."""
    g = _slow_gateway(gateway_factory)
    peer = Peer(g.namesrv)
    due = time.time() + 2.5
    _first_send(peer, "SlowTimerT", {"__STARTDELIVERTIME": str(int(due * 1000))})
    time.sleep(max(0.0, due + 0.6 - time.time()))
    assert Peer(g.namesrv).call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "SlowTimerT"}).code == R.SUCCESS
    assert _max_offset(peer, "SlowTimerT") == 0  # the delivery's write has not returned yet
    deadline = time.time() + 20
    while _max_offset(peer, "SlowTimerT") == 0 and time.time() < deadline:
        time.sleep(0.2)
    assert _max_offset(peer, "SlowTimerT") == 1


def _max_offset(peer, topic):
    return int(peer.call(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": 0}).ext_fields["offset"])
