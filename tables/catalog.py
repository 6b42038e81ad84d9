"""The table topics' Iceberg catalog in the data dir: a pyiceberg SqlCatalog on SQLite
(`DATA_DIR/tables/catalog.db`) over a warehouse (tables.warehouse: `DATA_DIR/tables/warehouse`, or the
tier's bucket), namespace
`rocketgate`, one table per table topic (name escaped: `table_name`). Each snapshot a writer commits
carries in its summary the offsets it covers, so the table itself says where its writer resumes.
Every call here does file I/O: the writers call it from worker threads.
"""
from __future__ import annotations

import json
import os

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError, TableAlreadyExistsError

from tables import faults
from tables.names import DLQ_SUFFIX, NAMESPACE, table_name, topic_of  # noqa: F401 - the catalog's names

NEXT_OFFSETS = "rocketgate.next-offsets"  # {queue id: next offset} after this snapshot (cumulative)
COVERED = "rocketgate.covered-offsets"  # {queue id: [first, end)} of the offsets this snapshot read
COMMIT_ATTEMPTS = 4  # a commit racing other gateways' (a shared catalog)
# pyiceberg would retry a raced commit itself with the snapshot summary made for the old snapshot
# (the offsets): `append` retries instead, recomputing them, and refuses offsets already converted
TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}


class LocalCatalog(SqlCatalog):
    """SqlCatalog with the fault seam's catalog-commit point (tables.faults; inert unless set) that
    repairs a pointer to a torn or missing metadata file (tables.pointer_repair) when loading."""

    def load_table(self, identifier):  # type: ignore[override]
        try:
            return SqlCatalog.load_table(self, identifier)
        except NoSuchTableError:
            raise
        except Exception:
            from tables.pointer_repair import repair
            if not repair(self, identifier):
                raise
        return SqlCatalog.load_table(self, identifier)  # NoSuchTableError when the row was removed

    def _write_metadata(self, metadata, io, metadata_path) -> None:  # type: ignore[override]
        SqlCatalog._write_metadata(metadata, io, metadata_path)
        if faults.rules():
            faults.metadata_written()


def _io() -> dict:
    """Local files fsynced (tables.durable_io), with the fault seam when it is set."""
    return {"py-io-impl": "tables.faults.FaultFileIO" if faults.rules() else "tables.durable_io.DurableFileIO"}


def open_catalog(data_dir: str, warehouse=None, objects=None):
    """`warehouse`: a tables.warehouse.Warehouse (None: the data dir's); `objects`: the tier's object
    store, which then holds the catalog too (tables.bucket_catalog, shared by a cluster's gateways)."""
    from tables import page_checksums
    from tables.warehouse import local_warehouse
    page_checksums.install()
    warehouse = warehouse or local_warehouse(data_dir)
    if objects is not None:
        from tables.bucket_catalog import BucketCatalog
        return BucketCatalog("rocketgate", objects, warehouse=warehouse.url, **warehouse.io, **_io())
    root = os.path.abspath(os.path.join(data_dir, "tables"))
    os.makedirs(root, exist_ok=True)
    props = {"uri": f"sqlite:///{root}/catalog.db", "warehouse": warehouse.url, **warehouse.io, **_io()}
    catalog = LocalCatalog("rocketgate", **props)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    return catalog


def load_or_create(catalog: SqlCatalog, name: str, schema):
    """The table `name` in the namespace, created with `schema` when it does not exist."""
    ident = (NAMESPACE, name)
    try:
        return catalog.load_table(ident)
    except NoSuchTableError:
        pass
    try:
        return catalog.create_table(ident, schema, properties=TABLE_PROPERTIES)
    except TableAlreadyExistsError:  # another gateway of the cluster made it meanwhile
        return catalog.load_table(ident)


def committed_offsets(table) -> dict[int, int]:
    """{queue id: next offset} recorded by the table's current snapshot ({} for a new table)."""
    snap = table.current_snapshot()
    if snap is None or snap.summary is None:
        return {}
    text = snap.summary.additional_properties.get(NEXT_OFFSETS)
    return {int(q): int(o) for q, o in json.loads(text).items()} if text else {}


def append(table, data, next_offsets: dict[int, int], covered: dict[int, tuple[int, int]]) -> None:
    """One snapshot: the Arrow table `data` plus the offsets it brings the table to (atomic: a crash
    before the catalog commit leaves the previous snapshot and its offsets current). `next_offsets`
    may name only this writer's queues (a cluster: the ones this gateway leads); the others keep the
    table's. A commit another gateway won is tried again on the new snapshot while that one did not
    move this writer's queues (else CommitFailedException: the caller reads again from the table)."""
    for attempt in range(COMMIT_ATTEMPTS):
        merged = {**committed_offsets(table), **next_offsets}
        try:
            table.append(data, snapshot_properties={
                NEXT_OFFSETS: json.dumps({str(q): o for q, o in sorted(merged.items())}),
                COVERED: json.dumps({str(q): list(r) for q, r in sorted(covered.items())}),
            })
            return
        except CommitFailedException:
            table.refresh()
            now = committed_offsets(table)
            if attempt + 1 == COMMIT_ATTEMPTS or any(now.get(q, start) != start for q, (start, _) in covered.items()):
                raise
