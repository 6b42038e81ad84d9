"""Local table files are fsynced (tables/durable_io.py): pyiceberg writes data, manifest, manifest
list and metadata files without syncing, so a power loss could leave the catalog pointing at a file
that never reached the disk. In-process: a table made and committed through the gateway's catalog;
every file under its warehouse, and each directory holding one, was fsynced."""
from __future__ import annotations

import os

import pyarrow as pa


def test_every_file_of_a_commit_is_fsynced(tmp_path, monkeypatch):
    from tables.catalog import append, load_or_create, open_catalog
    from tables.layout import table_schema
    synced = set()
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.add(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)
    monkeypatch.setattr(os, "fsync", spy)
    table = load_or_create(open_catalog(str(tmp_path)), "clicks", table_schema())
    schema = table.schema().as_arrow()
    row = {f.name: None for f in schema}
    row.update(partition=0, offset=0, value=b"v")
    append(table, pa.Table.from_pylist([row], schema=schema), {0: 1}, {0: (0, 1)})

    written = set()
    for folder, _, names in os.walk(tmp_path / "tables" / "warehouse"):
        written.update(os.path.join(folder, n) for n in names)
    kinds = {os.path.splitext(p)[1] for p in written}
    assert {".parquet", ".avro", ".json"} <= kinds  # data, manifests and manifest list, metadata
    assert written <= synced, sorted(written - synced)
    assert {os.path.dirname(p) for p in written} <= synced
