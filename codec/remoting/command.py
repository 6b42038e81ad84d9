"""RemotingCommand framing, sans I/O: JSON (type 0) and ROCKETMQ binary (type 1) headers.

Frame: int32 length (= 4 + headerLen + bodyLen), int32 (serializeType << 24 | headerLen), header, body.
"""
from __future__ import annotations

import dataclasses
import json
import struct

from codec.remoting.codes import LANGUAGES, SERVER_VERSION

JSON = 0
ROCKETMQ = 1
FLAG_RESPONSE = 0x1
FLAG_ONEWAY = 0x2
# A whole frame, the 4-byte length prefix included, is at most 16 MiB (NettyDecoder FRAME_MAX_LENGTH).
MAX_FRAME = 16 * 1024 * 1024

_PREFIX = struct.Struct(">iI")
_BIN_FIXED = struct.Struct(">hBhii")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_LANG_CODE = {name: i for i, name in enumerate(LANGUAGES)}


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid frame; the connection must be closed."""


@dataclasses.dataclass
class RemotingCommand:
    code: int
    ext_fields: dict[str, str] = dataclasses.field(default_factory=dict)
    body: bytes = b""
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    language: str = "JAVA"
    version: int = SERVER_VERSION
    serialize_type: int = JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def response(self, code: int = 0, ext_fields: dict | None = None, body: bytes = b"",
                 remark: str | None = None) -> "RemotingCommand":
        """A response to this request: same opaque, RESPONSE flag, values stringified."""
        return RemotingCommand(code=code, ext_fields=stringify(ext_fields or {}), body=body,
                               opaque=self.opaque, flag=FLAG_RESPONSE, remark=remark)

    # Typed access to extFields (every value travels as a string).
    def get_str(self, name: str, default: str | None = None) -> str | None:
        return self.ext_fields.get(name, default)

    def get_int(self, name: str, default: int | None = None) -> int:
        value = self.ext_fields.get(name)
        if value is None or value == "":
            if default is None:
                raise ProtocolError(f"missing header field {name!r}")
            return default
        try:
            return int(value)
        except ValueError:
            raise ProtocolError(f"header field {name!r} is not a number: {value!r}") from None

    def get_bool(self, name: str, default: bool = False) -> bool:
        value = self.ext_fields.get(name)
        return default if value is None else value.lower() == "true"


def stringify(fields: dict) -> dict[str, str]:
    """extFields values are strings on the wire; booleans as Java prints them."""
    out = {}
    for k, v in fields.items():
        if type(v) is str:  # the common case first
            out[k] = v
        elif v is not None:
            out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


# json.dumps escapes the \u0001/\u0002 property separators as fastjson does.
_json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_json_parse = json.JSONDecoder().raw_decode


def encode(cmd: RemotingCommand) -> bytes:
    """One complete frame for `cmd` in its serialize_type."""
    header = _encode_binary_header(cmd) if cmd.serialize_type == ROCKETMQ else _encode_json_header(cmd)
    if len(header) > 0xFFFFFF:
        raise ValueError("header too large")
    length = 4 + len(header) + len(cmd.body)
    if length + 4 > MAX_FRAME:
        raise ValueError("frame larger than 16 MiB")
    return _PREFIX.pack(length, (cmd.serialize_type << 24) | len(header)) + header + cmd.body


_LANGUAGE_JSON: dict[str, str] = {}  # the JSON text of each language name met (a handful)


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    """The header object with its keys in a fixed order, written without building a dict per frame."""
    remark = "" if cmd.remark is None else ',"remark":' + _json_text(cmd.remark)
    fields = _json_text(stringify(cmd.ext_fields)) if cmd.ext_fields else "{}"
    language = _LANGUAGE_JSON.get(cmd.language)
    if language is None:
        language = _json_text(cmd.language)
        if len(_LANGUAGE_JSON) < 64 and type(cmd.language) is str:
            _LANGUAGE_JSON[cmd.language] = language
    return (f'{{"code":{int(cmd.code)},"extFields":{fields},"flag":{int(cmd.flag)},'
            f'"language":{language},"opaque":{int(cmd.opaque)},'
            f'"serializeTypeCurrentRPC":"JSON","version":{int(cmd.version)}{remark}}}').encode()


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    parts = [_BIN_FIXED.pack(cmd.code, _LANG_CODE.get(cmd.language, 7), cmd.version, cmd.opaque, cmd.flag)]
    remark = cmd.remark.encode() if cmd.remark else b""
    parts += [_I32.pack(len(remark)), remark]
    fields = bytearray()
    for k, v in stringify(cmd.ext_fields).items():
        kb, vb = k.encode(), v.encode()
        fields += _I16.pack(len(kb)) + kb + _I32.pack(len(vb)) + vb
    parts += [_I32.pack(len(fields)), bytes(fields)]
    return b"".join(parts)


def decode_frame(frame: bytes | bytearray | memoryview, start: int = 0, end: int | None = None) -> RemotingCommand:
    """Decode one frame body (everything after the 4-byte length prefix), `frame[start:end]`."""
    end = len(frame) if end is None else end
    if end - start < 4:
        raise ProtocolError("frame shorter than its header length field")
    (word,) = _U32.unpack_from(frame, start)
    stype, header_len = word >> 24, word & 0xFFFFFF
    if header_len > end - start - 4:
        raise ProtocolError("bad header length")
    header = bytes(frame[start + 4:start + 4 + header_len])
    body = bytes(frame[start + 4 + header_len:end])
    if stype == JSON:
        cmd = _decode_json_header(header)
    elif stype == ROCKETMQ:
        cmd = _decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown serialize type {stype}")
    cmd.serialize_type = stype
    cmd.body = body
    return cmd


def _decode_json_header(header: bytes) -> RemotingCommand:
    try:
        text = header.decode().strip()
        obj, end = _json_parse(text)
        if not isinstance(obj, dict) or end != len(text):
            raise ValueError("header is not one object")
        ext = obj.get("extFields") or {}
        if not isinstance(ext, dict):
            raise ValueError("extFields is not an object")
        for v in ext.values():
            if type(v) is not str:  # rare: a client that sends numbers or booleans unquoted
                ext = {k: v if isinstance(v, str) else json.dumps(v) for k, v in ext.items()}
                break
        return RemotingCommand(
            code=int(obj["code"]),
            ext_fields=ext,
            opaque=int(obj.get("opaque", 0)), flag=int(obj.get("flag", 0)),
            remark=obj.get("remark"), language=str(obj.get("language", "JAVA")),
            version=int(obj.get("version", 0)))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"bad JSON header: {exc}") from None


def _decode_binary_header(h: bytes) -> RemotingCommand:
    try:
        code, lang, version, opaque, flag = _BIN_FIXED.unpack_from(h, 0)
        pos = _BIN_FIXED.size
        (rlen,) = _I32.unpack_from(h, pos)
        pos += 4
        if rlen < 0 or pos + rlen > len(h):
            raise ProtocolError("bad remark length")
        remark = h[pos:pos + rlen].decode() if rlen else None
        pos += rlen
        (flen,) = _I32.unpack_from(h, pos)
        pos += 4
        end = pos + flen
        if flen < 0 or end > len(h):
            raise ProtocolError("bad extFields length")
        ext = {}
        while pos < end:
            (klen,) = _I16.unpack_from(h, pos)
            pos += 2
            if klen < 0 or pos + klen > end:
                raise ProtocolError("bad extFields key length")
            key = h[pos:pos + klen].decode()
            pos += klen
            (vlen,) = _I32.unpack_from(h, pos)
            pos += 4
            if vlen < 0 or pos + vlen > end:
                raise ProtocolError("bad extFields value length")
            ext[key] = h[pos:pos + vlen].decode()
            pos += vlen
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"bad ROCKETMQ header: {exc}") from None
    language = LANGUAGES[lang] if lang < len(LANGUAGES) else "OTHER"
    return RemotingCommand(code=code, ext_fields=ext, opaque=opaque, flag=flag, remark=remark,
                           language=language, version=version)


class FrameReader:
    """Incremental frame splitter: feed received bytes, take complete commands out."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_command(self) -> RemotingCommand | None:
        if len(self._buf) < 4:
            return None
        (length,) = _I32.unpack_from(self._buf, 0)
        if length < 4 or length + 4 > self._max:
            raise ProtocolError(f"bad frame length {length}")
        if len(self._buf) < 4 + length:
            return None
        try:
            return decode_frame(self._buf, 4, 4 + length)
        finally:
            del self._buf[:4 + length]


class Outbox:
    """Coalesces frames queued while a write is in progress into one write (fewer syscalls when
    many requests or responses are in flight on one connection). Sans I/O: `add` says whether the
    caller must now write (`take` until empty, then clear `writing`); the connection owners implement the write."""

    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self.writing = False

    def add(self, frame: bytes) -> bool:
        self._frames.append(frame)
        if self.writing:
            return False
        self.writing = True
        return True

    def take(self) -> bytes:
        if not self._frames:
            return b""
        data = self._frames[0] if len(self._frames) == 1 else b"".join(self._frames)
        self._frames.clear()
        return data
