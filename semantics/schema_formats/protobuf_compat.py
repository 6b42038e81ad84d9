"""Confluent's Protobuf compatibility rules, on compiled FileDescriptorProtos.

The differences and which of them are compatible follow Confluent Schema Registry's
protobuf-provider (`SchemaDiff`, `MessageSchemaDiff`, `FieldSchemaDiff`, `OneOfDiff`) and its
documented examples (tests/schema_registry/test_format_protobuf.py repeats them): wire
compatibility, so renaming a field or moving a message is fine, while changing a field's kind,
its scalar group, the message it names, or adding/removing a required field is not.
`differences(original, update)`: what changed from the schema data was written with to the
schema that reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2

from .protobuf_render import SCALAR_NAMES

FDP = descriptor_pb2.FieldDescriptorProto
COMPATIBLE = frozenset({
    "PACKAGE_CHANGED", "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED",
    "ENUM_CONST_ADDED", "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED",
    "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED",
    "ONEOF_FIELD_ADDED",
})
# Scalars that read each other's wire values (protobuf's "Updating A Message Type" groups).
SCALAR_GROUPS = {
    "int32": "GENERAL_NUMBER", "int64": "GENERAL_NUMBER", "uint32": "GENERAL_NUMBER",
    "uint64": "GENERAL_NUMBER", "bool": "GENERAL_NUMBER", "sint32": "SIGNED_NUMBER",
    "sint64": "SIGNED_NUMBER", "string": "STRING_OR_BYTES", "bytes": "STRING_OR_BYTES",
    "fixed32": "FIXED32", "sfixed32": "FIXED32", "fixed64": "FIXED64", "sfixed64": "FIXED64",
    "float": "FLOAT", "double": "DOUBLE",
}


@dataclass
class TypeInfo:
    proto: object  # DescriptorProto or EnumDescriptorProto
    package: str
    is_enum: bool


def type_table(files) -> dict[str, TypeInfo]:
    """Every message and enum of the compiled files by full name with a leading dot."""
    table: dict[str, TypeInfo] = {}

    def add_messages(scope, messages, enums, package):
        for enum in enums:
            table[f"{scope}.{enum.name}"] = TypeInfo(enum, package, True)
        for message in messages:
            name = f"{scope}.{message.name}"
            table[name] = TypeInfo(message, package, False)
            add_messages(name, message.nested_type, message.enum_type, package)

    for fdp in files.values():
        add_messages("." + fdp.package if fdp.package else "", fdp.message_type, fdp.enum_type, fdp.package)
    return table


@dataclass
class _Context:
    original: dict[str, TypeInfo]
    update: dict[str, TypeInfo]
    found: list[tuple[str, str]] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    compared: dict[tuple[str, str], bool] = field(default_factory=dict)  # pair -> compatible

    def add(self, kind: str, *extra: str) -> None:
        self.found.append((kind, "#/" + "/".join(self.path + list(extra))))


def differences(original_files, original_main, update_files, update_main) -> list[tuple[str, str]]:
    """(difference type, path) pairs, each once, in the order found."""
    ctx = _Context(type_table(original_files), type_table(update_files))
    if original_main.package != update_main.package:
        ctx.add("PACKAGE_CHANGED")
    _compare_types(ctx, original_main, "." + original_main.package if original_main.package else "",
                   update_main, "." + update_main.package if update_main.package else "")
    return list(dict.fromkeys(ctx.found))


def incompatible(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(kind, path) for kind, path in found if kind not in COMPATIBLE]


def _compare_types(ctx, original, original_scope, update, update_scope) -> None:
    """Messages and enums declared in a file or message, matched by name."""
    original_messages = {m.name: (i, m) for i, m in enumerate(original.message_type
                                                              if hasattr(original, "message_type")
                                                              else original.nested_type)}
    update_messages = {m.name: (i, m) for i, m in enumerate(update.message_type
                                                            if hasattr(update, "message_type")
                                                            else update.nested_type)}
    for name in sorted(original_messages.keys() | update_messages.keys()):
        ctx.path.append(name)
        before, after = original_messages.get(name), update_messages.get(name)
        if after is None:
            if not before[1].options.map_entry:
                ctx.add("MESSAGE_REMOVED")
        elif before is None:
            if not after[1].options.map_entry:
                ctx.add("MESSAGE_ADDED")
        else:
            _compare_message(ctx, before[1], f"{original_scope}.{name}", after[1], f"{update_scope}.{name}")
            if before[0] != after[0]:
                ctx.add("MESSAGE_MOVED")
        ctx.path.pop()
    original_enums = {e.name: e for e in original.enum_type}
    update_enums = {e.name: e for e in update.enum_type}
    for name in sorted(original_enums.keys() | update_enums.keys()):
        ctx.path.append(name)
        if name not in update_enums:
            ctx.add("ENUM_REMOVED")
        elif name not in original_enums:
            ctx.add("ENUM_ADDED")
        else:
            _compare_enum(ctx, original_enums[name], update_enums[name])
        ctx.path.pop()


def _compare_enum(ctx, original, update) -> None:
    before = {v.number: v.name for v in original.value}
    after = {v.number: v.name for v in update.value}
    for number in sorted(before.keys() | after.keys()):
        if number not in after:
            ctx.add("ENUM_CONST_REMOVED", str(number))
        elif number not in before:
            ctx.add("ENUM_CONST_ADDED", str(number))
        elif before[number] != after[number]:
            ctx.add("ENUM_CONST_CHANGED", str(number))


def _real_oneof(message, f) -> str | None:
    if f.HasField("oneof_index") and not f.proto3_optional:
        return message.oneof_decl[f.oneof_index].name
    return None


def _compare_message(ctx, original, original_name, update, update_name) -> None:
    pair = (original_name, update_name)
    if pair in ctx.compared:
        return  # compared already, or being compared (a recursive reference: compatible so far)
    ctx.compared[pair] = True
    start = len(ctx.found)
    _compare_fields(ctx, original, update)
    ctx.compared[pair] = not incompatible(ctx.found[start:])
    _compare_types(ctx, original, original_name, update, update_name)


def _compare_fields(ctx, original, update) -> None:
    original_top = {f.number: f for f in original.field if _real_oneof(original, f) is None}
    update_top = {f.number: f for f in update.field if _real_oneof(update, f) is None}
    original_all = {f.number: f for f in original.field}
    update_all = {f.number: f for f in update.field}
    original_oneof_of = {f.number: _real_oneof(original, f) for f in original.field}
    update_oneof_of = {f.number: _real_oneof(update, f) for f in update.field}
    original_oneofs = {d.name: [f for f in original.field if _real_oneof(original, f) == d.name]
                       for d in original.oneof_decl if not _synthetic(original, d)}
    update_oneofs = {d.name: [f for f in update.field if _real_oneof(update, f) == d.name]
                     for d in update.oneof_decl if not _synthetic(update, d)}
    original_in_oneof = {n for n, o in original_oneof_of.items() if o is not None}

    for name, members in update_oneofs.items():
        moved = sum(1 for f in members if original_top.pop(f.number, None) is not None)
        existing = sum(1 for f in members if f.number in original_in_oneof)
        ctx.path.append(name)
        if moved > 1:
            ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
        elif moved == 1 and existing > 0:
            ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF")
        ctx.path.pop()

    for name in sorted(original_oneofs.keys() | update_oneofs.keys()):
        ctx.path.append(name)
        if name not in update_oneofs:
            ctx.add("ONEOF_REMOVED")
        elif name not in original_oneofs:
            ctx.add("ONEOF_ADDED")
        else:
            before = {f.number: f for f in original_oneofs[name]}
            after = {f.number: f for f in update_oneofs[name]}
            for number in sorted(before.keys() | after.keys()):
                ctx.path.append(str(number))
                if number not in after:
                    if number not in update_all:  # moved elsewhere is not a removal
                        ctx.add("ONEOF_FIELD_REMOVED")
                elif number not in before:
                    ctx.add("ONEOF_FIELD_ADDED")
                else:
                    _compare_field(ctx, before[number], after[number])
                ctx.path.pop()
        ctx.path.pop()

    for number in sorted(original_top.keys() | update_top.keys()):
        ctx.path.append(str(number))
        before, after = original_top.get(number), update_top.get(number)
        if after is None:
            ctx.add("REQUIRED_FIELD_REMOVED" if before.label == FDP.LABEL_REQUIRED else "FIELD_REMOVED")
        elif before is None:
            ctx.add("REQUIRED_FIELD_ADDED" if after.label == FDP.LABEL_REQUIRED else "FIELD_ADDED")
        else:
            _compare_field(ctx, before, after)
        ctx.path.pop()

    for number in sorted(original_all.keys() & update_all.keys()):
        before_oneof, after_oneof = original_oneof_of[number], update_oneof_of[number]
        if before_oneof == after_oneof:
            continue  # compared above, top level or in the same oneof
        ctx.path.append(str(number))
        _compare_field(ctx, original_all[number], update_all[number])
        ctx.path.pop()


def _synthetic(message, decl) -> bool:
    """The oneof protoc makes for a proto3 `optional` field: not a oneof of the schema."""
    index = list(message.oneof_decl).index(decl)
    members = [f for f in message.field if f.HasField("oneof_index") and f.oneof_index == index]
    return bool(members) and all(f.proto3_optional for f in members)


def _type_ref(f) -> str:
    return SCALAR_NAMES.get(f.type) or f.type_name


def _compare_field(ctx, original, update) -> None:
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED")
    _compare_labels(ctx, original, update)
    _compare_type_refs(ctx, _type_ref(original), _type_ref(update))


def _map_entry(table, ref):
    info = table.get(ref)
    if info is not None and not info.is_enum and info.proto.options.map_entry:
        return info.proto
    return None


def _compare_labels(ctx, original, update) -> None:
    """optional <-> repeated: wire compatible for messages, strings and bytes, not for numbers."""
    repeated_before = original.label == FDP.LABEL_REPEATED
    if repeated_before == (update.label == FDP.LABEL_REPEATED):
        return
    if _map_entry(ctx.original, original.type_name) or _map_entry(ctx.update, update.type_name):
        return  # a map against a non-map is reported by its kind
    if original.type in (FDP.TYPE_MESSAGE, FDP.TYPE_GROUP):
        return
    if original.type in (FDP.TYPE_STRING, FDP.TYPE_BYTES):
        ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED")
    else:
        ctx.add("FIELD_NUMERIC_LABEL_CHANGED")


def _kind(table, ref) -> str:
    if ref in SCALAR_GROUPS:
        return "SCALAR"
    if _map_entry(table, ref) is not None:
        return "MAP"
    info = table.get(ref)
    return "SCALAR" if info is not None and info.is_enum else "MESSAGE"


def _scalar_group(table, ref) -> str:
    return SCALAR_GROUPS.get(ref, "GENERAL_NUMBER")  # an enum is read as an int32


def _compare_type_refs(ctx, original, update) -> None:
    kind = _kind(ctx.original, original)
    if kind != _kind(ctx.update, update):
        ctx.add("FIELD_KIND_CHANGED")
    elif kind == "SCALAR":
        if _scalar_group(ctx.original, original) != _scalar_group(ctx.update, update):
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
    elif kind == "MAP":
        before, after = _map_entry(ctx.original, original), _map_entry(ctx.update, update)
        for index in (0, 1):
            _compare_type_refs(ctx, _type_ref(before.field[index]), _type_ref(after.field[index]))
    else:
        _compare_named_types(ctx, original, update)


def _local_name(table, ref) -> str:
    info = table.get(ref)
    prefix = f".{info.package}." if info is not None and info.package else "."
    return ref[len(prefix):] if ref.startswith(prefix) else ref.lstrip(".")


def _compare_named_types(ctx, original, update) -> None:
    """Messages match by their name within their package (the package may change), then by content."""
    local = _local_name(ctx.original, original)
    if local != _local_name(ctx.update, update):
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    before, after = ctx.original.get(original), ctx.update.get(update)
    if before is None or after is None:
        return
    outer_path, ctx.path = ctx.path, local.split(".")
    _compare_message(ctx, before.proto, original, after.proto, update)
    ctx.path = outer_path
    if not ctx.compared[(original, update)]:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
