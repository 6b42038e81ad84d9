"""The stored-message layout of RocketMQ's MessageDecoder (V1 magic, IPv4 hosts).

One CommitLog entry, all integers big-endian:

    0 TOTALSIZE i32 | 4 MAGICCODE i32 | 8 BODYCRC i32 | 12 QUEUEID i32 | 16 FLAG i32
    20 QUEUEOFFSET i64 | 28 PHYSICALOFFSET i64 | 36 SYSFLAG i32 | 40 BORNTIMESTAMP i64
    48 BORNHOST ip4+port i32 | 56 STORETIMESTAMP i64 | 64 STOREHOST ip4+port i32
    72 RECONSUMETIMES i32 | 76 PREPAREDTRANSACTIONOFFSET i64 | 84 BODYLENGTH i32 | 88 BODY
    then TOPICLENGTH u8, TOPIC (UTF-8), PROPERTIESLENGTH i16, PROPERTIES (UTF-8)

This is the exact byte form RocketMQ PULL_MESSAGE returns, so the Java client decodes it.
Code outside this module reads single fields of a raw entry through the named positions below
(`SYSFLAG_AT`, `QUEUE_OFFSET_AT`, ...), never through bare numbers.
"""
from __future__ import annotations

import functools
import socket
import struct
import sys
import time
import zlib
from dataclasses import dataclass, field

try:  # ISA-L's CRC32 (PCLMUL): 5-15x zlib's; the same polynomial, so the same values
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - isal is a dependency; zlib gives identical results
    _crc32 = zlib.crc32

__all__ = [
    "MAGIC_V1", "BLANK_MAGIC", "HEADER", "HEADER_SIZE", "FIXED_SIZE", "BLANK", "INT32", "INT64",
    "TOTALSIZE_AT", "MAGIC_AT", "BODY_CRC_AT", "QUEUE_ID_AT", "FLAG_AT", "QUEUE_OFFSET_AT", "PHYSICAL_OFFSET_AT",
    "SYSFLAG_AT", "BORN_TIMESTAMP_AT", "BORN_HOST_AT", "STORE_TS_AT", "STORE_HOST_AT", "RECONSUME_TIMES_AT",
    "PREPARED_TX_OFFSET_AT", "BODY_LENGTH_AT", "BODY_AT",
    "COMPRESSED_FLAG", "MULTI_TAGS_FLAG", "TRANSACTION_NOT_TYPE", "TRANSACTION_PREPARED_TYPE",
    "TRANSACTION_COMMIT_TYPE", "TRANSACTION_ROLLBACK_TYPE", "BORNHOST_V6_FLAG",
    "STOREHOSTADDRESS_V6_FLAG", "NEED_UNWRAP_FLAG", "INNER_BATCH_FLAG",
    "NAME_VALUE_SEPARATOR", "PROPERTY_SEPARATOR", "PROP_INNER_NUM", "PROP_TAGS_CODES", "PROP_INNER_KEYS",
    "Message", "StoredMessage", "MessageFormatError", "encode", "decode", "body_crc",
    "properties_to_string", "string_to_properties", "tag_hash", "java_hash", "tags_code_of",
    "index_keys", "make_msg_id", "parse_msg_id", "plain_header",
]

MAGIC_V1 = 0xDAA320A7  # MessageDecoder.MESSAGE_MAGIC_CODE (-626843481 as a Java int)
BLANK_MAGIC = 0xCBD43194  # CommitLog.BLANK_MAGIC_CODE (-875286124): "rest of this file is empty"

# MessageSysFlag bits
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

# Properties this store reserves to keep an entry self-describing, so the ConsumeQueue and the
# IndexFile can be rebuilt from the CommitLog alone. `decode` moves them back into their fields.
PROP_INNER_NUM = "INNER_NUM"  # batch_count of an inner batch (RocketMQ's own name)
PROP_TAGS_CODES = "TAGS_CODES"  # explicit tags codes, comma separated, when they differ from TAGS
PROP_INNER_KEYS = "INNER_KEYS"  # extra index keys of an inner batch, space separated

HEADER = struct.Struct(">iIiiiqqiq4siq4siiqi")
HEADER_SIZE = HEADER.size  # 88: everything before the body
FIXED_SIZE = HEADER_SIZE + 1 + 2  # plus topic length byte and properties length short
# Named positions of the fields (MessageDecoder's *_POSITION), for reading one field of a raw entry.
TOTALSIZE_AT = 0
MAGIC_AT = 4
BODY_CRC_AT = 8
QUEUE_ID_AT = 12
FLAG_AT = 16
QUEUE_OFFSET_AT = 20
PHYSICAL_OFFSET_AT = 28
SYSFLAG_AT = 36
BORN_TIMESTAMP_AT = 40
BORN_HOST_AT = 48
STORE_TS_AT = 56
STORE_HOST_AT = 64
RECONSUME_TIMES_AT = 72
PREPARED_TX_OFFSET_AT = 76
BODY_LENGTH_AT = 84
BODY_AT = 88
INT32 = struct.Struct(">i")  # TOTALSIZE, QUEUEID, SYSFLAG, BODYLENGTH ...
INT64 = struct.Struct(">q")  # QUEUEOFFSET, PHYSICALOFFSET, timestamps
BLANK = struct.Struct(">iI")  # TOTALSIZE + BLANK_MAGIC at the end of a CommitLog file
_PROPS_LEN = struct.Struct(">h")
_HOST = struct.Struct(">4si")
_MSG_ID = struct.Struct(">4siq")
MAX_TOPIC_BYTES = 127  # V1 stores the topic length in one (signed, in Java) byte
MAX_PROPERTIES_BYTES = 32767  # a Java short


class MessageFormatError(ValueError):
    """The bytes are not a valid stored message (or a message cannot be stored in this layout)."""


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class Message:
    """What callers append. `batch_count > 1` makes it an inner batch (N logical messages, one entry)."""

    topic: str
    queue_id: int
    body: bytes
    properties: dict = field(default_factory=dict)
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = field(default_factory=_now_ms)
    born_host: tuple = ("127.0.0.1", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    batch_count: int = 1
    tags_codes: list | None = None
    keys: list | None = None


@dataclass(slots=True)
class StoredMessage(Message):
    """A decoded CommitLog entry: every field of the layout plus `raw`, the exact entry bytes."""

    queue_offset: int = 0
    physical_offset: int = 0
    store_timestamp: int = 0
    store_host: tuple = ("127.0.0.1", 0)
    size: int = 0
    body_crc: int = 0
    msg_id: str = ""
    raw: bytes = b""


def body_crc(body) -> int:
    """UtilAll.crc32: java.util.zip.CRC32 masked to a non-negative int."""
    return _crc32(body) & 0x7FFFFFFF


# String.hashCode of ASCII text in C: the sum of unit * 31**k is the text read as a base-31 number
# whose digits may exceed 30; each unit splits into 31 * q + r (q <= 4, r <= 30), so the hash is
# int(r digits, 31) + 31 * int(q digits, 31), mod 2**32. bytes.translate writes the digit strings.
_BASE31 = b"0123456789abcdefghijklmnopqrstu"
_LOW_DIGIT = bytes(_BASE31[u % 31] for u in range(128)) + bytes(128)
_HIGH_DIGIT = bytes(_BASE31[u // 31] for u in range(128)) + bytes(128)
# int() of a digit string this long stays within its limit (sys.get_int_max_str_digits: 4300 by default)
_BASE31_MAX = min(4000, sys.get_int_max_str_digits() or 4000)


def java_hash(s: str) -> int:
    """Java String.hashCode as a signed 32-bit int (over UTF-16 code units). Every message's
    UNIQ_KEY and KEYS are hashed for the IndexFile: ASCII keys take the base-31 reading above
    (~6x faster than a Python loop per character), others the loop."""
    if s.isascii() and 0 < len(s) <= _BASE31_MAX:
        units = s.encode()
        h = (int(units.translate(_LOW_DIGIT), 31) + 31 * int(units.translate(_HIGH_DIGIT), 31)) & 0xFFFFFFFF
    else:
        if s.isascii():
            units = s.encode()
        else:
            raw = s.encode("utf-16-be")
            units = struct.unpack(f">{len(raw) // 2}H", raw)
        h = 0
        for u in units:
            h = (31 * h + u) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


@functools.lru_cache(maxsize=4096)
def tag_hash(tag: str) -> int:
    """The tags code RocketMQ puts in the ConsumeQueue: String.hashCode, sign-extended to a long."""
    return java_hash(tag)


def properties_to_string(props: dict) -> str:
    """MessageDecoder.messageProperties2String: name\\x01value\\x02 for each property."""
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def string_to_properties(s: str) -> dict:
    """MessageDecoder.string2messageProperties (keeps empty values, unlike Java's split)."""
    props = {}
    for item in s.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            props[name] = value
    return props


_IP4: dict[str, bytes] = {}  # the packed form of the hosts seen so far (hot path: no call)


def _ip4(host: str) -> bytes:
    """Packed IPv4 of a host string. The V1 layout has no room for anything else: an IPv4-mapped
    IPv6 address gives its IPv4, `localhost` 127.0.0.1, any other name or IPv6 0.0.0.0 (no DNS here)."""
    raw = _IP4.get(host)
    if raw is None:
        name = host.rpartition("::ffff:")[2] if isinstance(host, str) else ""
        try:
            raw = socket.inet_aton(name)
        except OSError:
            raw = b"\x7f\x00\x00\x01" if name == "localhost" else b"\x00\x00\x00\x00"
        if len(_IP4) < 4096:
            _IP4[host] = raw
    return raw


_HOST_STR: dict[bytes, str] = {}


def _host_str(raw: bytes) -> str:
    host = _HOST_STR.get(raw)
    if host is None:
        host = socket.inet_ntoa(raw)
        if len(_HOST_STR) < 4096:
            _HOST_STR[raw] = host
    return host


def make_msg_id(host: str, port: int, phys_offset: int) -> str:
    """offsetMsgId: store host IPv4 (4 B) + port (4 B) + CommitLog offset (8 B), upper-case hex."""
    return _MSG_ID.pack(_ip4(host), port, phys_offset).hex().upper()


def parse_msg_id(msg_id: str) -> tuple[str, int, int]:
    """Inverse of make_msg_id: (host, port, CommitLog offset)."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError as exc:
        raise MessageFormatError(f"bad msgId {msg_id!r}") from exc
    if len(raw) != _MSG_ID.size:
        raise MessageFormatError(f"bad msgId length {msg_id!r}")
    ip, port, offset = _MSG_ID.unpack(raw)
    return _host_str(ip), port, offset


def tags_code_of(properties: dict) -> int:
    """Default tags code of a message: hash of its TAGS property, 0 without one. A lite topic's
    message (RocketMQ 5.5) has its lite topic's hash instead: the ConsumeQueue is its lite index."""
    tags = properties.get("__LITE_TOPIC") or properties.get("TAGS")
    return tag_hash(tags) if tags else 0


def index_keys(topic: str, properties: dict, keys) -> list[str]:
    """IndexFile keys of one entry: topic#KEY for each KEYS token and each extra key, topic#UNIQ_KEY."""
    out = []
    k = properties.get("KEYS")
    if k:
        out.extend(f"{topic}#{t}" for t in k.split(" ") if t)
    if keys:
        out.extend(f"{topic}#{t}" for t in keys if t)
    u = properties.get("UNIQ_KEY")
    if u:
        out.append(f"{topic}#{u}")
    lite = properties.get("__LITE_TOPIC")  # a lite topic is found as a key of its parent
    if lite:
        out.append(f"{topic}#{lite}")
    return out


_TOPIC_FIELDS: dict[str, bytes] = {}


def _topic_field(topic: str) -> bytes:
    """Length byte + UTF-8 of a topic (cached: the hot path does one dict lookup)."""
    raw = topic.encode()
    if len(raw) > MAX_TOPIC_BYTES:
        raise MessageFormatError(f"topic longer than {MAX_TOPIC_BYTES} bytes")
    field_ = bytes((len(raw),)) + raw
    if len(_TOPIC_FIELDS) < 65536:
        _TOPIC_FIELDS[topic] = field_
    return field_


def stored_properties(msg: Message) -> dict:
    """The properties as written: the caller's plus the reserved ones that make the entry self-describing."""
    props = msg.properties
    extra = {}
    if msg.batch_count != 1:
        extra[PROP_INNER_NUM] = str(msg.batch_count)
    codes = msg.tags_codes
    if codes:
        default = tags_code_of(props)
        if codes.count(default) != len(codes):
            extra[PROP_TAGS_CODES] = ",".join(map(str, codes))
    if msg.keys:
        extra[PROP_INNER_KEYS] = " ".join(msg.keys)
    if extra:
        props = {**props, **extra}
    return props


def prepare(msg: Message) -> tuple[bytes, bytes, int]:
    """(topic field, properties field, total entry size) of a message, before offsets are known.

    The reserved INNER_KEYS and TAGS_CODES are dropped (in that order) when they would make the
    properties too long: the entry is still stored and indexed, only a rebuild loses them."""
    topic_f = _TOPIC_FIELDS.get(msg.topic) or _topic_field(msg.topic)
    if msg.batch_count != 1 or msg.tags_codes or msg.keys:
        props = stored_properties(msg)
    else:
        props = msg.properties
    if props:
        praw = properties_to_string(props).encode()
        for optional in (PROP_INNER_KEYS, PROP_TAGS_CODES):
            if len(praw) <= MAX_PROPERTIES_BYTES:
                break
            if optional in props:
                props = {k: v for k, v in props.items() if k != optional}
                praw = properties_to_string(props).encode()
        if len(praw) > MAX_PROPERTIES_BYTES:
            raise MessageFormatError(f"properties longer than {MAX_PROPERTIES_BYTES} bytes")
        props_f = _PROPS_LEN.pack(len(praw)) + praw
    else:
        props_f = b"\x00\x00"
    return topic_f, props_f, HEADER_SIZE + len(msg.body) + len(topic_f) + len(props_f)


_V6 = ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)


def pack_header(msg: Message, size: int, queue_offset: int, phys: int, store_ts: int,
                store_host: bytes, store_port: int) -> bytes:
    """The 88 bytes before the body; `store_host` is the packed IPv4 address."""
    sys_flag = msg.sys_flag & _V6
    if msg.batch_count != 1:
        sys_flag |= INNER_BATCH_FLAG
    bh, bp = msg.born_host
    body = msg.body
    return HEADER.pack(
        size, MAGIC_V1, _crc32(body) & 0x7FFFFFFF, msg.queue_id, msg.flag, queue_offset, phys, sys_flag,
        msg.born_timestamp, _IP4.get(bh) or _ip4(bh), bp, store_ts, store_host, store_port,
        msg.reconsume_times, msg.prepared_transaction_offset, len(body))


def encode(msg: Message, queue_offset: int = 0, physical_offset: int = 0,
           store_timestamp: int | None = None, store_host: tuple = ("127.0.0.1", 0)) -> bytes:
    """One complete stored entry."""
    topic_f, props_f, size = prepare(msg)
    ts = _now_ms() if store_timestamp is None else store_timestamp
    head = pack_header(msg, size, queue_offset, physical_offset, ts, _ip4(store_host[0]), store_host[1])
    return b"".join((head, msg.body, topic_f, props_f))


_INNER_NUM_B, _TAGS_CODES_B = PROP_INNER_NUM.encode(), PROP_TAGS_CODES.encode()  # decode may reject these


def plain_header(buf) -> tuple | None:
    """HEADER's fields of the one entry that `buf` (bytes) holds exactly, when `decode(buf)` is certain to
    succeed on it and it is a single message: ASCII topic and properties, none of the reserved
    properties decode parses, not an inner batch. None otherwise (decode then decides). Lets a reader
    that forwards the raw bytes skip decoding them."""
    if type(buf) is not bytes or len(buf) < FIXED_SIZE:
        return None
    h = HEADER.unpack_from(buf)
    size, body_len = h[0], h[16]
    if (h[1] != MAGIC_V1 or h[7] & (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG | INNER_BATCH_FLAG) or size != len(buf)
            or body_len < 0 or HEADER_SIZE + body_len + 3 > size):
        return None
    p = HEADER_SIZE + body_len + 1
    end_topic = p + buf[p - 1]
    if end_topic + 2 > size or _PROPS_LEN.unpack_from(buf, end_topic)[0] != size - end_topic - 2:
        return None
    props = buf[end_topic + 2:]
    if not (buf[p:end_topic].isascii() and props.isascii()) or _INNER_NUM_B in props or _TAGS_CODES_B in props:
        return None
    return h


def decode(buf, offset: int = 0) -> StoredMessage:
    """Decode the entry at `offset` in `buf`; raises MessageFormatError if it is not a valid entry.

    The body CRC is not checked here (recovery does that); `body_crc` holds the stored value."""
    # bytes are sliced directly (cheaper than through a memoryview); other buffers are not copied whole
    mv = buf if type(buf) is bytes else memoryview(buf)
    end_buf = len(mv)
    if end_buf - offset < HEADER_SIZE:
        raise MessageFormatError("truncated header")
    (size, magic, crc, qid, flag, qoff, phys, sys_flag, born_ts, bhost, bport, store_ts, shost, sport,
     reconsume, prepared, body_len) = HEADER.unpack_from(mv, offset)
    if magic != MAGIC_V1:
        raise MessageFormatError(f"bad magic code 0x{magic:08x}")
    if sys_flag & (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG):
        raise MessageFormatError("IPv6 hosts are not supported")
    if size < FIXED_SIZE or offset + size > end_buf or body_len < 0 or HEADER_SIZE + body_len + 3 > size:
        raise MessageFormatError(f"bad sizes: total {size}, body {body_len}")
    p = offset + HEADER_SIZE
    body = bytes(mv[p:p + body_len])
    p += body_len
    tlen = mv[p]
    p += 1
    if p + tlen + 2 > offset + size:
        raise MessageFormatError("topic overruns entry")
    try:
        topic = str(mv[p:p + tlen], "utf-8")
        p += tlen
        (plen,) = _PROPS_LEN.unpack_from(mv, p)
        p += 2
        if plen < 0 or p + plen != offset + size:
            raise MessageFormatError("properties length does not match total size")
        props = string_to_properties(str(mv[p:p + plen], "utf-8")) if plen else {}
    except UnicodeDecodeError as exc:
        raise MessageFormatError(f"bad UTF-8: {exc}") from exc
    batch_count, codes, keys = 1, None, None
    try:
        if PROP_INNER_NUM in props:
            batch_count = int(props.pop(PROP_INNER_NUM))
        if PROP_TAGS_CODES in props:
            codes = [int(c) for c in props.pop(PROP_TAGS_CODES).split(",")]
    except ValueError as exc:
        raise MessageFormatError(f"bad reserved property: {exc}") from exc
    if PROP_INNER_KEYS in props:
        keys = props.pop(PROP_INNER_KEYS).split(" ")
    # positional, in field order (the read hot path): Message's fields, then StoredMessage's
    return StoredMessage(
        topic, qid, body, props, flag, sys_flag, born_ts, (_host_str(bhost), bport), reconsume, prepared,
        batch_count, codes, keys,
        qoff, phys, store_ts, (_host_str(shost), sport), size, crc, _MSG_ID.pack(shost, sport, phys).hex().upper(),
        buf if offset == 0 and size == end_buf and type(buf) is bytes else bytes(mv[offset:offset + size]))


def with_properties(raw: bytes, extra: dict) -> bytes:
    """One stored entry `raw` with the properties `extra` appended (the body and its CRC unchanged):
    what a reader is handed when the broker adds properties on the way out (a lite topic's
    INNER_MULTI_DISPATCH). MessageFormatError when they would not fit."""
    size = len(raw)
    (body_len,) = INT32.unpack_from(raw, HEADER_SIZE - 4)
    at = HEADER_SIZE + body_len + 1 + raw[HEADER_SIZE + body_len]  # the properties' length field
    (plen,) = _PROPS_LEN.unpack_from(raw, at)
    added = properties_to_string(extra).encode()
    if plen + len(added) > MAX_PROPERTIES_BYTES:
        raise MessageFormatError(f"properties longer than {MAX_PROPERTIES_BYTES} bytes")
    out = bytearray(raw)
    out += added
    INT32.pack_into(out, 0, size + len(added))
    _PROPS_LEN.pack_into(out, at, plen + len(added))
    return bytes(out)
