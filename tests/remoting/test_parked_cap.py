"""The cap on parked remoting requests per connection (--remoting-max-parked-requests): a long poll
beyond it is answered SYSTEM_BUSY at once with RocketMQ's overload remark, the connection and the
others go on, and a send already stored that waits for its sync flush is never refused."""
from codec.remoting import RequestCode as RC, ResponseCode as R
from gateway.remoting.connection import OVERLOAD
from shard_aware import one_queue_each
from test_server import pull_fields, send_fields
from wire import Peer


def test_long_polls_beyond_the_cap_get_system_busy(gateway_factory):
    g = gateway_factory(flush="sync", extra_args=["--remoting-max-parked-requests", "2"])
    p = Peer(g.namesrv)
    n = 4 * one_queue_each()  # queues 0-3 here: 4 in one process, 4 on each shard under make test-shards
    assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "CapT", "readQueueNums": n, "writeQueueNums": n,
                                               "perm": 6}).code == R.SUCCESS
    assert p.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "CapT"}).code == R.SUCCESS
    parked = [p.send(RC.PULL_MESSAGE, pull_fields("CapT", q, 0, suspend=20000)) for q in (0, 1)]
    busy = p.call(RC.PULL_MESSAGE, pull_fields("CapT", 2, 0, suspend=20000))
    assert (busy.code, busy.remark) == (R.SYSTEM_BUSY, OVERLOAD)
    # The connection still serves requests that answer at once, and a sync-flush send (stored, then
    # parked until its flush) is accepted although the cap is reached.
    assert p.call(RC.GET_MAX_OFFSET, {"topic": "CapT", "queueId": 3}).code == R.SUCCESS
    assert p.call(RC.SEND_MESSAGE_V2, send_fields("CapT", 3), b"kept").code == R.SUCCESS
    # Another connection has a cap of its own.
    other = Peer(g.namesrv)
    waiting = other.send(RC.PULL_MESSAGE, pull_fields("CapT", 0, 0, suspend=20000))
    # A message on queue 0 answers both pulls parked on it; the first connection then has room again.
    assert Peer(g.namesrv).call(RC.SEND_MESSAGE_V2, send_fields("CapT", 0), b"wake").code == R.SUCCESS
    woken = p.receive()
    assert (woken.opaque, woken.code) == (parked[0], R.SUCCESS)
    assert other.receive().opaque == waiting
    again = p.call(RC.PULL_MESSAGE, pull_fields("CapT", 0, 1, suspend=300))
    assert again.code == R.PULL_NOT_FOUND  # parked (not refused) and ended by its own timeout
    assert p.call(RC.PULL_MESSAGE, pull_fields("CapT", 3, 0)).code == R.SUCCESS  # the stored send is there
