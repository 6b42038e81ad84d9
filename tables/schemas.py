"""The schema modes' value decoders (filled in by the schema modes; key_value has none)."""
from __future__ import annotations


def decoder_for(mode: str, topic: str, registry):
    """The decoder of a table topic's mode: None for key_value."""
    if mode == "key_value":
        return None
    from tables.decode import SchemaDecoder
    return SchemaDecoder(mode, topic, registry)
