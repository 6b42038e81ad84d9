"""Non-header payloads: SEND_BATCH_MESSAGE bodies, UNIQ_KEY ids, and fastjson-flavoured JSON bodies."""
from __future__ import annotations

import dataclasses
import json
import re
import struct

_BATCH_HEAD = struct.Struct(">iiiii")  # total size, magic 0, body crc 0, flag, body length
_I16 = struct.Struct(">h")
_UNIQ = struct.Struct(">4shiih")


@dataclasses.dataclass
class BatchItem:
    flag: int
    body: bytes
    properties: str  # the raw k\x01v\x02 string


def encode_batch(items: list[BatchItem]) -> bytes:
    """MessageDecoder.encodeMessages: inner records back to back."""
    out = []
    for it in items:
        props = it.properties.encode()
        total = 4 + 4 + 4 + 4 + 4 + len(it.body) + 2 + len(props)
        out.append(_BATCH_HEAD.pack(total, 0, 0, it.flag, len(it.body)) + it.body + _I16.pack(len(props)) + props)
    return b"".join(out)


def decode_batch(buf: bytes) -> list[BatchItem]:
    """Inverse of encode_batch; ValueError on a malformed body."""
    items, pos = [], 0
    try:
        while pos < len(buf):
            total, _magic, _crc, flag, blen = _BATCH_HEAD.unpack_from(buf, pos)
            if total < 22 or blen < 0 or pos + total > len(buf) or 22 + blen > total:
                raise ValueError("bad batch record length")
            p = pos + 20
            body = bytes(buf[p:p + blen])
            p += blen
            (plen,) = _I16.unpack_from(buf, p)
            if plen < 0 or p + 2 + plen > pos + total:
                raise ValueError("bad batch properties length")
            props = bytes(buf[p + 2:p + 2 + plen]).decode()
            items.append(BatchItem(flag, body, props))
            pos += total
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"bad batch body: {exc}") from None
    return items


def make_uniq_id(ip: bytes, pid: int, salt: int, ms_since_month_start: int, counter: int) -> str:
    """MessageClientIDSetter layout: ip(4) pid(2) classloader-hash(4) time-in-month(4) counter(2), hex."""
    return _UNIQ.pack(ip[:4], _s16(pid), _s32(salt), _s32(ms_since_month_start), _s16(counter)).hex().upper()


def _s16(v: int) -> int:
    return ((v + 0x8000) & 0xFFFF) - 0x8000


def _s32(v: int) -> int:
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def dumps(obj) -> bytes:
    """JSON body as the Java side expects it: compact, standard quoted keys, UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def dumps_mq_map(table: dict[tuple[str, str, int], object]) -> str:
    """fastjson's Map<MessageQueue, V>: object keys `{{"brokerName":..,"queueId":..,"topic":..}:value}`."""
    parts = []
    for (topic, broker, qid), value in table.items():
        key = json.dumps({"brokerName": broker, "queueId": qid, "topic": topic}, separators=(",", ":"))
        parts.append(key + ":" + json.dumps(value, separators=(",", ":")))
    return "{" + ",".join(parts) + "}"


_UNQUOTED_KEY = re.compile(r'([{,])\s*(-?\d+)\s*:')


def loads(data: bytes | str):
    """Parse a fastjson body: standard JSON, unquoted numeric keys, and MessageQueue object keys
    (returned as tuples (topic, brokerName, queueId))."""
    text = data.decode() if isinstance(data, (bytes, bytearray)) else data
    if "{{" in text or ",{\"brokerName\"" in text:
        return _LenientParser(text).parse()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_UNQUOTED_KEY.sub(r'\1"\2":', text))


class _LenientParser:
    """A small recursive parser accepting objects as map keys (only used for admin bodies)."""

    def __init__(self, text: str) -> None:
        self.s, self.i = text, 0
        self.dec = json.JSONDecoder()

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def parse(self):
        self.ws()
        c = self.s[self.i]
        if c == "{":
            self.i += 1
            out = {}
            self.ws()
            if self.s[self.i] == "}":
                self.i += 1
                return out
            while True:
                self.ws()
                key = self.parse()
                if isinstance(key, dict):
                    key = (key.get("topic"), key.get("brokerName"), key.get("queueId"))
                self.ws()
                if self.s[self.i] != ":":
                    raise ValueError(f"expected ':' at {self.i}")
                self.i += 1
                out[key] = self.parse()
                self.ws()
                c = self.s[self.i]
                self.i += 1
                if c == "}":
                    return out
                if c != ",":
                    raise ValueError(f"expected ',' at {self.i}")
        if c == "[":
            self.i += 1
            out = []
            self.ws()
            if self.s[self.i] == "]":
                self.i += 1
                return out
            while True:
                out.append(self.parse())
                self.ws()
                c = self.s[self.i]
                self.i += 1
                if c == "]":
                    return out
                if c != ",":
                    raise ValueError(f"expected ',' at {self.i}")
        value, self.i = self.dec.raw_decode(self.s, self.i)
        return value
