"""A FileDescriptorProto rendered back to .proto text: the registry's canonical Protobuf form.

protoc resolves every type name, so the rendering names types fully qualified (`.pkg.Msg`): the same
schema written with short names, long names or sent as a base64 descriptor (as confluent-kafka's
Python serializer does) renders to one text, hence one id. `normalized=True` also sorts imports,
options and fields by number (message order is kept: Confluent's message indexes point into it).
Options of this file's own custom extensions are unknown to the descriptor classes and not rendered.
"""
from __future__ import annotations

import math

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.text_encoding import CEscape

FDP = descriptor_pb2.FieldDescriptorProto
SCALAR_NAMES = {
    FDP.TYPE_DOUBLE: "double", FDP.TYPE_FLOAT: "float", FDP.TYPE_INT64: "int64", FDP.TYPE_UINT64: "uint64",
    FDP.TYPE_INT32: "int32", FDP.TYPE_FIXED64: "fixed64", FDP.TYPE_FIXED32: "fixed32", FDP.TYPE_BOOL: "bool",
    FDP.TYPE_STRING: "string", FDP.TYPE_BYTES: "bytes", FDP.TYPE_UINT32: "uint32",
    FDP.TYPE_SFIXED32: "sfixed32", FDP.TYPE_SFIXED64: "sfixed64", FDP.TYPE_SINT32: "sint32",
    FDP.TYPE_SINT64: "sint64",
}
LABELS = {FDP.LABEL_OPTIONAL: "optional", FDP.LABEL_REQUIRED: "required", FDP.LABEL_REPEATED: "repeated"}
MAX_FIELD_NUMBER = 536870911  # 2^29 - 1: `to max` in extension and reserved ranges


def render(fdp: descriptor_pb2.FileDescriptorProto, normalized: bool = False) -> str:
    return _Renderer(fdp, normalized).file()


def default_json_name(name: str) -> str:
    """protoc's json_name for a field that sets none (lowerCamelCase of the underscored name)."""
    out, upper = [], False
    for char in name:
        if char == "_":
            upper = True
        elif upper:
            out.append(char.upper())
            upper = False
        else:
            out.append(char)
    return "".join(out)


def _quote(text: str) -> str:
    return '"' + CEscape(text, as_utf8=True) + '"'


def _literal(field, value) -> str:
    """An option value as .proto syntax (scalars, enums by name, messages in aggregate form)."""
    if field.type == field.TYPE_MESSAGE:
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if field.type == field.TYPE_ENUM:
        enum_value = field.enum_type.values_by_number.get(value)
        return enum_value.name if enum_value else str(value)
    if field.type == field.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == field.TYPE_STRING:
        return _quote(value)
    if field.type == field.TYPE_BYTES:
        return '"' + CEscape(value, as_utf8=False) + '"'
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)


def _option_items(options, normalized: bool) -> list[str]:
    """`name = value` for each option set, extensions as `(full.name)`; repeated ones once per value."""
    items = []
    for field, value in options.ListFields():
        name = f"({field.full_name})" if field.is_extension else field.name
        values = value if field.is_repeated else [value]
        items.extend(f"{name} = {_literal(field, v)}" for v in values)
    return sorted(items) if normalized else items


def _ranges(ranges, end_inclusive: bool) -> str:
    parts = []
    for r in ranges:
        end = r.end if end_inclusive else r.end - 1
        if end >= MAX_FIELD_NUMBER or (end_inclusive and end >= 2147483647):
            parts.append(f"{r.start} to max")
        elif end == r.start:
            parts.append(str(r.start))
        else:
            parts.append(f"{r.start} to {end}")
    return ", ".join(parts)


class _Renderer:
    def __init__(self, fdp, normalized: bool):
        self.fdp = fdp
        self.normalized = normalized
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def options(self, depth: int, options) -> None:
        for item in _option_items(options, self.normalized):
            self.emit(depth, f"option {item};")

    def file(self) -> str:
        fdp = self.fdp
        if fdp.syntax == "editions":
            self.emit(0, f'edition = "{descriptor_pb2.Edition.Name(fdp.edition).removeprefix("EDITION_")}";')
        else:
            self.emit(0, f'syntax = "{fdp.syntax or "proto2"}";')
        if fdp.package:
            self.emit(0, f"package {fdp.package};")
        imports = []
        for index, dependency in enumerate(fdp.dependency):
            kind = "public " if index in fdp.public_dependency else "weak " if index in fdp.weak_dependency else ""
            imports.append(f'import {kind}"{dependency}";')
        for line in sorted(imports) if self.normalized else imports:
            self.emit(0, line)
        self.options(0, fdp.options)
        for message in fdp.message_type:
            self.message(0, message, fdp.package)
        for enum in fdp.enum_type:
            self.enum(0, enum)
        self.extensions(0, fdp.extension)
        for service in fdp.service:
            self.service(service)
        return "\n".join(self.lines) + "\n"

    def message(self, depth: int, message, scope: str) -> None:
        full_name = f"{scope}.{message.name}" if scope else message.name
        nested = {f".{full_name}.{n.name}": n for n in message.nested_type}
        self.emit(depth, f"message {message.name} {{")
        self.body(depth + 1, message, full_name, nested)
        self.emit(depth, "}")

    def body(self, depth: int, message, full_name: str, nested: dict) -> None:
        self.options(depth, message.options)
        inlined = set()  # map entries and groups, rendered at their field
        fields = list(message.field)
        if self.normalized:
            fields.sort(key=lambda f: f.number)
        oneofs_done = set()
        for field in fields:
            real_oneof = field.HasField("oneof_index") and not field.proto3_optional
            if real_oneof:
                if field.oneof_index in oneofs_done:
                    continue
                oneofs_done.add(field.oneof_index)
                self.oneof(depth, message, field.oneof_index, fields, nested, inlined)
            else:
                self.field(depth, field, nested, inlined, in_oneof=False)
        for index, decl in enumerate(message.oneof_decl):
            if index not in oneofs_done and not any(f.HasField("oneof_index") and f.oneof_index == index
                                                    for f in fields):
                self.emit(depth, f"oneof {decl.name} {{")  # an empty oneof: kept so indexes stay
                self.emit(depth, "}")
        for child in message.nested_type:
            if f".{full_name}.{child.name}" not in inlined:
                self.message(depth, child, full_name)
        for enum in message.enum_type:
            self.enum(depth, enum)
        self.extensions(depth, message.extension)
        if message.extension_range:
            self.emit(depth, f"extensions {_ranges(message.extension_range, end_inclusive=False)};")
        if message.reserved_range:
            self.emit(depth, f"reserved {_ranges(message.reserved_range, end_inclusive=False)};")
        if message.reserved_name:
            self.emit(depth, "reserved " + ", ".join(_quote(n) for n in message.reserved_name) + ";")

    def oneof(self, depth, message, index, fields, nested, inlined) -> None:
        self.emit(depth, f"oneof {message.oneof_decl[index].name} {{")
        self.options(depth + 1, message.oneof_decl[index].options)
        for field in fields:
            if field.HasField("oneof_index") and field.oneof_index == index and not field.proto3_optional:
                self.field(depth + 1, field, nested, inlined, in_oneof=True)
        self.emit(depth, "}")

    def type_name(self, field) -> str:
        return SCALAR_NAMES.get(field.type) or field.type_name

    def field(self, depth, field, nested, inlined, in_oneof: bool) -> None:
        entry = nested.get(field.type_name) if field.type == FDP.TYPE_MESSAGE else None
        if entry is not None and entry.options.map_entry:
            inlined.add(field.type_name)
            key, value = entry.field[0], entry.field[1]
            head = f"map<{self.type_name(key)}, {self.type_name(value)}>"
        elif field.type == FDP.TYPE_GROUP:
            group = nested.get(field.type_name)
            inlined.add(field.type_name)
            label = "" if in_oneof else LABELS[field.label] + " "
            self.emit(depth, f"{label}group {group.name} = {field.number}{self.field_options(field)} {{")
            self.body(depth + 1, group, field.type_name.lstrip("."), {
                f"{field.type_name}.{n.name}": n for n in group.nested_type})
            self.emit(depth, "}")
            return
        else:
            head = self.type_name(field)
            if in_oneof:
                pass
            elif field.proto3_optional:
                head = "optional " + head
            elif field.label == FDP.LABEL_REPEATED or self.fdp.syntax in ("proto2", ""):
                head = LABELS[field.label] + " " + head
            elif field.label == FDP.LABEL_REQUIRED:
                head = "required " + head
        self.emit(depth, f"{head} {field.name} = {field.number}{self.field_options(field)};")

    def field_options(self, field) -> str:
        items = []
        if field.HasField("default_value"):
            value = field.default_value
            if field.type == FDP.TYPE_STRING:
                value = _quote(value)
            elif field.type == FDP.TYPE_BYTES:
                value = f'"{value}"'  # already C-escaped in the descriptor
            items.append(f"default = {value}")
        if field.HasField("json_name") and field.json_name != default_json_name(field.name):
            items.append(f"json_name = {_quote(field.json_name)}")
        items.extend(_option_items(field.options, self.normalized))
        return f" [{', '.join(sorted(items) if self.normalized else items)}]" if items else ""

    def enum(self, depth: int, enum) -> None:
        self.emit(depth, f"enum {enum.name} {{")
        self.options(depth + 1, enum.options)
        for value in enum.value:
            options = _option_items(value.options, self.normalized)
            suffix = f" [{', '.join(options)}]" if options else ""
            self.emit(depth + 1, f"{value.name} = {value.number}{suffix};")
        if enum.reserved_range:
            self.emit(depth + 1, f"reserved {_ranges(enum.reserved_range, end_inclusive=True)};")
        if enum.reserved_name:
            self.emit(depth + 1, "reserved " + ", ".join(_quote(n) for n in enum.reserved_name) + ";")
        self.emit(depth, "}")

    def extensions(self, depth: int, extensions) -> None:
        by_extendee: dict[str, list] = {}
        for field in extensions:
            by_extendee.setdefault(field.extendee, []).append(field)
        for extendee, fields in by_extendee.items():
            self.emit(depth, f"extend {extendee} {{")
            for field in fields:
                self.field(depth + 1, field, {}, set(), in_oneof=False)
            self.emit(depth, "}")

    def service(self, service) -> None:
        self.emit(0, f"service {service.name} {{")
        self.options(1, service.options)
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            options = _option_items(method.options, self.normalized)
            if options:
                self.emit(1, f"rpc {method.name} ({request}) returns ({response}) {{")
                for item in options:
                    self.emit(2, f"option {item};")
                self.emit(1, "}")
            else:
                self.emit(1, f"rpc {method.name} ({request}) returns ({response});")
        self.emit(0, "}")
