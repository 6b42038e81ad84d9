"""The delay view (/api/delay, the Delay page, the delay gauges of /metrics) of a real gateway
process reads the scheduler's own delivery state: once a level-delayed and a timer
(__STARTDELIVERTIME) message are delivered, they are no longer shown pending with a deliver time
in the past (which fires the lateness alert of docs/metrics.md), while the messages still waiting
are. Delivery here happens within the scheduler's first 10 s, before it recomputed the timer
queue's persisted low mark, which the view used to read."""
from __future__ import annotations

import json
import time

import pytest

from codec.remoting import RequestCode as RC
from codec.remoting.message import properties_to_string
from ops.test_metrics import get, scrape, value
from remoting.wire import Peer
from gateway_process import GatewayProcess, free_port

TOPIC = "delay-view"


@pytest.fixture
def gw(tmp_path):
    http_port = free_port()
    g = GatewayProcess(str(tmp_path / "data"), extra_args=["--http-port", str(http_port),
                                                           "--message-delay-level", "1s 1h"])
    g.http = f"127.0.0.1:{http_port}"
    try:
        yield g.start()
    finally:
        g.stop()


def send(peer, props: dict, body: bytes) -> None:
    fields = {"a": "delay-view-pg", "b": TOPIC, "c": "TBW102", "d": "1", "e": "0", "f": "0",
              "g": str(int(time.time() * 1000)), "h": "0", "i": properties_to_string(props), "j": "0", "k": "false"}
    resp = peer.call(RC.SEND_MESSAGE_V2, fields, body)
    assert resp.code == 0, resp.remark


def delivered(peer) -> int:
    return int(peer.call(RC.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0}).ext_fields["offset"])


def rows(gw) -> dict:
    status, text = get(gw, "/api/delay")
    assert status == 200
    return {r["level"]: r for r in json.loads(text)}


def test_delivered_messages_leave_the_delay_view(gw):
    peer = Peer(gw.namesrv)
    try:
        assert peer.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": TOPIC, "readQueueNums": 1, "writeQueueNums": 1,
                                                      "perm": 6}).code == 0
        far = int(time.time() * 1000) + 3_600_000
        send(peer, {"DELAY": "2"}, b"level-2-waits")  # 1 h
        send(peer, {"__STARTDELIVERTIME": str(far)}, b"timer-waits")
        send(peer, {"DELAY": "1"}, b"level-1")  # 1 s
        send(peer, {"__STARTDELIVERTIME": str(int(time.time() * 1000) + 1000)}, b"timer")
        deadline = time.monotonic() + 60
        while delivered(peer) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert delivered(peer) == 2  # the two short delays, nothing else
        view = rows(gw)
        assert (view["1"]["depth"], view["1"]["next_due_ms"]) == (0, None)
        assert (view["2"]["depth"], view["timer"]["depth"]) == (1, 1)
        assert view["timer"]["next_due_ms"] == far  # the waiting one's, not the delivered one's
        samples = scrape(gw)
        assert value(samples, "rocketgate_delay_queue_depth_messages", level="1") == 0
        assert value(samples, "rocketgate_delay_queue_depth_messages", level="timer") == 1
        assert ("rocketgate_delay_queue_next_due_timestamp_seconds", (("level", "1"),)) not in samples
        now_s = time.time()
        for level in ("2", "timer"):  # no lateness: every deliver time shown is ahead
            assert value(samples, "rocketgate_delay_queue_next_due_timestamp_seconds", level=level) > now_s
        status, page = get(gw, "/delay")
        assert status == 200
        timer_row = page[page.index("<td>timer</td>"):].split("</tr>")[0]
        assert "<td class=n>1</td>" in timer_row
    finally:
        peer.close()
