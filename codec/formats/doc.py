"""`python -m codec.formats.doc [PATH]`: write docs/formats.md from the construct definitions
(offsets, sizes, field meanings from their docs); `render()` is what tests/formats compares."""
from __future__ import annotations

import sys

import construct as c

from codec.formats import LAYOUTS
from codec.formats.common import TaggedFields

FAMILIES = ["CommitLog", "ConsumeQueue", "IndexFile", "Checkpoints", "Config", "Remoting bodies", "Ids",
            "System topics", "RemotingCommand", "Kafka", "__consumer_offsets", "Framing", "Schema registry"]
_FMT = {"b": "i8", "B": "u8", "h": "i16", "H": "u16", "i": "i32", "I": "u32", "l": "i32", "L": "u32",
        "q": "i64", "Q": "u64"}
_NAMED = {"_NullableBlob": "zigzag varint length (-1 = null) + bytes",
          "_NullableString": "i16 length (-1 = null) + utf8 string", "_IPv4": "4 bytes (IPv4)",
          "_CompactString": "uvarint length + 1, then utf8 string",
          "_MessageIndexes": "zigzag varint count, then zigzag varint indexes (0 alone = [0])"}


def _unwrap(con):
    """The construct under renames, docs and compile wrappers."""
    while isinstance(con, (c.Renamed, c.Transformed)) or type(con).__name__ == "Compiled":
        con = con.subcon
    return con


def kind(con) -> str:
    """A short type name: i32, u24, uvarint, 'i16 length + string', ..."""
    con = _unwrap(con)
    name = type(con).__name__
    if isinstance(con, c.FormatField):
        return _FMT.get(con.fmtstr[-1], con.fmtstr)
    if isinstance(con, c.BytesInteger):
        return f"{'i' if con.signed else 'u'}{8 * con.length}"
    if name in _NAMED:
        return _NAMED[name]
    if con is TaggedFields:
        return "tagged fields (uvarint count, then uvarint tag + uvarint size + bytes each)"
    if isinstance(con, c.Const):
        value = con.value
        return f"{kind(con.subcon)} = " + (f"0x{value:08X}" if isinstance(value, int) and value > 255 else repr(value))
    if isinstance(con, c.Rebuild):
        return kind(con.subcon)
    if isinstance(con, c.StringEncoded):
        inner = _unwrap(con.subcon)
        if isinstance(inner, c.Prefixed):
            return f"{kind(inner.lengthfield)} length + {con.encoding} string"
        if isinstance(inner, c.NullTerminated):
            return f"{con.encoding} string ending at {inner.term!r}"
        return f"{con.encoding} string (rest)"
    if isinstance(con, c.Prefixed):
        return f"{kind(con.lengthfield)} length + {kind(con.subcon)}"
    if isinstance(con, c.Bytes):
        return f"{con.length} bytes" if isinstance(con.length, int) else "bytes"
    if con is c.GreedyBytes:
        return "bytes (rest)"
    if con is c.ZigZag:
        return "varint (zigzag)"
    if con is c.VarInt:
        return "uvarint"
    if isinstance(con, c.Adapter):
        return kind(con.subcon)
    if isinstance(con, c.Switch):
        return "one of: " + ", ".join(sorted({_label(v) for v in con.cases.values()}))
    if isinstance(con, (c.Array, c.GreedyRange)):
        return "repeated " + kind(con.subcon)
    if isinstance(con, c.FocusedSeq) and [getattr(sub, "name", None) for sub in con.subcons] == ["count", "items"]:
        return f"{kind(con.subcons[0])} count + " + kind(con.subcons[1])  # PrefixedArray
    if isinstance(con, c.Struct):
        return "struct"
    return name


def _label(con) -> str:
    for layout in LAYOUTS:
        if layout.construct is con:
            return layout.name
    return kind(con)


def _size(con) -> int | None:
    try:
        return _unwrap(con).sizeof()
    except (c.SizeofError, KeyError, AttributeError, TypeError):
        return None


def rows(con) -> list[tuple[str, str, str, str, str]]:
    """(offset, size, field, type, meaning) of each field of a struct layout."""
    con = _unwrap(con)
    out = []
    if isinstance(con, c.Adapter) and isinstance(_unwrap(con.subcon), c.Struct):
        con = _unwrap(con.subcon)
    if isinstance(con, c.Prefixed) and isinstance(_unwrap(con.subcon), c.Struct):
        shift = _size(con.lengthfield)
        out.append(("0", str(shift or "var"), "(length)", kind(con.lengthfield), "bytes that follow"))
        return out + [(str(int(o) + shift) if o.isdigit() and shift else "…" if o else o, s, f, t, m)
                      for o, s, f, t, m in rows(con.subcon)]
    if not isinstance(con, c.Struct):
        return []
    at: int | None = 0
    for sub in con.subcons:
        size = _size(sub)
        field = getattr(sub, "name", None) or "(literal)"
        meaning = (getattr(sub, "docs", "") or "").replace("|", "\\|").replace("\n", " ")
        if isinstance(_unwrap(sub), c.Check):
            out.append(("", "0", "(check)", "check", meaning))
            continue
        out.append((str(at) if at is not None else "…", str(size) if size is not None else "var",
                    field, kind(sub).replace("|", "\\|"), meaning))
        at = at + size if at is not None and size is not None else None
    return out


def render() -> str:
    lines = ["# Stored and wire formats", "",
             "Generated by `make formats-doc` (`python -m codec.formats.doc`) from the construct definitions",
             "in `codec/formats/`; do not edit by hand (tests/formats/test_doc.py fails when this file is stale).",
             "All integers are big-endian unless the type says varint. `…` as an offset: after a",
             "variable-length field. The hot paths keep precompiled `struct` code; tests/formats holds",
             "each to its definition in both directions on Hypothesis-generated values.", ""]
    order = {f: i for i, f in enumerate(FAMILIES)}
    for family in sorted({lay.family for lay in LAYOUTS}, key=lambda f: order.get(f, 99)):
        lines += [f"## {family}", ""]
        for lay in [lay for lay in LAYOUTS if lay.family == family]:
            size = _size(lay.construct)
            lines += [f"### {lay.name}", "", f"Where: {lay.where}." + (f" Size: {size} bytes." if size else ""),
                      "", lay.doc, ""]
            table = rows(lay.construct)
            if table:
                lines += ["| offset | size | field | type | meaning |", "|---:|---:|---|---|---|"]
                lines += [f"| {o} | {s} | `{f}` | {t} | {m} |" for o, s, f, t, m in table]
            else:
                lines += [f"Type: {kind(lay.construct)}."]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "docs/formats.md"
    with open(path, "w", encoding="utf-8") as f:
        f.write(render())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
