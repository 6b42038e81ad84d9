"""RemotingCommand framing (RocketMQ's NettyEncoder/NettyDecoder) with its two header codings:
JSON (serialize type 0) and ROCKETMQ binary (type 1). The hot path is codec.remoting.command."""
from __future__ import annotations

import json

from construct import (Adapter, GreedyBytes, GreedyRange, Int8ub, Int16sb, Int24ub, Int32sb, PascalString,
                       Prefixed, Struct, Switch, this)

from codec.formats.common import register

JSON, ROCKETMQ = 0, 1


class _JsonHeader(Adapter):
    """The header object (keys code, extFields, flag, language, opaque, serializeTypeCurrentRPC,
    version, remark) as a dict."""

    def _decode(self, obj, context, path):
        return json.loads(obj.decode("utf-8"))

    def _encode(self, obj, context, path):
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


JsonHeader = register("JsonHeader", "RemotingCommand", _JsonHeader(GreedyBytes),
                      "serialize type 0 header",
                      'UTF-8 JSON object: {"code": int, "extFields": {str: str}, "flag": int, "language": "JAVA", '
                      '"opaque": int, "serializeTypeCurrentRPC": "JSON", "version": int, "remark": str?}.')

ExtField = Struct(
    "key" / PascalString(Int16sb, "utf8") * "i16 length, then the name (UTF-8)",
    "value" / PascalString(Int32sb, "utf8") * "i32 length, then the value (UTF-8)",
)

BinaryHeader = register("BinaryHeader", "RemotingCommand", Struct(
    "code" / Int16sb * "request or response code",
    "language" / Int8ub * "LanguageCode ordinal (JAVA = 0)",
    "version" / Int16sb * "client or server version",
    "opaque" / Int32sb * "request id, echoed by the response",
    "flag" / Int32sb * "bit 0 RESPONSE, bit 1 ONEWAY",
    "remark" / PascalString(Int32sb, "utf8") * "i32 length (0 = none), then the remark (UTF-8)",
    "ext_fields" / Prefixed(Int32sb, GreedyRange(ExtField))
    * "i32 length of the whole map, then each field: i16 key length, key, i32 value length, value",
), "serialize type 1 header", "RocketMQSerializable's header coding.")

Frame = register("Frame", "RemotingCommand", Prefixed(Int32sb, Struct(
    "serialize_type" / Int8ub * "0 JSON, 1 ROCKETMQ: the high byte of the header-length word",
    "header" / Prefixed(Int24ub, Switch(this.serialize_type, {JSON: JsonHeader, ROCKETMQ: BinaryHeader}))
    * "header length (low 24 bits of the word), then the header in that coding",
    "body" / GreedyBytes * "the rest of the frame: the command's body",
)), "the remoting TCP stream (port 9876/10911)",
    "length i32 (= 4 + header length + body length, at most 16 MiB with this field), then the frame.")
