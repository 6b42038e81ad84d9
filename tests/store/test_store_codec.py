"""Round trips of the stored-message layout (codec.remoting.message), with hypothesis."""
import random
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from codec.remoting import message as M

text = st.text(alphabet=st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)),
               max_size=20)
topics = text.filter(lambda t: 0 < len(t.encode()) <= 127)
names = text.filter(lambda t: t and t not in (M.PROP_INNER_NUM, M.PROP_TAGS_CODES, M.PROP_INNER_KEYS))
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
i32 = st.integers(-2**31, 2**31 - 1)
i64 = st.integers(-2**63, 2**63 - 1)


@st.composite
def messages(draw):
    n = draw(st.integers(1, 5))
    return M.Message(
        topic=draw(topics), queue_id=draw(st.integers(0, 2**31 - 1)), body=draw(st.binary(max_size=300)),
        properties=draw(st.dictionaries(names, text, max_size=4)), flag=draw(i32),
        sys_flag=draw(st.sampled_from([0, M.COMPRESSED_FLAG, M.TRANSACTION_PREPARED_TYPE, M.MULTI_TAGS_FLAG])),
        born_timestamp=draw(i64), born_host=(draw(ipv4), draw(i32)), reconsume_times=draw(i32),
        prepared_transaction_offset=draw(i64), batch_count=n,
        tags_codes=draw(st.none() | st.lists(i64, min_size=n, max_size=n)),
        keys=draw(st.none() | st.lists(text.filter(lambda k: k and " " not in k), min_size=1, max_size=3)))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(messages(), i64, i64, i64, ipv4, i32)
def test_round_trip(msg, qoff, phys, ts, shost, sport):
    raw = M.encode(msg, qoff, phys, ts, (shost, sport))
    out = M.decode(b"junk" + raw, 4)
    assert out.size == len(raw) and out.raw == raw
    for f in ("topic", "queue_id", "body", "properties", "flag", "born_timestamp", "born_host",
              "reconsume_times", "prepared_transaction_offset", "batch_count", "keys"):
        assert getattr(out, f) == getattr(msg, f), f
    expect_codes = msg.tags_codes
    if expect_codes and expect_codes.count(M.tags_code_of(msg.properties)) == len(expect_codes):
        expect_codes = None
    assert out.tags_codes == expect_codes
    assert out.sys_flag == msg.sys_flag | (M.INNER_BATCH_FLAG if msg.batch_count > 1 else 0)
    assert (out.queue_offset, out.physical_offset, out.store_timestamp, out.store_host) == (qoff, phys, ts, (shost, sport))
    assert out.body_crc == zlib.crc32(msg.body) & 0x7FFFFFFF
    assert M.parse_msg_id(out.msg_id) == (shost, sport, phys)


@pytest.mark.parametrize("body", [b"", b"\xff" * (4 << 20)])
def test_empty_and_4mib_bodies(body):
    msg = M.Message("话题-тема", 3, body, {"TAGS": "标签", "KEYS": "ключ k2", "ユーザー": "värde"})
    out = M.decode(M.encode(msg, 7, 1 << 40, 123, ("10.1.2.3", 10911)))
    assert out.body == body and out.topic == msg.topic and out.properties == msg.properties


def test_exact_layout():
    """Offsets of the fixed fields as Java's MessageDecoder reads them."""
    msg = M.Message("T", 2, b"abc", {"TAGS": "A"}, flag=9, born_timestamp=1000, born_host=("1.2.3.4", 5))
    raw = M.encode(msg, 11, 22, 33, ("5.6.7.8", 10911))
    assert int.from_bytes(raw[0:4], "big") == len(raw) == 88 + 3 + 1 + 1 + 2 + len("TAGS\x01A\x02")
    assert raw[4:8] == bytes.fromhex("daa320a7")
    assert int.from_bytes(raw[12:16], "big") == 2 and int.from_bytes(raw[20:28], "big") == 11
    assert int.from_bytes(raw[28:36], "big") == 22 and raw[48:56] == bytes([1, 2, 3, 4, 0, 0, 0, 5])
    assert int.from_bytes(raw[56:64], "big") == 33 and raw[64:68] == bytes([5, 6, 7, 8])
    assert raw[84:88] == b"\x00\x00\x00\x03" and raw[88:91] == b"abc" and raw[91:93] == b"\x01T"
    assert raw[93:95] == b"\x00\x07" and raw[95:] == b"TAGS\x01A\x02"


def test_java_hash_codes():
    # values of String.hashCode() in Java
    assert M.tag_hash("hello") == 99162322
    assert M.tag_hash("TagA") == 2598919
    assert M.tag_hash("polygenelubricants") == -2147483648
    assert M.tag_hash("😀") == 1772899
    assert M.tag_hash("") == 0


def _java_hash_loop(s: str) -> int:
    """String.hashCode exactly as Java writes it: h = 31 * h + unit over the UTF-16 units."""
    raw = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def test_java_hash_matches_the_loop_on_every_length_and_character():
    """The base-31 reading of ASCII keys (and the loop it falls back to) against Java's loop: every
    ASCII code, index keys' shapes, and lengths on either side of the fast path's bound."""
    rng = random.Random(25)
    texts = [chr(c) * n for c in range(128) for n in (1, 2, 7)]
    texts += ["TopicTest#7F00000100012A9F1A2B3C4D5E6F0000", "%RETRY%g#KEY 1", "\x00\x7f" * 30]
    for n in (1, 30, 31, 32, 400, 3999, 4000, 4001, 9000):
        texts.append("".join(chr(rng.randrange(128)) for _ in range(n)))
    texts += ["".join(chr(rng.choice((rng.randrange(128), rng.randrange(0x80, 0x10FFFF)))) for _ in range(40))
              for _ in range(50)]
    texts = [t for t in texts if not any(0xD800 <= ord(c) < 0xE000 for c in t)]  # no lone surrogates
    for t in texts:
        assert M.java_hash(t) == _java_hash_loop(t), t[:40]


def test_decode_rejects_garbage():
    good = M.encode(M.Message("T", 0, b"x"))
    for bad in (good[:50], b"\x00" * 100, good[:4] + b"\x00\x00\x00\x00" + good[8:]):
        with pytest.raises(M.MessageFormatError):
            M.decode(bad)
    with pytest.raises(M.MessageFormatError):
        M.parse_msg_id("zz")


def test_oversized_reserved_properties_are_dropped_not_fatal():
    keys = [f"key-{i:05d}-" + "x" * 30 for i in range(1000)]
    msg = M.Message("T", 0, b"batch", {"TAGS": "A"}, batch_count=1000, keys=keys)
    out = M.decode(M.encode(msg))
    assert out.batch_count == 1000 and out.keys is None and out.properties == {"TAGS": "A"}
    with pytest.raises(M.MessageFormatError):
        M.encode(M.Message("T", 0, b"", {"big": "x" * 40000}))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(messages(), i64, i64, st.integers(0, 400), st.integers(0, 255))
def test_plain_header_only_where_decode_succeeds(msg, qoff, phys, at, byte):
    """plain_header vouches for an entry only if decode takes it as one plain message; any mutated
    byte either keeps that true or makes plain_header step aside."""
    raw = M.encode(msg, qoff, phys, 1, ("1.2.3.4", 5))
    mutated = raw[:at] + bytes([byte]) + raw[at + 1:] if at < len(raw) else raw
    for buf in (raw, mutated):
        h = M.plain_header(buf)
        if h is not None:
            out = M.decode(buf)
            assert h == M.HEADER.unpack_from(buf) and out.batch_count == 1 and out.raw == buf
    plain = msg.batch_count == 1 and not msg.tags_codes and not msg.keys
    if plain and msg.topic.isascii() and all(k.isascii() and v.isascii() for k, v in msg.properties.items()):
        assert M.plain_header(raw) is not None


def test_plain_header_steps_aside():
    good = M.encode(M.Message("T", 0, b"x", {"TAGS": "A"}))
    assert M.plain_header(good) == M.HEADER.unpack_from(good)
    batch = M.encode(M.Message("T", 0, b"x", batch_count=2))
    utf8 = M.encode(M.Message("话题", 0, b"x"))
    bad_reserved = M.encode(M.Message("T", 0, b"x", {M.PROP_INNER_NUM: "x"}))
    with pytest.raises(M.MessageFormatError):
        M.decode(bad_reserved)
    for buf in (good[:50], good + b"\x00", bytearray(good), batch, utf8, M.encode(M.Message("T", 0, b"", {"p": "é"})),
                bad_reserved):
        assert M.plain_header(buf) is None
