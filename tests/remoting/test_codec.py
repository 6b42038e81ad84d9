"""codec/remoting unit tests: framing in both header serializations, batch bodies, ids, fastjson bodies."""
import json
import struct

import pytest
from hypothesis import given, strategies as st

from codec.remoting import (JSON, MAX_FRAME, ROCKETMQ, FrameReader, ProtocolError, RemotingCommand,
                            decode_frame, encode)
from codec.remoting.bodies import BatchItem, decode_batch, dumps_mq_map, encode_batch, loads, make_uniq_id


def test_json_request_matches_reference_example():
    cmd = RemotingCommand(code=105, ext_fields={"topic": "TopicTest"}, opaque=7, version=409)
    frame = encode(cmd)
    assert len(frame) == 139
    assert frame[:8] == bytes.fromhex("0000008700000083")
    got = decode_frame(frame[4:])
    assert (got.code, got.opaque, got.ext_fields, got.serialize_type) == (105, 7, {"topic": "TopicTest"}, JSON)


def test_rocketmq_request_matches_reference_example():
    cmd = RemotingCommand(code=105, ext_fields={"topic": "TopicTest"}, opaque=7, version=409,
                          serialize_type=ROCKETMQ)
    expected = bytes.fromhex("0000002d01000029006900019900000007000000000000000000000014"
                             "0005746f7069630000000954 6f70696354657374".replace(" ", ""))
    assert encode(cmd) == expected
    got = decode_frame(expected[4:])
    assert (got.code, got.opaque, got.version, got.language, got.ext_fields) == (105, 7, 409, "JAVA",
                                                                                 {"topic": "TopicTest"})


@given(code=st.integers(0, 32767), opaque=st.integers(-2**31, 2**31 - 1), flag=st.sampled_from([0, 1, 2]),
       remark=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
       fields=st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=30), max_size=5),
       body=st.binary(max_size=64), stype=st.sampled_from([JSON, ROCKETMQ]))
def test_round_trip_both_serializations(code, opaque, flag, remark, fields, body, stype):
    if stype == ROCKETMQ:  # a zero-length string reads back as null in the binary form
        fields = {k: v for k, v in fields.items() if v}
    cmd = RemotingCommand(code=code, ext_fields=fields, body=body, opaque=opaque, flag=flag, remark=remark,
                          serialize_type=stype)
    reader = FrameReader()
    data = encode(cmd)
    for i in range(0, len(data), 7):  # arrives in pieces
        reader.feed(data[i:i + 7])
    got = reader.next_command()
    assert got == cmd
    assert reader.next_command() is None


def test_json_header_escapes_property_separators():
    cmd = RemotingCommand(code=310, ext_fields={"i": "TAGS\x01A\x02"})
    raw = encode(cmd)
    assert b"\\u0001" in raw and b"\x01" not in raw
    assert decode_frame(raw[4:]).ext_fields["i"] == "TAGS\x01A\x02"


def test_flags_and_response():
    req = RemotingCommand(code=15, opaque=9, flag=2)
    assert req.is_oneway and not req.is_response
    resp = req.response(0, {"offset": 5, "ok": True})
    assert resp.is_response and resp.opaque == 9 and resp.ext_fields == {"offset": "5", "ok": "true"}


@pytest.mark.parametrize("bad", [
    struct.pack(">ii", 4, 0xFF),                       # header length beyond the frame
    struct.pack(">iI", 6, (5 << 24) | 2) + b"{}",      # unknown serialize type
    struct.pack(">iI", 7, 3) + b"{x}",                 # not JSON
    struct.pack(">iI", 8, 4) + b"[1] ",               # JSON but not an object
    struct.pack(">iI", 10, (1 << 24) | 6) + b"\0" * 6,  # truncated binary header
    struct.pack(">iI", 18, 14) + b'{"code":1}{"x"',  # an object followed by more text
])
def test_malformed_frames_raise(bad):
    reader = FrameReader()
    reader.feed(bad)
    with pytest.raises(ProtocolError):
        reader.next_command()


def test_json_header_lenient_forms_decode():
    """Whitespace around the object and non-string extFields values (some clients send numbers)."""
    header = b' {"code":11,"opaque":3,"extFields":{"queueId":2,"ok":true,"topic":"T"}} '
    frame = struct.pack(">iI", 4 + len(header) + 4, len(header)) + header + b"body"
    reader = FrameReader()
    reader.feed(frame + frame)
    for _ in range(2):  # two frames in one read, each decoded in place
        cmd = reader.next_command()
        assert (cmd.code, cmd.opaque, cmd.body) == (11, 3, b"body")
        assert cmd.ext_fields == {"queueId": "2", "ok": "true", "topic": "T"}
    assert reader.next_command() is None


def test_frame_cap():
    reader = FrameReader()
    reader.feed(struct.pack(">i", MAX_FRAME - 3))
    with pytest.raises(ProtocolError):
        reader.next_command()
    reader = FrameReader()
    reader.feed(struct.pack(">i", MAX_FRAME - 4))  # the largest legal frame just waits for more bytes
    assert reader.next_command() is None


def test_batch_body_round_trip():
    items = [BatchItem(0, b"a" * 10, "TAGS\x01A\x02"), BatchItem(3, b"", "")]
    raw = encode_batch(items)
    assert struct.unpack_from(">iii", raw, 0) == (20 + 10 + 2 + 7, 0, 0)
    assert decode_batch(raw) == items
    with pytest.raises(ValueError):
        decode_batch(raw[:-1])


def test_uniq_id_layout():
    uid = make_uniq_id(bytes([127, 0, 0, 1]), 70000, -5, 12345, 65535)
    assert len(uid) == 32 and uid == uid.upper()
    assert uid.startswith("7F000001")


def test_fastjson_bodies():
    assert loads(b'{"brokerAddrs":{0:"h:1"}}') == {"brokerAddrs": {"0": "h:1"}}
    text = dumps_mq_map({("T", "broker-a", 1): {"brokerOffset": 3}})
    assert text == '{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":3}}'
    assert loads('{"offsetTable":' + text + ',"consumeTps":0.0}') == {
        "offsetTable": {("T", "broker-a", 1): {"brokerOffset": 3}}, "consumeTps": 0.0}
    assert json.loads(dumps_mq_map({})) == {}
