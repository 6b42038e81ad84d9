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


def test_damage_inside_a_page_is_found(tmp_path):
    """A byte changed inside a data page (size, magic and footer intact) fails the page's CRC, which
    every data file the gateway writes carries (tables.page_checksums); tables.repair reports it."""
    import pyarrow.parquet as pq
    from tables.catalog import append, open_catalog
    from tables.layout import table_schema
    from tables.repair import file_problem
    # uncompressed: a changed byte then decodes silently to another value unless the CRC is checked
    table = open_catalog(str(tmp_path)).create_table(("rocketgate", "clicks"), table_schema(),
                                                     properties={"write.parquet.compression-codec": "uncompressed"})
    schema = table.schema().as_arrow()
    rows = [{**{f.name: None for f in schema}, "partition": 0, "offset": i, "value": b"value-%06d" % i}
            for i in range(200)]
    append(table, pa.Table.from_pylist(rows, schema=schema), {0: 200}, {0: (0, 200)})
    [task] = table.scan().plan_files()
    location, size = task.file.file_path, task.file.file_size_in_bytes
    assert file_problem(table.io, location, size) is None
    path = location.removeprefix("file://")
    group = pq.read_metadata(path).row_group(0)
    chunk = next(c for c in map(group.column, range(group.num_columns)) if c.path_in_schema == "value")
    where = (chunk.dictionary_page_offset + chunk.data_page_offset) // 2  # amid the dictionary page's values
    with open(path, "r+b") as f:
        f.seek(where)
        byte = f.read(1)
        f.seek(where)
        f.write(bytes([byte[0] ^ 0xFF]))
    why = file_problem(table.io, location, size)
    assert why is not None and "unreadable" in why, why
