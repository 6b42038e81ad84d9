"""Tag subscription expressions (`*`, `TagA`, `TagA || TagB`).

The broker filters on the ConsumeQueue tagsCode (the tag's Java hashCode) so no unit whose hash
is outside the subscription is read; hash collisions are then removed by an exact re-check of the
TAGS property (`matches`), which native clients also do themselves. One parsed `TagFilter` is
shared by every pull with the same expression (`parse_tags` is cached).
"""
from __future__ import annotations

import functools

from codec.remoting.message import tag_hash

SUB_ALL = "*"


class TagFilter:
    """A parsed tag expression: `tags` (exact strings) and `codes` (their hashCodes)."""

    __slots__ = ("expression", "tags", "codes", "match_all")

    def __init__(self, expression: str, tags: frozenset[str]) -> None:
        self.expression = expression
        self.tags = tags
        self.codes = frozenset(tag_hash(t) for t in tags)
        self.match_all = not tags

    def matches_code(self, tags_code: int) -> bool:
        """Broker-side ConsumeQueue check (pass as `store.read(..., tag_filter=f.matches_code)`)."""
        return self.match_all or tags_code in self.codes

    def matches(self, tag: str | None) -> bool:
        """Exact re-check of a message's TAGS value (None = untagged: only `*` matches)."""
        return self.match_all or (tag is not None and tag in self.tags)

    def matches_properties(self, properties: dict[str, str]) -> bool:
        return self.match_all or properties.get("TAGS") in self.tags

    def __repr__(self) -> str:
        return f"TagFilter({self.expression!r})"


@functools.lru_cache(maxsize=4096)
def parse_tags(expression: str | None) -> TagFilter:
    """Parse like RocketMQ's FilterAPI: None, "" and "*" match everything; else `||`-separated,
    blanks trimmed and empty parts skipped (an expression of only separators matches everything)."""
    text = (expression or "").strip()
    if text in ("", SUB_ALL):
        return TagFilter(SUB_ALL, frozenset())
    tags = frozenset(part.strip() for part in text.split("||") if part.strip())
    return TagFilter(text if tags else SUB_ALL, tags)
