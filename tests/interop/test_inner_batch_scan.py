"""index_info's quick scan (a one-byte search for a letter of each indexed header key before the
substring search) finds each key on any record, and a payload that holds the letters but not the
keys is still not indexed."""
import pytest

from codec.kafka import records
from codec.remoting import message
from interop import inner_batch


def _batch(rows) -> records.Batch:
    return records.parse_batches(records.build_batch(rows, base_timestamp=rows[0][0]))[0]


@pytest.mark.parametrize("header, value, expect", [
    ("TAGS", b"A", ("tags_codes", [0, 0, message.tag_hash("A")])),
    ("KEYS", b"k", ("keys", ["k"])),
    ("DELAY", b"3", ("routing", {"DELAY": "3"})),
    ("__STARTDELIVERTIME", b"99", ("routing", {"__STARTDELIVERTIME": "99"})),
])
@pytest.mark.parametrize("payload", [b"plain lowercase", b"GKYV GKYV TAGKEYSDELAYSTARTDELIVERTIME"])
def test_an_indexed_header_on_a_later_record_is_found(header, value, expect, payload):
    b = _batch([(1000, None, payload, []), (1001, None, payload, []), (1002, None, payload, [(header, value)])])
    field, want = expect
    assert getattr(inner_batch.index_info(b), field) == want


@pytest.mark.parametrize("payload", [b"GKYV TAGS KEYS DELAY", b"\x08TAG \nDELA", bytes(range(256))])
def test_letters_without_the_header_keys_are_not_indexed(payload):
    b = _batch([(1000 + i, None, payload, [("other", b"x")] if i else []) for i in range(4)])
    assert inner_batch.index_info(b) is inner_batch.NOT_INDEXED


@pytest.mark.parametrize("payload", [b"\x08" * 6000 + b"\n" * 6000 + b"$" * 6000, b"\x08TAG" * 3000,
                                     bytes(i * 7 % 26 + 65 for i in range(4096))])
def test_keys_found_past_many_lookalike_bytes(payload):
    """The search hops between the occurrences of each key's first byte and falls back to a substring
    search after many: a key after thousands of them is found, and none is invented."""
    rows = [(1000 + i, None, payload, []) for i in range(3)]
    assert inner_batch.index_info(_batch(rows)) is inner_batch.NOT_INDEXED
    b = _batch(rows + [(1003, None, payload, [("KEYS", b"k")]), (1004, None, payload, [("DELAY", b"2")])])
    info = inner_batch.index_info(b)
    assert info.keys == ["k"] and info.routing == {"DELAY": "2"}
