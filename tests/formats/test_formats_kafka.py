"""Kafka headers, RecordBatch v2 header and records, the consumer protocol's subscription: the construct
definitions (codec.formats.kafka) and the hot paths (codec.kafka.protocol, codec.kafka.records,
semantics.kafka_groups) agree, both directions."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codec.formats.kafka import (ConsumerProtocolSubscription, RecordBatch, RecordBatchHeader, Record, RequestHeaderV1,
                                 RequestHeaderV2, ResponseHeaderV0, ResponseHeaderV1)
from codec.kafka import apis, protocol, records as R
from construct import ConstructError, GreedyRange
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as ClientSubscription
from semantics.kafka_groups import subscription_topics
from format_strategies import blobs, i16, i32, i64, text

Records = GreedyRange(Record)
api_versions = st.sampled_from([(api.key, v) for api in apis.BY_KEY.values()
                                for v in range(api.min_version, api.max_version + 1)])


@settings(deadline=None)
@given(av=api_versions, correlation_id=i32, client_id=text)
def test_request_header_both_directions(av, correlation_id, client_id):
    key, version = av
    flexible = apis.BY_KEY[key].flexible(version)
    frame = protocol.request_frame(key, version, correlation_id, _empty_request(key, version), client_id)
    p = (RequestHeaderV2 if flexible else RequestHeaderV1).parse(frame[4:])
    assert (p.api_key, p.api_version, p.correlation_id, p.client_id) == (key, version, correlation_id, client_id)
    if flexible:
        assert p.tagged_fields.count == 0
    fields = dict(api_key=key, api_version=version, correlation_id=correlation_id, client_id=client_id)
    built = (RequestHeaderV2.build(dict(fields, tagged_fields=dict(fields=[]))) if flexible
             else RequestHeaderV1.build(fields))
    h = protocol.parse_header(built)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id, h.body_offset) == (
        key, version, correlation_id, client_id, len(built))
    assert frame[4:4 + len(built)] == built


def _empty_request(key, version):
    """A body the request encoder accepts: every field at its default."""
    return {}


@settings(deadline=None)
@given(av=api_versions, correlation_id=i32, tags=st.lists(st.tuples(st.integers(0, 1000), blobs), max_size=3))
def test_response_header_both_directions(av, correlation_id, tags):
    key, version = av
    flexible = key != apis.API_VERSIONS.key and apis.BY_KEY[key].flexible(version)
    payload = bytes(protocol.response_frame(key, version, correlation_id, {}))[4:]
    p = (ResponseHeaderV1 if flexible else ResponseHeaderV0).parse(payload)
    assert p.correlation_id == correlation_id
    if flexible:
        built = ResponseHeaderV1.build(dict(correlation_id=correlation_id,
                                            tagged_fields=dict(fields=[dict(tag=t, data=d) for t, d in tags])))
        assert protocol.skip_tagged_fields(built, 4) == len(built)
        assert payload.startswith(ResponseHeaderV1.build(dict(correlation_id=correlation_id,
                                                              tagged_fields=dict(fields=[]))))
    else:
        assert payload.startswith(ResponseHeaderV0.build(dict(correlation_id=correlation_id)))


headers = st.lists(st.tuples(text, st.none() | blobs), max_size=3)
records = st.lists(st.tuples(st.integers(0, 1 << 40), st.none() | blobs, st.none() | blobs, headers),
                   min_size=1, max_size=5)


@settings(deadline=None)
@given(recs=records, base_offset=i64, producer_id=i64, epoch=i16, seq=i32, leader_epoch=i32,
       codec=st.sampled_from([R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD]))
def test_hot_path_batch_parses_with_the_definition(recs, base_offset, producer_id, epoch, seq, leader_epoch, codec):
    base_ts = recs[0][0]
    raw = R.build_batch(recs, base_offset, base_ts, codec, producer_id, epoch, seq, leader_epoch)
    (batch,) = R.parse_batches(raw)
    p = RecordBatch.parse(raw)
    h = p.header
    assert (h.base_offset, h.batch_length, h.partition_leader_epoch, h.crc, h.attributes, h.last_offset_delta,
            h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence, h.record_count) == (
        batch.base_offset, len(raw) - R.LENGTH_OVERHEAD, batch.leader_epoch, batch.crc, batch.attributes,
        batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp, batch.producer_id, batch.producer_epoch,
        batch.base_sequence, batch.record_count)
    assert RecordBatchHeader.build(h) == raw[:R.HEADER_SIZE]
    assert R.PRODUCER_FIELDS.unpack_from(raw, R.PRODUCER_ID_AT) == (h.producer_id, h.producer_epoch,
                                                                   h.base_sequence, h.record_count)
    stamped = RecordBatch.parse(R.with_log_append_time(raw, 12345)).header
    assert (stamped.max_timestamp, stamped.attributes & R.TIMESTAMP_LOG_APPEND, stamped.crc) == (
        12345, R.TIMESTAMP_LOG_APPEND, R.crc32c(R.with_log_append_time(raw, 12345)[R.CRC_START:]))
    parsed = Records.parse(R.decompress(h.attributes & 7, p.records))
    want = R.decode_records(batch.records_bytes(), batch.record_count)
    assert [(r.offset_delta, r.timestamp_delta, r.key, r.value, [(x.key.decode(), x.value) for x in r.headers])
            for r in parsed] == [(w.offset_delta, w.timestamp_delta, w.key, w.value, w.headers) for w in want]


@settings(deadline=None)
@given(recs=records, base_offset=i64, producer_id=i64, epoch=i16, seq=i32)
def test_definition_built_batch_decodes_on_the_hot_path(recs, base_offset, producer_id, epoch, seq):
    base_ts = recs[0][0]
    body = Records.build([dict(attributes=0, timestamp_delta=ts - base_ts, offset_delta=i, key=k, value=v,
                               headers=[dict(key=hk.encode(), value=hv) for hk, hv in hs])
                          for i, (ts, k, v, hs) in enumerate(recs)])
    n = len(recs)
    max_ts = max(ts for ts, *_ in recs)
    tail = RecordBatchHeader.build(dict(
        base_offset=base_offset, batch_length=49 + len(body), partition_leader_epoch=-1, crc=0, attributes=0,
        last_offset_delta=n - 1, base_timestamp=base_ts, max_timestamp=max_ts, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=seq, record_count=n))[R.CRC_START:] + body
    head = RecordBatchHeader.build(dict(
        base_offset=base_offset, batch_length=49 + len(body), partition_leader_epoch=-1, crc=R.crc32c(tail),
        attributes=0, last_offset_delta=n - 1, base_timestamp=base_ts, max_timestamp=max_ts, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=seq, record_count=n))
    raw = head[:R.CRC_START] + tail
    (batch,) = R.parse_batches(raw)
    assert batch.problem() is None
    assert raw == R.build_batch(recs, base_offset, base_ts, R.NONE, producer_id, epoch, seq)
    got = R.decode_records(batch.records_bytes(), n)
    assert [(g.key, g.value, g.headers, g.offset_delta, g.timestamp_delta) for g in got] == [
        (k, v, [(hk, hv) for hk, hv in hs], i, ts - base_ts) for i, (ts, k, v, hs) in enumerate(recs)]


def test_named_positions_are_the_definition_offsets():
    from codec.formats import doc
    offsets = {f: int(o) for o, _s, f, _t, _m in doc.rows(RecordBatchHeader)}
    assert (offsets["base_offset"], offsets["batch_length"], offsets["crc"], offsets["attributes"],
            offsets["max_timestamp"], offsets["producer_id"], offsets["record_count"]) == (
        R.BASE_OFFSET_AT, R.BATCH_LENGTH_AT, R.CRC_AT, R.ATTRS_AT, R.MAX_TS_AT, R.PRODUCER_ID_AT, R.RECORD_COUNT_AT)
    assert offsets["attributes"] == R.CRC_START and RecordBatchHeader.sizeof() == R.HEADER_SIZE


topic_lists = st.lists(text.filter(lambda t: len(t.encode()) < 1 << 15), max_size=5)


@settings(deadline=None)
@given(version=st.integers(0, 3), topic_list=topic_lists, user_data=blobs)
def test_consumer_subscription_a_client_writes_parses(version, topic_list, user_data):
    """What kafka-python sends in JoinGroup parses with the definition, and the hot path reads its topics."""
    raw = ClientSubscription(version, topic_list, user_data).encode(version=version)
    p = ConsumerProtocolSubscription.parse(raw)
    assert (p.version, list(p.topics)) == (version, topic_list)
    assert subscription_topics(raw) == set(topic_list)


@settings(deadline=None)
@given(version=st.integers(0, 3), topic_list=topic_lists, rest=blobs, cut=st.integers(0, 40))
def test_consumer_subscription_built_by_the_definition_is_read_by_the_hot_path(version, topic_list, rest, cut):
    raw = ConsumerProtocolSubscription.build(dict(version=version, topics=topic_list, rest=rest))
    assert subscription_topics(raw) == set(topic_list)
    damaged = raw[:max(len(raw) - cut, 0)]  # a cut one: no topics where the definition refuses it
    try:
        expected = set(ConsumerProtocolSubscription.parse(damaged).topics)
    except (ConstructError, UnicodeDecodeError):
        expected = set()
    assert subscription_topics(damaged) == expected
