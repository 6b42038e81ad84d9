"""Filtered view topics: a topic whose ConsumeQueues hold only the base topic's units whose tag
matches an expression, with its own dense offsets (ARCHITECTURE.md, Kafka ⇄ store mapping).

A view is an ordinary topic with attributes `filter.source.topic=<base>` and
`filter.tag.expression=<expr>` (Kafka CreateTopics configs) and the base's queue count. Its
ConsumeQueue units point at the base's CommitLog entries (no second CommitLog write), so
`store.read(view, q, offset)` returns the base messages with view offsets.

Maintenance: `Views` is a store dispatcher. For each entry dispatched to a base queue it derives a
`DispatchRequest` for each view queue the entry matches (the base entry's CommitLog offset and size,
the view's next offset, the matching tags codes) and feeds it back through the store's dispatcher
list (`store.dispatch`), which writes the view's units and wakes its long polls. Live appends and
recovery's replay go the same way, so a view whose units were lost with consumequeue/ is rebuilt
by the replay when `Views(store)` is registered before `store.recover()`. Where a view queue stands
in its base queue is derived, never persisted: the base unit holding the CommitLog offset of the
view's last unit, plus one (CommitLog offsets grow along a queue). `refresh()` catches a view up
from there (a new view's backfill, a view ConsumeQueue lost on its own), and deleting the view
(`store.topics.delete`) leaves the base untouched.

Matching: the unit's tags code against the expression's hash set, then the exact TAGS of the
entry (hash collisions); units of an inner batch (a Kafka record batch, even of one record) match
on the hash. All of it runs on the appending thread (the event loop), inside the append.
"""
from __future__ import annotations

import collections
import logging
import threading

from codec.remoting.message import INNER_BATCH_FLAG, INT32, SYSFLAG_AT, decode
from codec.remoting.tags import TagFilter, parse_tags
from store.dispatch import DispatchRequest

log = logging.getLogger("rocketgate.views")

ATTR_SOURCE = "filter.source.topic"
ATTR_EXPRESSION = "filter.tag.expression"
CHUNK = 4096


class ViewError(ValueError):
    """A view definition that cannot be created (message for the client)."""


def definition(cfg) -> tuple[str, TagFilter] | None:
    """(base topic, tag filter) of a view topic config, None for an ordinary topic."""
    attrs = cfg.attributes if cfg is not None else None
    if not attrs or not attrs.get(ATTR_SOURCE):
        return None
    return attrs[ATTR_SOURCE], parse_tags(attrs.get(ATTR_EXPRESSION) or "*")


class Views:
    """All views of a store; `app.views`. Register it before `store.recover()` to have the replay
    rebuild lost view units (see the module docstring)."""

    def __init__(self, store) -> None:
        self.store = store
        self._lock = threading.RLock()
        self._by_source: dict[str, dict[str, TagFilter]] = {}
        store.add_dispatcher(self)
        self.refresh()

    def is_view(self, topic: str) -> bool:
        return definition(self.store.topics.get(topic)) is not None

    def views_of(self, base: str) -> list[str]:
        return list(self._by_source.get(base, ()))

    def create_view(self, name: str, source: str, expression: str | None, attributes: dict | None = None):
        """Create a view topic (queues = the base's) and backfill it from the base history."""
        base = self.store.topics.get(source)
        if base is None:
            raise ViewError(f"source topic {source!r} does not exist")
        if definition(base) is not None:
            raise ViewError(f"source topic {source!r} is itself a view")
        if self.store.topics.get(name) is not None:
            raise ViewError(f"topic {name!r} already exists")
        attrs = dict(attributes or {})
        attrs[ATTR_SOURCE] = source
        attrs[ATTR_EXPRESSION] = expression or "*"
        cfg = self.store.topics.create(name, read_queues=base.read_queues, write_queues=base.write_queues,
                                       perm=4, attributes=attrs)  # perm 4: readable, not writable
        self.refresh()
        return cfg

    def refresh(self) -> None:
        """Re-read view definitions from the topic table (after create/delete) and catch up."""
        with self._lock:
            self._load()
            for base, views in self._by_source.items():
                for q in self.store.queues(base):
                    self._extend(base, q, views)

    def _load(self) -> None:
        by_source: dict[str, dict[str, TagFilter]] = {}
        for name in self.store.topics.names():
            d = definition(self.store.topics.get(name))
            if d is not None:
                by_source.setdefault(d[0], {})[name] = d[1]
        self._by_source = by_source

    def dispatch(self, requests) -> None:
        """Store dispatcher: the view requests of the base entries among `requests`."""
        by_source = self._by_source
        if not by_source:
            return
        derived: list[DispatchRequest] = []
        ends: dict[tuple[str, int], int] = {}  # view queue -> next offset within this call
        for r in requests:
            views = by_source.get(r.topic)
            if not views:
                continue
            if any(self.store.topics.get(v) is None for v in views):
                self._load()  # a view was deleted; the others are current (no catch-up: no duplicates)
                by_source = self._by_source
                views = by_source.get(r.topic)
                if not views:
                    continue
            inner = r.sys_flag & INNER_BATCH_FLAG
            codes = r.codes()
            for view, filt in views.items():
                if filt.match_all:
                    keep = codes
                elif inner:
                    keep = [c for c in codes if c in filt.codes]
                elif codes[0] in filt.codes and filt.matches(r.properties.get("TAGS")):
                    keep = codes
                else:
                    continue
                if keep:
                    key = (view, r.queue_id)
                    q = ends.get(key)
                    if q is None:
                        q = self.store.max_offset(view, r.queue_id)
                    ends[key] = q + len(keep)
                    derived.append(_view_request(view, r.queue_id, q, r.physical_offset, r.size, r.sys_flag,
                                                 keep, r.store_timestamp))
        self.store.dispatch(derived)

    def _start(self, base: str, view: str, q: int) -> int:
        """Next base offset for a view queue, derived from the view's last unit."""
        s = self.store
        top = s.max_offset(view, q)
        lo, hi = s.min_offset(base, q), s.max_offset(base, q)
        if top <= s.min_offset(view, q):
            return lo
        last = s.units(view, q, top - 1, 1)
        if not last:
            return lo
        phys = last[0][0]
        while lo < hi:  # first base offset whose CommitLog offset is > phys
            mid = (lo + hi) // 2
            u = s.units(base, q, mid, 1)
            if u and u[0][0] <= phys:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _extend(self, base: str, q: int, views: dict[str, TagFilter]) -> None:
        """Bring every view of one base queue up to its end from the base's units: they are read
        once for all views, and an entry is decoded (exact tag check) at most once."""
        s = self.store
        nexts = {view: self._start(base, view, q) for view in views}
        start, end = min(nexts.values(), default=0), s.max_offset(base, q)
        entries: dict[int, object] = {}  # phys -> TAGS of the entry (INNER for a Kafka batch)

        def exact(filt: TagFilter, phys: int, size: int) -> bool:
            if phys not in entries:
                entries[phys] = entry_tag(s, phys, size)
            tag = entries[phys]
            return tag is INNER or filt.matches(tag)

        while start < end:
            units = s.units(base, q, start, min(CHUNK, end - start))
            if not units:
                break
            counts = collections.Counter([u[0] for u in units])
            batched = {phys for phys, n in counts.items() if n > 1}  # several units: an inner batch
            for view, filt in views.items():
                lo = max(0, nexts[view] - start)
                if filt.match_all:
                    keep = units[lo:]
                else:  # hash first (one comprehension), then the exact tag of single entries
                    codes = filt.codes
                    keep = [u for u in units[lo:] if u[2] in codes
                            and (u[0] in batched or exact(filt, u[0], u[1]))]
                if keep:
                    s.dispatch(_unit_requests(view, q, s.max_offset(view, q), keep))
                nexts[view] = max(nexts[view], start + len(units))
            start += len(units)


def _view_request(view: str, q: int, offset: int, phys: int, size: int, sys_flag: int, codes, ts: int):
    """A view's units for one base entry: no properties or keys, so nothing is indexed again."""
    return DispatchRequest(view, q, offset, len(codes), phys, size, ts, sys_flag, tuple(codes), None, {})


def _unit_requests(view: str, q: int, offset: int, units) -> list[DispatchRequest]:
    """Requests for base units `[(phys, size, code)]` (consecutive units of one entry go together);
    the base entries' timestamps and flags are not in the units and are left 0."""
    out = []
    i = 0
    while i < len(units):
        phys, size = units[i][0], units[i][1]
        j = i + 1
        while j < len(units) and units[j][0] == phys:
            j += 1
        out.append(_view_request(view, q, offset, phys, size, 0, [u[2] for u in units[i:j]], 0))
        offset += j - i
        i = j
    return out


INNER = object()  # entry_tag() of an inner batch: its records match on their tags codes


def entry_tag(store, phys: int, size: int):
    """The TAGS of a CommitLog entry for the exact check; INNER for an inner batch (a Kafka record
    batch, even of one record: its tag is in the records, the units carry its hash)."""
    raw = store.read_entry(phys, size)
    if len(raw) < SYSFLAG_AT + 4:
        return None
    if INT32.unpack_from(raw, SYSFLAG_AT)[0] & INNER_BATCH_FLAG:
        return INNER
    return decode(raw).properties.get("TAGS")


def view_filter(cfg) -> TagFilter | None:
    """The tag filter of a view topic config (for Fetch), None for an ordinary topic."""
    d = definition(cfg)
    return d[1] if d is not None else None
