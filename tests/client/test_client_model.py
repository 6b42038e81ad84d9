"""client.model: outgoing properties, compression both ways, decoding pulled bodies."""
import zlib

import cramjam

from client.model import COMPRESS_OVER, Message, compress_body, decode_messages, decompress_body
from codec.remoting.message import Message as StoreMessage, encode


def test_wire_properties():
    m = Message("T", b"x", tags="A", keys=["k1", "k2"], properties={"u": "v"}, delay_level=3)
    assert m.wire_properties() == {"u": "v", "TAGS": "A", "KEYS": "k1 k2", "DELAY": "3", "WAIT": "true"}


def test_compression_round_trip_all_types():
    small = b"s" * COMPRESS_OVER
    assert compress_body(small) == (small, 0)
    big = b"b" * (COMPRESS_OVER + 1)
    body, flag = compress_body(big)
    assert flag == 0x301 and zlib.decompress(body) == big
    for kind, packed in ((0x101, cramjam.lz4.compress(big)), (0x201, cramjam.zstd.compress(big)), (0x1, body)):
        assert decompress_body(bytes(packed), kind) == big


def test_decode_messages_inflates_and_keeps_ids():
    body, flag = compress_body(b"z" * 5000)
    raw = encode(StoreMessage("T", 2, body, {"UNIQ_KEY": "U1", "TAGS": "A"}, sys_flag=flag), queue_offset=7,
                 physical_offset=100, store_host=("127.0.0.1", 9876))
    raw += encode(StoreMessage("T", 2, b"plain", {}), queue_offset=8, physical_offset=100 + len(raw),
                  store_host=("127.0.0.1", 9876))
    a, b = decode_messages(raw)
    assert (a.body, a.msg_id, a.tags, a.queue_offset, a.commit_log_offset) == (b"z" * 5000, "U1", "A", 7, 100)
    assert b.body == b"plain" and b.msg_id == b.offset_msg_id and b.offset_msg_id.startswith("7F00000100002694")
