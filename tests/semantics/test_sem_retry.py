"""CONSUMER_SEND_MSG_BACK and dead letters against a real store."""
import time

from codec.remoting.message import Message
from semantics.delay import DelayScheduler
from semantics.retry import consumer_send_back, resend_from_dlq
from semantics.routing import SCHEDULE_TOPIC, DEFAULT_LEVELS
from semantics_fixtures import app, reopen, st  # noqa: F401 - fixtures

NOW = int(time.time() * 1000)


def original(st):
    r = st.append(Message("Orders", 2, b"pay", {"TAGS": "t", "UNIQ_KEY": "UK1", "KEYS": "o-1"}))
    return r.physical_offset


def test_first_send_back_goes_to_retry_through_level_3(st):
    phys = original(st)
    r = consumer_send_back(st, phys, "G", now_ms=NOW)
    assert st.topics.get("%RETRY%G").read_queues == 1
    m = st.get(r.physical_offset)
    assert (m.topic, m.queue_id) == (SCHEDULE_TOPIC, 2)  # level 3 = queue 2
    assert st.units(SCHEDULE_TOPIC, 2, 0, 1)[0][2] == NOW + 10_000
    assert m.properties["REAL_TOPIC"] == "%RETRY%G" and m.properties["REAL_QID"] == "0"
    assert m.properties["RETRY_TOPIC"] == "Orders"
    assert m.properties["ORIGIN_MESSAGE_ID"] == "UK1" and m.properties["UNIQ_KEY"] == "UK1"
    assert m.reconsume_times == 1 and m.body == b"pay"
    d = DelayScheduler(st, DEFAULT_LEVELS)
    d.deliver_due(NOW + 10_000)
    [(_o, retry)] = st.read("%RETRY%G", 0, 0).entries
    assert retry.reconsume_times == 1 and retry.properties["RETRY_TOPIC"] == "Orders"


def test_retry_chain_then_dlq(st):
    phys = original(st)
    d = DelayScheduler(st, DEFAULT_LEVELS)
    now = NOW
    queues = []
    for i in range(4):
        r = consumer_send_back(st, phys, "G", max_reconsume_times=4, now_ms=now)
        m = st.get(r.physical_offset)
        assert m.topic == SCHEDULE_TOPIC
        queues.append(m.queue_id)
        now += 8 * 3_600_000
        d.deliver_due(now)
        entries = st.read("%RETRY%G", 0, i).entries
        phys = entries[0][1].physical_offset  # the consumer pulls the retry copy and fails again
        assert entries[0][1].reconsume_times == i + 1
        assert "SCHEDULE_OFFSET" in entries[0][1].properties
    assert queues == [2, 3, 4, 5]  # levels 3, 4, 5, 6
    r = consumer_send_back(st, phys, "G", max_reconsume_times=4, now_ms=now)
    dead = st.get(r.physical_offset)
    assert (dead.topic, dead.queue_id) == ("%DLQ%G", 0)
    assert st.topics.get("%DLQ%G").write_queues == 1
    assert dead.properties["RETRY_TOPIC"] == "Orders" and dead.properties["ORIGIN_MESSAGE_ID"] == "UK1"
    assert "DELAY" not in dead.properties and "REAL_TOPIC" not in dead.properties
    assert "SCHEDULE_OFFSET" not in dead.properties
    assert dead.reconsume_times == 5

    back = resend_from_dlq(st, dead.physical_offset)
    again = st.get(back.physical_offset)
    assert again.topic == "Orders" and again.reconsume_times == 0 and again.body == b"pay"
    assert "RETRY_TOPIC" not in again.properties and again.properties["UNIQ_KEY"] == "UK1"
    assert resend_from_dlq(st, phys) is None  # not a dead letter


def test_client_delay_level_negative_level_and_missing(st):
    phys = original(st)
    m = st.get(consumer_send_back(st, phys, "G", delay_level=1, now_ms=NOW).physical_offset)
    assert m.queue_id == 0
    m = st.get(consumer_send_back(st, phys, "G", delay_level=40, now_ms=NOW).physical_offset)
    assert m.queue_id == 17
    m = st.get(consumer_send_back(st, phys, "G", delay_level=-1, now_ms=NOW).physical_offset)
    assert m.topic == "%DLQ%G"
    assert consumer_send_back(st, st.max_physical_offset + 1000, "G") is None
