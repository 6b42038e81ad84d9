"""Compile a Protobuf schema (.proto text or a base64 FileDescriptorProto) with its references.

protoc itself does the parsing and type checking: grpcio-tools ships it as a library whose
`get_protos` compiles files from include paths in memory and raises every error with file:line.
It answers generated Python code; the serialized FileDescriptorProto is the bytes literal inside
(read with `ast`, never executed). A schema sent as base64 FileDescriptorProto (confluent-kafka's
Python serializer does so) is rendered to .proto text first, so both go through one compiler.
Well-known imports (google/protobuf/*, google/type/*, confluent/*) are known without a reference,
as in Confluent's registry and clients.
"""
from __future__ import annotations

import ast
import atexit
import base64
import binascii
import functools
import importlib
import importlib.resources
import os
import posixpath
import re
import shutil
import tempfile
import threading

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from . import SchemaError
from .protobuf_render import render

MAIN_FILE = "__schema__.proto"  # the registered schema's own file name while compiling
_BUILTIN_MODULES = ("confluent_kafka.schema_registry.confluent.meta_pb2",
                    "confluent_kafka.schema_registry.confluent.type.decimal_pb2")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_SYNTAX = re.compile(r"\b(syntax|edition)\s*=")
_compile_lock = threading.Lock()  # protoc's compiler is not documented as reentrant


def looks_like_descriptor(text: str) -> bytes | None:
    """The FileDescriptorProto bytes when `text` is base64 of one (a .proto never is: it has ';')."""
    if ";" in text or not _BASE64.match(text):
        return None
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
        descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return raw


def to_proto_text(text: str) -> str:
    """.proto text to compile: a descriptor rendered; a file without syntax gets protoc's default
    stated (on its first line, so error positions stay), or protoc logs a warning to stderr."""
    raw = looks_like_descriptor(text)
    if raw is not None:
        try:
            return render(descriptor_pb2.FileDescriptorProto.FromString(raw))
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise SchemaError(f"Invalid schema: not a usable FileDescriptorProto ({exc})") from None
    text = text.removeprefix("\ufeff")
    if not _SYNTAX.search(_COMMENTS.sub(" ", text)):
        text = 'syntax = "proto2"; ' + text
    return text


def _check_import_path(name: str) -> str:
    clean = posixpath.normpath(name)
    if (not name or name != clean or clean.startswith(("/", "../")) or clean == ".."
            or "\\" in name or "\0" in name or not name.endswith(".proto") or name == MAIN_FILE):
        raise SchemaError(f"Invalid reference name {name!r}: an import path like 'dir/file.proto'")
    return clean


@functools.cache
def _builtin_dirs() -> tuple[str, ...]:
    """Include paths of the well-known imports: protoc's own, googleapis' google/type, Confluent's."""
    dirs = [str(importlib.resources.files("grpc_tools") / "_proto")]
    try:
        import google.type  # googleapis-common-protos ships the .proto files beside the modules
        for package_dir in google.type.__path__:  # a namespace package: no __file__
            if os.path.exists(os.path.join(package_dir, "date.proto")):
                dirs.append(os.path.dirname(os.path.dirname(package_dir)))
    except ImportError:
        pass
    confluent = tempfile.mkdtemp(prefix="rocketgate-proto-builtin-")
    atexit.register(shutil.rmtree, confluent, ignore_errors=True)
    for module_name in _BUILTIN_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        fdp = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        path = os.path.join(confluent, fdp.name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(render(fdp))
    dirs.append(confluent)
    return tuple(dirs)


def _descriptors_in(generated: bytes) -> bytes:
    """The serialized FileDescriptorProto that protoc's generated module passes to AddSerializedFile."""
    for node in ast.walk(ast.parse(generated)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "AddSerializedFile" and node.args):
            return ast.literal_eval(node.args[0])
    raise SchemaError("protoc produced no descriptor")


def compile_files(text: str, references: dict[str, str]) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Every FileDescriptorProto the schema needs, by file name (MAIN_FILE is the schema)."""
    from grpc_tools import _protoc_compiler

    with tempfile.TemporaryDirectory(prefix="rocketgate-proto-") as work:
        for name, ref_text in references.items():
            path = os.path.join(work, _check_import_path(name))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(to_proto_text(ref_text))
        with open(os.path.join(work, MAIN_FILE), "w", encoding="utf-8") as out:
            out.write(to_proto_text(text))
        includes = [work.encode()] + [d.encode() for d in _builtin_dirs()]
        try:
            with _compile_lock:
                generated = _protoc_compiler.get_protos(MAIN_FILE.encode(), includes)
        except _protoc_compiler.ProtocErrors as exc:
            message = str(exc).replace(work + os.sep, "").replace(MAIN_FILE, "schema")
            raise SchemaError(f"Invalid schema: {message}") from None
    files = {}
    for _module, code in generated:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(_descriptors_in(code))
        files[fdp.name] = fdp
    if MAIN_FILE not in files:
        raise SchemaError("Invalid schema: protoc produced no descriptor for it")
    return files


def build_pool(files: dict[str, descriptor_pb2.FileDescriptorProto]):
    """A DescriptorPool of all files, dependencies first; returns (pool, the main FileDescriptor)."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, stack: tuple[str, ...]) -> None:
        if name in added:
            return
        if name in stack:
            raise SchemaError(f"Invalid schema: circular import of {name}")
        fdp = files.get(name)
        if fdp is None:
            raise SchemaError(f"Invalid schema: import {name} not found")
        for dependency in fdp.dependency:
            add(dependency, stack + (name,))
        try:
            pool.Add(fdp)
        except (TypeError, ValueError, KeyError) as exc:
            raise SchemaError(f"Invalid schema: {exc}") from None
        added.add(name)

    add(MAIN_FILE, ())
    return pool, pool.FindFileByName(MAIN_FILE)
