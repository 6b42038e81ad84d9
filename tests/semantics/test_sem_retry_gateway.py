"""Retry and dead letters end to end: a push consumer that always fails gets the message
1 + maxReconsumeTimes times (through %RETRY%<group> and the delay levels), then it lands in
%DLQ%<group>, from where it can be re-sent to its topic."""
import threading

import pytest

from client import Admin, ConsumeFrom, ConsumeStatus, Message, MessageQueue, Producer, PushConsumer
from semantics.retry import resend_from_dlq
from semantics_fixtures import run_gateway, wait_for

TOPIC = "RetryE2E"


@pytest.mark.timeout(120)
def test_failing_consumer_retries_then_dead_letter(tmp_path):
    def client_part(namesrv, app):
        admin = Admin(namesrv).start()
        admin.create_topic(TOPIC, 2)
        got = []
        lock = threading.Lock()

        def fail(msgs):
            with lock:
                got.extend((m.body, m.reconsume_times, m.topic, m.msg_id) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER

        c = PushConsumer("G", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=2)
        c.subscribe(TOPIC, "*")
        c.register_listener(fail)
        c.start()
        p = Producer("pg-retry", namesrv).start()
        sent = p.send(Message(TOPIC, b"poison", tags="T"))
        dlq = MessageQueue("%DLQ%G", "broker-a", 0)
        assert wait_for(lambda: app.store.max_offset("%DLQ%G", 0) == 1, 60)
        c.shutdown()
        dead = app.store.read("%DLQ%G", 0, 0).entries[0][1]
        back = resend_from_dlq(app.store, dead.physical_offset)
        again = app.store.get(back.physical_offset)
        dlq_max = admin.max_offset(dlq)  # the DLQ is readable over the protocol too
        p.shutdown()
        admin.shutdown()
        return sent, list(got), dead, again, dlq_max

    sent, got, dead, again, dlq_max = run_gateway(tmp_path, client_part, message_delay_level="1s 1s 1s 1s")
    assert [(b, n, t) for b, n, t, _ in got] == [(b"poison", 0, TOPIC), (b"poison", 1, TOPIC), (b"poison", 2, TOPIC)]
    assert {i for *_, i in got} == {sent.msg_id}  # the same msgId every time
    assert dead.topic == "%DLQ%G" and dead.reconsume_times == 3 and dlq_max == 1
    assert dead.properties["RETRY_TOPIC"] == TOPIC and dead.properties["ORIGIN_MESSAGE_ID"] == sent.msg_id
    assert again.topic == TOPIC and again.body == b"poison" and again.properties["UNIQ_KEY"] == sent.msg_id
