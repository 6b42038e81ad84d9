"""Table names of topics (docs/tables.md, "Name escaping"); no pyiceberg here, so the event loop may use it."""
from __future__ import annotations

import re

NAMESPACE = "rocketgate"
DLQ_SUFFIX = "~dlq"
_PLAIN = re.compile(r"[A-Za-z0-9_-]")


def table_name(topic: str) -> str:
    """The Iceberg table name of a topic: letters, digits, '_' and '-' as they are, any other
    character (a '.' Iceberg reads as a namespace separator, RocketMQ's '%' and '|') as ~XX (its
    UTF-8 bytes in hex); topic names hold no '~', so names never collide and `<topic>~dlq` is free."""
    return "".join(ch if _PLAIN.match(ch) else "".join(f"~{b:02x}" for b in ch.encode()) for ch in topic)


def topic_of(name: str) -> str:
    """The topic of a table name (`table_name` reversed; a DLQ table's suffix kept)."""
    dlq = name.endswith(DLQ_SUFFIX)
    base = name[:-len(DLQ_SUFFIX)] if dlq else name
    out = bytearray()
    for escaped, plain in re.findall(r"~([0-9a-f]{2})|(.)", base, re.S):
        out += bytes.fromhex(escaped) if escaped else plain.encode()
    return out.decode("utf-8", "replace") + (DLQ_SUFFIX if dlq else "")
