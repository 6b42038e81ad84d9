"""semantics.lite's lite TTL rule, the quick sibling of tests/remoting/test_remoting_lite_ttl.py (which
checks it end to end against RocketMQ 5.5 and the gateway, over a minute): a lite topic's live
messages are those after its last silence longer than its TTL, none once it is silent that long;
the TTL is the parent's lite.topic.expiration (minutes) but at least the broker's minLiteTTl."""
from semantics.lite import expire_after_ms, live_offsets

MINUTE = 60_000


def test_expiration_attribute_and_minimum():
    assert expire_after_ms({}, 1000) is None
    assert expire_after_ms({"lite.topic.expiration": "-1"}, 1000) is None
    assert expire_after_ms({"lite.topic.expiration": "0"}, 1000) is None
    assert expire_after_ms({"lite.topic.expiration": "2"}, 1000) == 2 * MINUTE
    assert expire_after_ms({"lite.topic.expiration": "1"}, 15 * MINUTE) == 15 * MINUTE
    assert expire_after_ms({"lite.topic.expiration": "x"}, 1000) is None


def test_live_messages_after_the_last_long_silence():
    messages = [(3, 0), (9, 10_000), (20, 10_000 + 2 * MINUTE), (21, 10_000 + 2 * MINUTE + 5)]
    assert live_offsets(messages, None, 10**12) == [3, 9, 20, 21]
    now = 10_000 + 2 * MINUTE + 10
    assert live_offsets(messages, MINUTE, now) == [20, 21]  # the first two are an expired incarnation
    assert live_offsets(messages, 3 * MINUTE, now) == [3, 9, 20, 21]
    assert live_offsets(messages, MINUTE, now + MINUTE) == []  # silent a whole TTL: expired
    assert live_offsets([], MINUTE, now) == []
