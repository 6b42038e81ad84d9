"""The registry's PROTOBUF format: parse with protoc, Confluent's compatibility rules, payload check.

A payload (after the 5-byte frame) starts with Confluent's message-index array: a zig-zag varint
count, then that many zig-zag varint indexes into the file's messages and their nested messages;
a single 0 byte stands for [0], the first message. The rest is that message's wire encoding.
`serialized(parsed)` is the base64 FileDescriptorProto that clients ask for with
`?format=serialized` (confluent-kafka's Python deserializer does).
"""
from __future__ import annotations

import base64
import functools
from dataclasses import dataclass

from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.message import DecodeError

from codec.schema_registry import FrameError, decode_message_indexes

from . import Parsed, SchemaError, difference_errors
from .protobuf_compat import differences, incompatible
from .protobuf_parse import MAIN_FILE, build_pool, compile_files
from .protobuf_render import render

MAX_INDEX_DEPTH = 64  # message nesting deeper than this is no real schema


@dataclass
class Compiled:
    files: dict  # file name -> FileDescriptorProto, MAIN_FILE is the schema
    main: descriptor_pb2.FileDescriptorProto
    pool: object
    file: object  # the schema's FileDescriptor in `pool`


def parse(text: str, references: dict[str, str]) -> Parsed:
    if not isinstance(text, str) or not text.strip():
        raise SchemaError("Invalid schema: empty")
    return _parse_cached(text, tuple(sorted((references or {}).items())))


@functools.lru_cache(maxsize=256)
def _parse_cached(text: str, references: tuple) -> Parsed:
    """protoc takes tens of milliseconds: a schema read again (lookups, the _schemas replay) is not recompiled."""
    try:
        files = compile_files(text, dict(references))
    except SchemaError:
        raise
    except (UnicodeError, ValueError, OSError) as exc:
        raise SchemaError(f"Invalid schema: {exc}") from None
    main = files[MAIN_FILE]
    main.ClearField("source_code_info")
    pool, file = build_pool(files)
    name = None
    if main.message_type:
        first = main.message_type[0].name
        name = f"{main.package}.{first}" if main.package else first
    return Parsed("PROTOBUF", render(main), render(main, normalized=True), name,
                  Compiled(files, main, pool, file))


def serialized(parsed: Parsed) -> str:
    """The schema as base64 FileDescriptorProto (`format=serialized`)."""
    return base64.standard_b64encode(parsed.native.main.SerializeToString()).decode("ascii")


def formatted(parsed: Parsed, fmt: str) -> str | None:
    return serialized(parsed) if fmt == "serialized" else None


def reader_errors(reader: Parsed, writer: Parsed) -> list[str]:
    return difference_errors(lambda: incompatible(differences(writer.native.files, writer.native.main,
                                                              reader.native.files, reader.native.main)),
                             "fullPath")


def message_descriptor(parsed: Parsed, indexes: list[int]):
    """The message the indexes point at: a top-level message in declaration order, then nested ones."""
    main = parsed.native.main
    candidates, names = main.message_type, [main.package] if main.package else []
    for index in indexes:
        if index < 0 or index >= len(candidates):
            raise SchemaError(f"Message index {indexes} does not name a message of the schema")
        names.append(candidates[index].name)
        candidates = candidates[index].nested_type
    return parsed.native.pool.FindMessageTypeByName(".".join(names))


def check_payload(parsed: Parsed, payload: bytes) -> None:
    try:
        indexes, body = decode_message_indexes(bytes(payload), max_count=MAX_INDEX_DEPTH)
    except FrameError as exc:
        raise SchemaError(f"Malformed message index in the payload: {exc}") from None
    descriptor = message_descriptor(parsed, indexes)
    message = message_factory.GetMessageClass(descriptor)()
    try:
        message.ParseFromString(body)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise SchemaError(f"Payload does not decode as {descriptor.full_name}: {exc}") from None
