"""Delay levels and timers through a real gateway process and the native client, with kill -9
in the middle of deliveries: every message is delivered exactly once, never early."""
import time

import pytest

import store
from client import Admin, Message, Producer
from semantics_fixtures import wait_for
from shard_aware import store_dirs

TOPIC = "DelayE2E"


def delivered(admin):
    """Messages in TOPIC's queues, on every broker of its route (one process, or each shard)."""
    return sum(stats["maxOffset"] for stats in admin.topic_stats(TOPIC).values())


@pytest.mark.timeout(180)
def test_delayed_messages_survive_kill9_exactly_once(gateway):
    g = gateway
    try:
        admin = Admin(g.namesrv).start()
        admin.create_topic(TOPIC, 4)
        admin.shutdown()
        p = Producer("pg-delay", g.namesrv).start()
        sent = {}
        now = int(time.time() * 1000)
        for i in range(60):
            if i % 3 == 0:
                m = Message(TOPIC, b"%d" % i, tags="T", delay_level=1)              # 1 s
            elif i % 3 == 1:
                m = Message(TOPIC, b"%d" % i, tags="T", delay_level=2)              # 5 s
            else:
                m = Message(TOPIC, b"%d" % i, properties={"__STARTDELIVERTIME": str(now + 500 + 60 * i)})
            before = int(time.time() * 1000)  # the gateway computes the due time after this
            r = p.send(m)
            sent[r.msg_id] = (m, before)
        p.shutdown()
        admin = Admin(g.namesrv).start()
        assert wait_for(lambda: delivered(admin) >= 10)  # deliveries under way
        admin.shutdown()
        g.kill9()
        g.start()
        admin = Admin(g.namesrv).start()
        assert wait_for(lambda: delivered(admin) >= 60)
        admin.shutdown()
    finally:
        g.stop()
    got = {}
    for path in store_dirs(g.data_dir):  # each shard's store holds the queues it leads
        s = store.open(path)
        try:
            for q in range(4):
                for _off, m in s.read(TOPIC, q, 0, 1000).entries:
                    got.setdefault(m.properties["UNIQ_KEY"], []).append(m)
        finally:
            s.close()
    assert sorted(got) == sorted(sent)
    for uniq, copies in got.items():
        assert len(copies) == 1, f"{uniq} delivered {len(copies)} times"
        msg, sent_at = sent[uniq]
        copy = copies[0]
        assert "DELAY" not in copy.properties and copy.properties["REAL_TOPIC"] == TOPIC
        if msg.delay_level:
            assert copy.store_timestamp >= sent_at + (1000 if msg.delay_level == 1 else 5000)
        else:
            assert copy.store_timestamp >= int(msg.properties["__STARTDELIVERTIME"])
