"""interop/: the Kafka ⇄ RocketMQ translation, without a server."""
import ast
import pathlib

from codec.kafka import records
from codec.remoting import message
from codec.remoting.tags import parse_tags
from interop import headers, inner_batch, to_kafka, to_rocketmq
from semantics import routing

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_interop_imports_only_codec():
    ours = {"codec", "store", "semantics", "gateway", "client", "spark", "compat", "bench", "interop"}
    for path in (ROOT / "interop").glob("*.py"):
        assert _imports(path) & ours <= {"codec", "interop"}, path.name


def test_routing_header_names_are_the_routing_properties():
    assert headers.ROUTING_HEADERS == (routing.PROPERTY_DELAY, routing.PROPERTY_START_DELIVER_TIME)


def _batch(rows, **kw) -> records.Batch:
    return records.parse_batches(records.build_batch(rows, base_timestamp=rows[0][0], **kw))[0]


def test_plain_batch_is_not_indexed():
    b = _batch([(1000 + i, None, b"v", []) for i in range(5)])
    assert inner_batch.index_info(b) is inner_batch.NOT_INDEXED


def test_index_info_of_tags_keys_and_routing():
    b = _batch([(1000, None, b"a", []),
                (1001, b"k1", b"b", [("TAGS", b"A"), ("KEYS", b"x y")]),
                (1002, None, b"c", [("DELAY", b"3")])])
    idx = inner_batch.index_info(b)
    assert idx.tags_codes == [0, message.tag_hash("A"), 0]
    assert idx.keys == ["x", "y", "k1"]
    assert idx.routing == {"DELAY": "3"}
    pieces = inner_batch.split_by_routing(b)
    assert [(p.record_count, at) for p, at in pieces] == [(2, range(0, 2)), (1, range(2, 3))]


def test_entry_message_stores_the_batch_verbatim():
    b = _batch([(1000 + i, None, b"v", [("TAGS", b"A")]) for i in range(3)], producer_id=7, producer_epoch=2,
               base_sequence=40)
    idx = inner_batch.index_info(b)
    msg = inner_batch.entry_message("t", 1, b, idx, {}, now=5000, append_time=False)
    assert (msg.body, msg.batch_count, msg.born_timestamp) == (b.data, 3, 1002)
    assert msg.sys_flag & message.INNER_BATCH_FLAG and msg.tags_codes == idx.tags_codes
    raw = message.encode(msg, queue_offset=10)
    assert inner_batch.producer_fields(raw) == (7, 2, 40, 3)
    assert inner_batch.record_timestamps(message.decode(raw)) == [(0, 1000), (1, 1001), (2, 1002)]
    native = message.encode(message.Message("t", 0, b"body", properties={"TAGS": "A"}))
    assert inner_batch.producer_fields(native) is None


def test_headers_and_properties_round_trip():
    props = {"TAGS": "A", "KEYS": "k1", "color": "red", message.PROP_INNER_NUM: "3"}
    key, hdrs = headers.message_headers(props)
    assert key == b"k1" and ("color", b"red") in hdrs and message.PROP_INNER_NUM not in dict(hdrs)
    rec = records.decode_records(_batch([(1, key, b"v", hdrs)]).records_bytes(), 1)[0]
    assert headers.record_properties(rec) == {"TAGS": "A", "KEYS": "k1", "color": "red"}


def test_native_message_as_one_record_batch():
    msg = message.decode(message.encode(message.Message("t", 0, b"body", properties={"KEYS": "k", "TAGS": "A"},
                                                        born_timestamp=1234)))
    b = records.parse_batches(to_kafka.native_batch(msg, 42))[0]
    rec = records.decode_records(b.records_bytes(), 1)[0]
    assert (b.base_offset, b.base_timestamp, rec.key, rec.value) == (42, 1234, b"k", b"body")
    assert dict(rec.headers)["TAGS"] == b"A"


def test_view_batch_cuts_an_inner_batch_to_the_matching_records():
    rows = [(1000 + i, None, f"v{i}".encode(), [("TAGS", b"A" if i % 2 == 0 else b"B")]) for i in range(5)]
    b = _batch(rows)
    raw = message.encode(inner_batch.entry_message("t", 0, b, inner_batch.index_info(b), {}, 0, False))
    cut = records.parse_batches(to_kafka.view_batch(raw, 7, 3, parse_tags("A")))[0]
    recs = records.decode_records(cut.records_bytes(), cut.record_count)
    assert cut.base_offset == 7 and [r.value for r in recs] == [b"v0", b"v2", b"v4"]
    tail = records.parse_batches(to_kafka.view_batch(raw, 8, 2, parse_tags("A")))[0]
    assert [r.value for r in records.decode_records(tail.records_bytes(), 2)] == [b"v2", b"v4"]
    whole = to_kafka.view_batch(raw, 9, 5, parse_tags("*"))
    assert whole == records.with_base_offset(b.data, 9)


def test_inner_batch_as_rocketmq_messages():
    b = _batch([(1000, b"key1", b"a", [("TAGS", b"A")]), (1001, None, b"b", [("UNIQ_KEY", b"U2")])])
    stored = message.decode(message.encode(inner_batch.entry_message("t", 0, b, inner_batch.index_info(b), {}, 0,
                                                                     False), queue_offset=20, physical_offset=300))
    msgs = to_rocketmq.records_as_messages(stored)
    assert [m.body for m in msgs] == [b"a", b"b"]
    assert msgs[0].properties == {"TAGS": "A", "KEYS": "key1", "UNIQ_KEY": to_rocketmq.record_uniq_key(300, 0)}
    assert msgs[1].properties["UNIQ_KEY"] == "U2" and not msgs[1].sys_flag & message.INNER_BATCH_FLAG
    found = to_rocketmq.find_record(stored, "U2")
    assert (found.queue_offset, found.body) == (21, b"b")
    assert [message.decode(e).body for e in to_rocketmq.expand_matching_key(stored, "key1")] == [b"a"]
