"""References of a schema: each (name, subject, version) resolved to a registered schema, transitively,
into the name -> text map a format's `parse` takes (dependencies before the schemas that use them)."""
from __future__ import annotations

import semantics.schema_registry.errors as err
from semantics.schema_registry.state import RegistryState

MAX_DEPTH = 32


def parse_references(raw) -> tuple:
    """The request's `references` list as ((name, subject, version), ...); 42201 when malformed."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise err.invalid_schema("references must be a list")
    out = []
    for r in raw:
        if not isinstance(r, dict) or not isinstance(r.get("name"), str) or not isinstance(r.get("subject"), str):
            raise err.invalid_schema("each reference needs a name, a subject and a version")
        version = r.get("version", -1)
        if isinstance(version, bool) or not isinstance(version, int):
            raise err.invalid_schema(f"reference {r['name']!r}: version must be an integer")
        out.append((r["name"], r["subject"], version))
    return tuple(out)


def pin_latest(state: RegistryState, refs: tuple) -> tuple:
    """Version -1 ("latest", as clients may send) pinned to the subject's latest live version."""
    out = []
    for name, subject, version in refs:
        if version == -1:
            latest = state.latest(subject)
            if latest is None:
                raise err.invalid_schema(f"Invalid schema: reference {name!r} names subject {subject!r}, "
                                         "which has no version")
            version = latest.version
        out.append((name, subject, version))
    return tuple(out)


def resolve(state: RegistryState, refs: tuple) -> dict[str, str]:
    """name -> schema text of every schema `refs` reach; 42201 for a missing subject or version and for
    a cycle (a schema that reaches itself)."""
    resolved: dict[str, str] = {}
    _walk(state, refs, resolved, (), 0)
    return resolved


def _walk(state: RegistryState, refs: tuple, resolved: dict, path: tuple, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise err.invalid_schema(f"Invalid schema: references nest deeper than {MAX_DEPTH}")
    for name, subject, version in refs:
        where = (subject, version)
        if where in path:
            raise err.invalid_schema(f"Invalid schema: circular reference through {subject} version {version}")
        found = state.version(subject, version)
        if found is None:
            raise err.invalid_schema(f"Invalid schema: reference {name!r} to subject {subject!r} version {version} "
                                     "not found")
        _walk(state, found.schema.references, resolved, path + (where,), depth + 1)
        resolved.setdefault(name, found.schema.schema)
