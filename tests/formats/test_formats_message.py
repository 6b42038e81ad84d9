"""The stored message's construct definition (codec.formats.message) and the hot path
(codec.remoting.message, codec.remoting.bodies) agree byte for byte, both directions."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codec.formats import doc
from codec.formats.message import BlankMarker, EntryHead, MessageBatch, OffsetMsgId, StoredMessage, UniqKey
from codec.remoting import bodies
from codec.remoting import message as M
from format_strategies import blobs, i32, i64, ipv4, properties, topics, u31

_V4_FLAGS = st.integers(0, 0xFFFF).map(lambda f: f & ~(M.BORNHOST_V6_FLAG | M.STOREHOSTADDRESS_V6_FLAG | 0x80))

messages = st.builds(
    M.Message, topic=topics, queue_id=u31, body=blobs, properties=properties, flag=i32, sys_flag=_V4_FLAGS,
    born_timestamp=i64, born_host=st.tuples(ipv4, i32), reconsume_times=i32, prepared_transaction_offset=i64,
    batch_count=st.integers(1, 5))


@settings(deadline=None, max_examples=150)
@given(msg=messages, qoff=i64, phys=i64, ts=i64, host=st.tuples(ipv4, i32))
def test_hot_path_entry_parses_with_the_definition(msg, qoff, phys, ts, host):
    raw = M.encode(msg, qoff, phys, ts, host)
    p = StoredMessage.parse(raw)
    want_sys = msg.sys_flag | (M.INNER_BATCH_FLAG if msg.batch_count != 1 else 0)
    assert (p.total_size, p.body_crc, p.queue_id, p.flag, p.queue_offset, p.physical_offset, p.sys_flag) == (
        len(raw), M.body_crc(msg.body), msg.queue_id, msg.flag, qoff, phys, want_sys)
    assert (p.born_timestamp, (p.born_host, p.born_port), p.store_timestamp, (p.store_host, p.store_port)) == (
        msg.born_timestamp, msg.born_host, ts, host)
    assert (p.reconsume_times, p.prepared_transaction_offset, p.body, p.topic) == (
        msg.reconsume_times, msg.prepared_transaction_offset, msg.body, msg.topic)
    assert p.properties == M.stored_properties(msg)
    assert StoredMessage.build(p) == raw
    head = EntryHead.parse(raw)
    assert (head.total_size, head.magic) == (len(raw), M.MAGIC_V1)


@settings(deadline=None, max_examples=150)
@given(msg=messages, qoff=i64, phys=i64, ts=i64, host=st.tuples(ipv4, i32))
def test_definition_built_entry_decodes_on_the_hot_path(msg, qoff, phys, ts, host):
    raw = StoredMessage.build(dict(
        queue_id=msg.queue_id, flag=msg.flag, queue_offset=qoff, physical_offset=phys, sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp, born_host=msg.born_host[0], born_port=msg.born_host[1],
        store_timestamp=ts, store_host=host[0], store_port=host[1], reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset, body=msg.body, topic=msg.topic,
        properties=msg.properties))
    d = M.decode(raw)
    assert (d.size, d.body_crc, d.queue_id, d.flag, d.queue_offset, d.physical_offset, d.sys_flag) == (
        len(raw), M.body_crc(msg.body), msg.queue_id, msg.flag, qoff, phys, msg.sys_flag)
    assert (d.born_timestamp, d.born_host, d.store_timestamp, d.store_host) == (msg.born_timestamp, msg.born_host,
                                                                              ts, host)
    assert (d.reconsume_times, d.prepared_transaction_offset, d.body, d.topic, d.properties) == (
        msg.reconsume_times, msg.prepared_transaction_offset, msg.body, msg.topic, msg.properties)
    assert d.msg_id == M.make_msg_id(host[0], host[1], phys)
    assert M.encode(M.Message(msg.topic, msg.queue_id, msg.body, msg.properties, msg.flag, msg.sys_flag,
                              msg.born_timestamp, msg.born_host, msg.reconsume_times,
                              msg.prepared_transaction_offset), qoff, phys, ts, host) == raw


def test_named_positions_are_the_definition_offsets():
    """The hot path reads single fields through M.*_AT: each is the definition's offset."""
    offsets = {f: int(o) for o, _s, f, _t, _m in doc.rows(StoredMessage) if o.isdigit()}
    named = {"total_size": M.TOTALSIZE_AT, "magic": M.MAGIC_AT, "body_crc": M.BODY_CRC_AT,
             "queue_id": M.QUEUE_ID_AT, "flag": M.FLAG_AT, "queue_offset": M.QUEUE_OFFSET_AT,
             "physical_offset": M.PHYSICAL_OFFSET_AT, "sys_flag": M.SYSFLAG_AT,
             "born_timestamp": M.BORN_TIMESTAMP_AT, "born_host": M.BORN_HOST_AT, "store_timestamp": M.STORE_TS_AT,
             "store_host": M.STORE_HOST_AT, "reconsume_times": M.RECONSUME_TIMES_AT,
             "prepared_transaction_offset": M.PREPARED_TX_OFFSET_AT, "body": M.BODY_LENGTH_AT}
    assert {f: offsets[f] for f in named} == named
    assert M.BODY_AT == M.HEADER_SIZE == offsets["body"] + 4


@settings(deadline=None)
@given(size=st.integers(8, (1 << 31) - 1))
def test_blank_marker(size):
    raw = M.BLANK.pack(size, M.BLANK_MAGIC)
    assert BlankMarker.parse(raw).total_size == size
    assert BlankMarker.build({"total_size": size}) == raw


@settings(deadline=None)
@given(items=st.lists(st.builds(bodies.BatchItem, flag=i32, body=blobs,
                                properties=properties.map(lambda p: M.properties_to_string(p))), max_size=4))
def test_batch_body_both_directions(items):
    raw = bodies.encode_batch(items)
    parsed = MessageBatch.parse(raw)
    assert [(p.flag, p.body, p.properties) for p in parsed] == [(i.flag, i.body, i.properties) for i in items]
    built = MessageBatch.build([dict(magic=0, body_crc=0, flag=i.flag, body=i.body, properties=i.properties)
                                for i in items])
    assert built == raw
    assert bodies.decode_batch(built) == items


@settings(deadline=None)
@given(host=ipv4, port=i32, phys=i64)
def test_offset_msg_id_both_directions(host, port, phys):
    msg_id = M.make_msg_id(host, port, phys)
    p = OffsetMsgId.parse(bytes.fromhex(msg_id))
    assert (p.store_host, p.store_port, p.physical_offset) == (host, port, phys)
    built = OffsetMsgId.build(dict(store_host=host, store_port=port, physical_offset=phys)).hex().upper()
    assert built == msg_id and M.parse_msg_id(built) == (host, port, phys)


@settings(deadline=None)
@given(ip=st.binary(min_size=4, max_size=4), pid=st.integers(0, 0xFFFF), salt=i32, ms=i32,
       counter=st.integers(0, 0xFFFF))
def test_uniq_key_both_directions(ip, pid, salt, ms, counter):
    key = bodies.make_uniq_id(ip, pid, salt, ms, counter)
    p = UniqKey.parse(bytes.fromhex(key))
    signed16 = lambda v: ((v + 0x8000) & 0xFFFF) - 0x8000  # noqa: E731
    assert (p.ip, p.pid, p.salt, p.ms_in_month, p.counter) == (ip, signed16(pid), salt, ms, signed16(counter))
    assert UniqKey.build(p).hex().upper() == key
