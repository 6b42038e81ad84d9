"""semantics.rocketmq_clients: heartbeat registrations, expiry, and orderly queue locks."""
from semantics.rocketmq_clients import CLIENT_EXPIRY_S, LOCK_MAX_LIVE_S, ClientRegistry


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def hb(cid, group="g", topic="T"):
    return {"clientID": cid, "consumerDataSet": [{"groupName": group, "messageModel": "BROADCASTING",
                                                  "subscriptionDataSet": [{"topic": topic, "subString": "A"}]}],
            "producerDataSet": [{"groupName": "pg"}]}


def test_membership_changes_and_expiry():
    clock = Clock()
    reg = ClientRegistry(clock)
    ch1, ch2 = object(), object()
    assert reg.heartbeat(hb("c1"), ch1) == ["g"]
    assert reg.heartbeat(hb("c1"), ch1) == []  # a repeat changes nothing
    assert reg.heartbeat(hb("c2"), ch2) == ["g"]
    assert reg.consumer_ids("g") == ["c1", "c2"]
    assert reg.subscription("g", "T")["subString"] == "A"
    assert reg.consumers["g"].message_model == "BROADCASTING"
    assert reg.producer_channels("pg") == [ch1, ch2]
    assert reg.groups_of_topic("T") == ["g"]
    clock.now += CLIENT_EXPIRY_S / 2
    reg.heartbeat(hb("c2"), ch2)
    clock.now += CLIENT_EXPIRY_S / 2 + 1
    assert reg.expire() == ["g"]
    assert reg.consumer_ids("g") == ["c2"] and reg.producer_channels("pg") == [ch2]
    assert reg.channel_closed(ch2) == ["g"] and reg.consumer_ids("g") == []


def test_locks():
    clock = Clock()
    reg = ClientRegistry(clock)
    mqs = [("T", 0), ("T", 1)]
    assert reg.lock("g", "c1", mqs) == mqs
    assert reg.lock("g", "c2", mqs) == []
    assert reg.lock("g", "c1", mqs[:1]) == mqs[:1]  # the holder renews
    reg.unlock("g", "c2", mqs)  # not the holder: nothing happens
    assert reg.lock("g", "c2", mqs) == []
    reg.unlock("g", "c1", [("T", 1)])
    assert reg.lock("g", "c2", mqs) == [("T", 1)]
    clock.now += LOCK_MAX_LIVE_S + 1  # c1 stopped renewing queue 0: its lock lapses
    assert reg.lock("g", "c2", mqs) == mqs
    reg.heartbeat(hb("c2"), object())
    reg.unregister("c2", None, "g")  # leaving the group releases its locks
    assert reg.lock("g", "c1", mqs) == mqs
