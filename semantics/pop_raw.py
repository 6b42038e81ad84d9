"""New plain records handed to a POP consumer as their stored bytes, not decoded (`PopEngine.acquire`
with `raw=True`): each entry is checked as `store.get` checks it (else it is decoded, so the store
quarantines it), and a subscription's exact check reads only the stored properties.
"""
from __future__ import annotations

import struct

import codec.remoting.message as M

_SIZE_MAGIC = struct.Struct(">iI")  # an entry's TOTALSIZE and MAGICCODE
_PROPS_LEN = struct.Struct(">h")  # an entry's PROPERTIESLENGTH


def span(store, units) -> tuple[bytes, int]:
    """(bytes, CommitLog offset) of one read covering the entries of ConsumeQueue `units` when they
    lie close together (a producer's batch does), else (b"", 0): one read instead of one per entry."""
    wanted = [(phys, size) for phys, size, _ in units if size > 0]
    if len(wanted) < 2:
        return b"", 0
    first, end = wanted[0][0], max(phys + size for phys, size in wanted)
    need = sum(size for _, size in wanted)
    if first < store.min_physical_offset or end - first > min(2 * need + 4096, 1 << 20):
        return b"", 0
    return store.read_entry(first, end - first), first


def raw_entry(store, phys: int, size: int, block: bytes = b"", block_at: int = 0) -> bytes | None:
    """The bytes of a plain (not inner-batch) entry whose header, position and body CRC check out,
    as `store.get` checks them; None: decode it instead (and let the store quarantine it). Taken from
    `block` (a `span` read starting at `block_at`) when it holds the entry."""
    at = phys - block_at
    data = block[at:at + size] if 0 <= at and at + size <= len(block) else store.read_entry(phys, size)
    if len(data) != size or size < M.BODY_AT or store.is_quarantined(phys):
        return None
    total, magic = _SIZE_MAGIC.unpack_from(data)
    body_len = M.INT32.unpack_from(data, M.BODY_LENGTH_AT)[0]
    if (total != size or magic != M.MAGIC_V1 or M.INT64.unpack_from(data, M.PHYSICAL_OFFSET_AT)[0] != phys
            or M.INT32.unpack_from(data, M.SYSFLAG_AT)[0] & M.INNER_BATCH_FLAG or body_len < 0
            or M.BODY_AT + body_len > size
            or M.body_crc(data[M.BODY_AT:M.BODY_AT + body_len]) != M.INT32.unpack_from(data, M.BODY_CRC_AT)[0]):
        return None
    return data


def KEEP_ALL(properties: dict) -> bool:
    """The `raw_keep` of a subscription to everything (no properties are parsed for it)."""
    return True


def raw_properties(data: bytes) -> dict | None:
    """A plain stored entry's properties as `store.get` decodes them (its reserved batch keys
    dropped); None when the topic or properties fields do not fit the entry (decode it instead)."""
    at = M.BODY_AT + M.INT32.unpack_from(data, M.BODY_LENGTH_AT)[0]
    if at >= len(data):
        return None
    at += 1 + data[at]  # the topic: its length byte and its bytes
    if at + 2 > len(data):
        return None
    size = _PROPS_LEN.unpack_from(data, at)[0]
    if size < 0 or at + 2 + size != len(data):
        return None
    try:
        props = M.string_to_properties(data[at + 2:].decode()) if size else {}
    except UnicodeDecodeError:
        return None
    for reserved in (M.PROP_INNER_NUM, M.PROP_TAGS_CODES, M.PROP_INNER_KEYS):
        props.pop(reserved, None)
    return props
