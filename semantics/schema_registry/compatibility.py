"""Compatibility levels composed from a format's `reader_errors` (semantics.schema_formats):
BACKWARD: the new schema reads data written with the previous one; FORWARD: the previous one reads the
new schema's data; FULL: both; the _TRANSITIVE levels against every live version, not just the latest."""
from __future__ import annotations

from semantics.schema_formats import Parsed, module


def errors(level: str, new: Parsed, existing: list[Parsed]) -> list[str]:
    """Why `new` may not follow `existing` (oldest first) under `level`; empty: it may."""
    if level == "NONE" or not existing:
        return []
    against = existing if level.endswith("_TRANSITIVE") else existing[-1:]
    base = level.removesuffix("_TRANSITIVE")
    out: list[str] = []
    for old in against:
        if old.schema_type != new.schema_type:
            out.append(f"Incompatible because of different schema type: {old.schema_type} and {new.schema_type}")
            continue
        fmt = module(new.schema_type)
        if base in ("BACKWARD", "FULL"):
            out += [f"BACKWARD: {e}" for e in fmt.reader_errors(new, old)]
        if base in ("FORWARD", "FULL"):
            out += [f"FORWARD: {e}" for e in fmt.reader_errors(old, new)]
    return out
