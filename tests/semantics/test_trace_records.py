"""The decoder of RocketMQ client trace records (semantics.message_trace): the field orders of the
client's TraceDataEncoder (a Pub with and without offsetMsgId, SubBefore, SubAfter with and without
its time and group, EndTransaction), one message's records in time order, and bodies that are not
trace data (random bytes, cut records, wrong numbers) read as far as they are sound, never raising."""
from __future__ import annotations

import random

from semantics.message_trace import decode, of_message

C, F = "\x01", "\x02"
PUB = C.join(["Pub", "1700000000000", "DefaultRegion", "pg", "t", "ID1", "TagT", "k1 k2", "127.0.0.1:10911", "5",
              "3", "0", "OFFID", "true"]) + F
OLD_PUB = C.join(["Pub", "1700000000000", "DefaultRegion", "pg", "t", "ID2", "TagT", "k", "h:1", "5", "3", "0",
                  "false"]) + F
BEFORE = C.join(["SubBefore", "1700000000005", "DefaultRegion", "cg", "req", "ID1", "2", "k1 k2"]) + F
AFTER = C.join(["SubAfter", "req", "ID1", "7", "true", "k1 k2", "0", "1700000000005", "cg"]) + F
CLOUD_AFTER = C.join(["SubAfter", "req", "ID1", "7", "false", "k1 k2", "0", ""]) + F
END = C.join(["EndTransaction", "1700000000001", "DefaultRegion", "txpg", "t", "ID1", "TagT", "k1", "h:1", "1",
              "TX1", "ROLLBACK_MESSAGE", "true"]) + F


def test_field_orders_of_each_record_type():
    pub, old, before, after, cloud, end = decode((PUB + OLD_PUB + BEFORE + AFTER + CLOUD_AFTER + END).encode())
    assert (pub["type"], pub["timestamp"], pub["group"], pub["topic"], pub["keys"], pub["cost_ms"], pub["msg_type"],
            pub["offset_msg_id"], pub["success"]) == ("Pub", 1700000000000, "pg", "t", "k1 k2", 3, "Normal", "OFFID", True)
    assert (old["msg_id"], old["success"], "offset_msg_id" in old) == ("ID2", False, False)
    assert (before["group"], before["retry_times"], before["request_id"]) == ("cg", 2, "req")
    assert (after["cost_ms"], after["success"], after["timestamp"], after["group"]) == (7, True, 1700000000005, "cg")
    assert (cloud["success"], "timestamp" in cloud, "group" in cloud) == (False, False, False)
    assert (end["group"], end["msg_type"], end["transaction_id"], end["transaction_state"], end["from_check"]) == \
        ("txpg", "Trans_Half", "TX1", "ROLLBACK_MESSAGE", True)


def test_one_messages_records_in_time_order():
    records = decode((CLOUD_AFTER + AFTER + BEFORE + END + PUB + OLD_PUB).encode())
    assert [r["type"] for r in of_message(records, "ID1")] == ["Pub", "EndTransaction", "SubBefore", "SubAfter",
                                                              "SubAfter"]
    assert of_message(records, "nothing") == []


def test_malformed_bodies_never_raise():
    assert decode(b"\xff\xfe") == [] and decode(b"") == [] and decode(b"Pub") == []
    bad = decode(f"Pub{C}soon{C}r{C}pg{C}t{C}ID9{C}{C}{C}{C}x{C}-{C}99{C}{C}maybe{F}Sub{C}x{F}".encode())
    assert bad == [{"type": "Pub", "region": "r", "group": "pg", "topic": "t", "msg_id": "ID9"}]
    rng, whole = random.Random(27), (PUB + BEFORE + AFTER + END).encode()
    alphabet = b"\x01\x02PubSubAfterBefore0123456789-.truefalse\xff\xc2\xb2\xd9\xa3 "
    for _ in range(3000):
        decode(whole[:rng.randrange(len(whole) + 1)])
        decode(bytes(rng.choice(alphabet) for _ in range(rng.randrange(120))))
        decode(bytes(rng.randrange(256) for _ in range(rng.randrange(60))))
