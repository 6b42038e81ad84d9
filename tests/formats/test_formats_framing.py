"""Transport framing and the `__consumer_offsets` records: the construct definitions
(codec.formats.framing, codec.formats.offsets_topic) and the hot paths agree, both directions."""
from __future__ import annotations

import cramjam
from hypothesis import given, settings
from hypothesis import strategies as st

from codec import grpc
from codec.formats.framing import GrpcMessage, Http2FrameHeader, KafkaFrame, XerialSnappy
from codec.formats.offsets_topic import GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue
from codec.kafka import protocol, records
from format_strategies import blobs, i32, i64, text
from gateway.grpc import http2
from gateway.kafka import offsets_topic as ot
from semantics.kafka_groups import Group, Member


@settings(deadline=None)
@given(correlation_id=i32, client_id=text)
def test_kafka_frame_both_directions(correlation_id, client_id):
    frame = protocol.request_frame(18, 0, correlation_id, {}, client_id)
    assert KafkaFrame.parse(frame).payload == frame[4:]
    assert KafkaFrame.build(dict(payload=frame[4:])) == frame


@settings(deadline=None)
@given(payload=blobs)
def test_grpc_message_both_directions(payload):
    raw = grpc.frame(payload)
    p = GrpcMessage.parse(raw)
    assert (p.compressed, p.payload) == (0, payload)
    built = GrpcMessage.build(dict(compressed=0, payload=payload))
    assert built == raw and grpc.MessageReader(1 << 20).feed(built) == [payload]


@settings(deadline=None)
@given(length=st.integers(0, (1 << 24) - 1), end_stream=st.booleans(), stream_id=st.integers(1, (1 << 31) - 1))
def test_http2_headers_frame_header_both_directions(length, end_stream, stream_id):
    raw = http2._HEADERS_FRAME.pack(length >> 16, length & 0xFFFF, 0x1, 0x5 if end_stream else 0x4, stream_id)
    p = Http2FrameHeader.parse(raw)
    assert (p.length, p.type, p.flags, p.stream_id) == (length, 1, 0x5 if end_stream else 0x4, stream_id)
    assert Http2FrameHeader.build(p) == raw


@settings(deadline=None)
@given(chunks=st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=4))
def test_xerial_snappy_built_by_the_definition_decompresses_on_the_hot_path(chunks):
    raw = XerialSnappy.build(dict(version=1, compatible_version=1,
                                  blocks=[bytes(cramjam.snappy.compress_raw(c)) for c in chunks]))
    assert records.decompress(records.SNAPPY, raw) == b"".join(chunks)
    p = XerialSnappy.parse(raw)
    assert [bytes(cramjam.snappy.decompress_raw(b)) for b in p.blocks] == chunks


@settings(deadline=None)
@given(group=text, topic=text, partition=i32)
def test_offset_commit_key_both_directions(group, topic, partition):
    raw = ot.offset_key(group, topic, partition)
    p = OffsetCommitKey.parse(raw)
    assert (p.group, p.topic, p.partition) == (group, topic, partition)
    assert OffsetCommitKey.build(dict(group=group, topic=topic, partition=partition)) == raw


@settings(deadline=None)
@given(offset=i64, epoch=i32, metadata=text, ts=i64, topic_id=st.binary(min_size=16, max_size=16))
def test_offset_commit_value_both_directions(offset, epoch, metadata, ts, topic_id):
    raw = ot.offset_value(offset, epoch, metadata, ts, topic_id)
    p = OffsetCommitValue.parse(raw)
    assert (p.offset, p.leader_epoch, p.metadata, p.commit_timestamp) == (offset, epoch, metadata, ts)
    assert [(f.tag, f.data) for f in p.tagged_fields.fields] == [(0, topic_id)]
    built = OffsetCommitValue.build(dict(offset=offset, leader_epoch=epoch, metadata=metadata, commit_timestamp=ts,
                                         tagged_fields=dict(fields=[dict(tag=0, data=topic_id)])))
    assert built == raw


members = st.lists(st.builds(Member, member_id=text, instance_id=st.none() | text, client_id=text,
                             client_host=text, session_ms=i32, rebalance_ms=i32, protocol_type=st.just("consumer"),
                             protocols=st.just([("range", b"sub")]), assignment=blobs), max_size=3)


@settings(deadline=None)
@given(group_id=text, generation=i32, members=members, now=i64)
def test_group_metadata_both_directions(group_id, generation, members, now):
    g = Group(group_id, generation=generation, protocol_type="consumer", protocol="range",
              leader=members[0].member_id if members else None, members={m.member_id: m for m in members})
    members = list(g.members.values())
    raw = ot.group_value(g, now)
    p = GroupMetadataValue.parse(raw)
    assert (p.protocol_type, p.generation, p.current_state_timestamp) == ("consumer", generation, now)
    assert (p.protocol, p.leader) == (("range", g.leader) if members else (None, None))
    assert [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout, m.session_timeout,
             m.subscription, m.assignment) for m in p.members] == [
        (m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_ms, m.session_ms, b"sub", m.assignment)
        for m in members]
    assert GroupMetadataValue.build(p) == raw
    key = ot.group_key(group_id)
    assert GroupMetadataKey.parse(key).group == group_id and GroupMetadataKey.build(dict(group=group_id)) == key


@settings(deadline=None)
@given(payloads=st.lists(blobs, min_size=1, max_size=4))
def test_size_prefix_the_connection_counter_reads_is_the_frames(payloads):
    """gateway.connections counts whole frames of both protocols by their i32 size prefix: the
    KafkaFrame (= the remoting Frame's) length field, over frames built by the definition."""
    from codec.kafka.connection import SIZE
    from gateway.connections import _SIZE
    stream = b"".join(KafkaFrame.build(dict(payload=p)) for p in payloads)
    at, sizes = 0, []
    while at < len(stream):
        (n,) = _SIZE.unpack_from(stream, at)
        assert SIZE.unpack_from(stream, at) == (n,)
        sizes.append(n)
        at += 4 + n
    assert sizes == [len(p) for p in payloads]
