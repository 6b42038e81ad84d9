"""One table topic's writer: follows the topic's ConsumeQueues from the offsets its table's current
snapshot records and, every commit interval, commits what arrived as one Iceberg snapshot.

Produce never waits for it: it reads the store like any consumer (on the event loop, in chunks, a
bounded amount per commit) and converts, writes Parquet and commits in a worker thread. A queue holds
only visible records (a transaction's records reach the topic when it commits; aborted ones never
do), so neither does the table. The snapshot's summary records the next offset of every queue:
after a crash the writer resumes there, so each record is in the table exactly once (docs/tables.md).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import trio

from interop.txn_visibility import VISIBLE
from semantics.table_configs import settings
from tables import catalog as cat
from tables import faults
from tables.rows import Undecodable, entry_rows

log = logging.getLogger("rocketgate.tables")
READ_CHUNK = 256  # entries per store read (the loop gets a checkpoint between reads)
MAX_OFFSETS_PER_COMMIT = 200_000  # more waiting: the next commit follows at once
RECENT = 50


@dataclass
class WriterStats:
    rows: int = 0
    commits: int = 0
    dlq_rows: int = 0
    dropped: int = 0
    undecodable_entries: int = 0
    lost_offsets: int = 0  # deleted from the log (retention, DeleteRecords) before they were converted
    repaired_files: int = 0  # damaged data files replaced (tables.repair)
    last_lag_ms: int = 0  # produce (log append) to visible in the table, oldest record of the last commit
    max_lag_ms: int = 0
    recent_lags_ms: list = field(default_factory=list)  # of the last RECENT commits
    busy_ms: float = 0.0  # wall time of the worker thread converting and committing (rows/s per core)
    errors: int = 0
    last_error: str = ""
    covered: dict = field(default_factory=dict)


class TableWriter:
    def __init__(self, store, topic: str, attributes: dict, catalog, locations: dict, limiter, decoder=None,
                 owns=None, readable_end=None, shared: bool = False):
        self.store = store
        self.owns = owns or (lambda topic, queue_id: True)
        self.readable_end = readable_end or (lambda topic, queue_id, log_end: log_end)
        self.shared = shared  # other gateways commit to the same table (tables.bucket_catalog)
        self.topic = topic
        self.mode, self.interval_ms, self.spec, self.action = settings(attributes)
        self.catalog = catalog
        self.locations = locations  # table name -> metadata location: what the REST facade serves
        self.limiter = limiter
        self.decoder = decoder  # tables.schemas decoder for the schema modes; None for key_value
        self.stats = WriterStats()
        self.cursor: dict[int, int] = {}
        self.dlq_cursor: dict[int, int] = {}
        self.table = None
        self.dlq = None

    async def run(self) -> None:
        while self.table is None:
            try:
                await trio.to_thread.run_sync(self._open, limiter=self.limiter)
                await self._repair()
                self._publish()  # served from now on: checked (and repaired)
            except Exception as exc:  # a catalog it cannot open: the log goes on, try again later
                self.table = None
                self._failed("opening its table", exc)
                await trio.sleep(self.interval_ms / 1000)
        while True:
            await trio.sleep(self.interval_ms / 1000)
            try:
                while await self.step():
                    pass
            except Exception as exc:  # noqa: BLE001 - never the gateway's end: tried again next interval
                self._failed("reading the log", exc)

    async def step(self) -> bool:
        """Read what arrived and commit it; True when more is waiting."""
        if self.shared:  # another gateway may have led (and converted) a queue this one leads now
            await trio.to_thread.run_sync(self._resume_from_table, limiter=self.limiter)
        entries, next_offsets, more = await self._read()
        if not entries:
            self.cursor.update(next_offsets)
            return False
        prepared = self.decoder.prepare() if self.decoder is not None else None  # the registry, on the loop
        try:
            await trio.to_thread.run_sync(self._commit, entries, next_offsets, prepared, limiter=self.limiter)
        except Exception as exc:  # the table catches up at the next interval from the same offsets
            self._failed("committing", exc)
            return False
        return more

    def _failed(self, what: str, exc: Exception) -> None:
        self.stats.errors += 1
        self.stats.last_error = f"{what}: {exc}"
        log.warning("table topic %s: %s failed: %s (the log is unaffected; retried)", self.topic, what, exc)

    def _open(self) -> None:
        """Load (or create) the table and the offsets its current snapshot records."""
        from tables.layout import apply_spec, table_schema
        name = cat.table_name(self.topic)
        schema = self.decoder.initial_schema() if self.decoder else table_schema()
        table = cat.load_or_create(self.catalog, name, schema)
        apply_spec(table, self.spec)
        self.cursor = cat.committed_offsets(table)
        if self.action == "dlq_table" and self.decoder is not None:
            self.dlq = cat.load_or_create(self.catalog, name + cat.DLQ_SUFFIX, table_schema("dlq"))
            self.dlq_cursor = cat.committed_offsets(self.dlq)
        self.table = table
        log.info("table topic %s: table %s.%s resumes at offsets %s", self.topic, cat.NAMESPACE, name,
                 self.cursor or "(start)")

    def _resume_from_table(self) -> None:
        """The cursor from the table's current snapshot (tables.bucket_catalog: the table is shared)."""
        self.table = self.table.refresh()
        self.cursor = cat.committed_offsets(self.table)
        if self.dlq is not None:
            self.dlq = self.dlq.refresh()
            self.dlq_cursor = cat.committed_offsets(self.dlq)

    def _publish(self) -> None:
        """What the REST catalog serves for this topic: the current metadata of its tables."""
        name = cat.table_name(self.topic)
        self.locations[name] = self.table.metadata_location
        if self.dlq is not None:
            self.locations[name + cat.DLQ_SUFFIX] = self.dlq.metadata_location

    async def _repair(self) -> None:
        """Replace the damaged data files of the current snapshot (tables.repair) before going on."""
        from tables import repair
        found = await trio.to_thread.run_sync(repair.damaged, self.table, limiter=self.limiter)
        if not found:
            return
        ranges = {}
        for data_file, covered, why in found:
            log.error("table topic %s: data file %s is damaged (%s): not served; rows converted again from "
                      "offsets %s", self.topic, data_file.file_path, why, covered or "(unknown)")
            for q, (first, end) in covered.items():
                ranges.setdefault(q, []).append((first, end))
        entries = []
        for q, spans in ranges.items():
            for first, end in spans:
                lo = self.store.min_offset(self.topic, q)
                if first < lo:
                    self.stats.lost_offsets += min(end, lo) - first
                pos = max(first, lo)
                while pos < end:
                    res = self.store.read(self.topic, q, pos, max_count=READ_CHUNK)
                    entries += [(q, first, offset, msg, end) for offset, msg in res.entries if not VISIBLE.hidden(msg)]
                    if res.next_offset <= pos:
                        break
                    pos = res.next_offset
                    await trio.sleep(0)
        prepared = self.decoder.prepare() if self.decoder is not None else None
        await trio.to_thread.run_sync(self._replace, [f for f, _, _ in found], entries, prepared, limiter=self.limiter)

    def _replace(self, files, entries, prepared) -> None:
        from tables import repair
        from tables.layout import arrow_table
        rows = []
        for q, first, offset, msg, end in entries:
            try:
                rows += [r for r in entry_rows(msg, offset, first) if r.offset < end]
            except Undecodable:
                pass
        values = None
        if self.decoder is not None:
            rows, values, _ = self.decoder.decode(self, rows, prepared)  # the undecodable ones are in the DLQ
        data = arrow_table(rows, self.table.schema().as_arrow(), values) if rows else None
        restored = repair.replace(self.table, files, data)
        self.stats.repaired_files += len(files)
        log.warning("table topic %s: %d damaged data files replaced, %d rows restored from the log",
                    self.topic, len(files), restored)

    async def _read(self):
        """[(queue id, read start, first offset, message)] from each queue's cursor, the next offsets, more?"""
        store, topic = self.store, self.topic
        entries, next_offsets, budget = [], {}, MAX_OFFSETS_PER_COMMIT
        for q in store.queues(topic):
            if not self.owns(topic, q):  # a cluster: its leader converts it
                continue
            lo = store.min_offset(topic, q)
            hi = self.readable_end(topic, q, store.max_offset(topic, q))  # replicated: the high watermark
            hi = VISIBLE.stable_end(topic, q, hi, lo)  # not past an open Kafka transaction (its records may yet abort)
            start = self.cursor.get(q, lo)
            if start > hi:  # the topic was deleted and created again: its offsets start over
                log.warning("table topic %s/%d: offsets went back from %d to %d (topic re-created)",
                            topic, q, start, hi)
                start = lo
            if start < lo:
                log.warning("table topic %s/%d: offsets %d..%d left the log before conversion", topic, q, start, lo)
                self.stats.lost_offsets += lo - start
                start = lo
            pos = start
            while pos < hi and budget > 0:
                res = store.read(topic, q, pos, max_count=min(READ_CHUNK, budget))
                for offset, msg in res.entries:
                    if not VISIBLE.hidden(msg):  # a transaction marker or an aborted Kafka transaction's batch
                        entries.append((q, start, offset, msg))
                if res.next_offset <= pos:
                    break
                budget -= res.next_offset - pos
                pos = res.next_offset
                await trio.sleep(0)
            next_offsets[q] = pos
        return entries, next_offsets, budget <= 0

    def _commit(self, entries, next_offsets: dict[int, int], prepared=None) -> None:
        """In a worker thread: rows, Parquet, snapshot (the DLQ table's first, then the table's)."""
        began = time.perf_counter()
        try:
            self._convert_and_append(entries, next_offsets, prepared)
        finally:
            self.stats.busy_ms += (time.perf_counter() - began) * 1000

    def _convert_and_append(self, entries, next_offsets: dict[int, int], prepared) -> None:
        from tables.layout import arrow_table
        if faults.ENV_SET:
            faults.check_commit()
        rows = []
        for q, start, offset, msg in entries:
            try:
                rows.extend(entry_rows(msg, offset, start))
            except Undecodable as exc:
                self.stats.undecodable_entries += 1
                log.error("table topic %s: %s (skipped)", self.topic, exc)
        covered = {q: (start, next_offsets[q]) for q, start, _, _ in entries}  # the offsets read, per queue
        if self.decoder is not None:
            rows, values, bad = self.decoder.decode(self, rows, prepared)
            self._dead_letters(bad, next_offsets, covered)
        else:
            values = None
        if rows:
            data = arrow_table(rows, self.table.schema().as_arrow(), values)
            cat.append(self.table, data, next_offsets, covered)
            self.locations[cat.table_name(self.topic)] = self.table.metadata_location
            self.stats.commits += 1
            self.stats.rows += len(rows)
            lag = int(time.time() * 1000) - min(r.store_timestamp for r in rows)
            self.stats.last_lag_ms = lag
            self.stats.max_lag_ms = max(self.stats.max_lag_ms, lag)
            self.stats.recent_lags_ms = [*self.stats.recent_lags_ms[-(RECENT - 1):], lag]
        self.stats.covered = {str(q): list(r) for q, r in covered.items()}
        self.cursor.update(next_offsets)

    def _dead_letters(self, bad, next_offsets, covered) -> None:
        """Undecodable rows [(row, reason)] to `<topic>~dlq`, or counted as dropped."""
        from tables.layout import arrow_table
        if self.dlq is None:
            self.stats.dropped += len(bad)
            return
        bad = [(r, why) for r, why in bad if r.offset >= self.dlq_cursor.get(r.partition, 0)]
        if not bad:
            return
        data = arrow_table([r for r, _ in bad], self.dlq.schema().as_arrow(), reasons=[why for _, why in bad])
        cat.append(self.dlq, data, next_offsets, covered)
        self.dlq_cursor.update(next_offsets)
        self.locations[cat.table_name(self.topic) + cat.DLQ_SUFFIX] = self.dlq.metadata_location
        self.stats.dlq_rows += len(bad)
