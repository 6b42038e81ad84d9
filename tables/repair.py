"""Damaged data files (docs/tables.md, "Failure handling"): when a writer starts, every data file its
table's current snapshot references is checked (present, the size the manifest records, Parquet magic
at both ends, a footer that parses and, for files in the data dir, every page read back with its
CRC checked: tables.page_checksums). A damaged one is logged and replaced in one overwrite snapshot
(so a crash leaves either the damaged file or its replacement, never both or neither): its rows are
converted again from the log — the offsets the snapshot that added it covered, kept to the file's
partition — when the log still has them; what the log no longer has is counted as lost. The
snapshot keeps the table's offsets, so the writer resumes where it was.
"""
from __future__ import annotations

import json
import logging

import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import _dataframe_to_data_files

from tables import catalog as cat

log = logging.getLogger("rocketgate.tables")


def file_problem(io, path: str, size: int) -> str | None:
    """Why the data file at `path` (file:// or s3://, read through the table's FileIO `io`) is not the
    `size`-byte Parquet file the manifest names."""
    try:
        source = io.new_input(path)
        if not source.exists():
            return "missing"
        actual = len(source)
        if actual != size:
            return f"{actual} bytes, the manifest records {size}"
        with source.open() as f:
            head = f.read(4)
            f.seek(actual - 4)
            tail = f.read(4)
            if head != b"PAR1" or tail != b"PAR1":
                return "no Parquet magic"
            f.seek(0)
            pq.read_metadata(f)
            if path.startswith("file://"):  # every page read back, its CRC checked (tables.page_checksums)
                f.seek(0)
                pages = pq.ParquetFile(f, page_checksum_verification=True)
                for group in range(pages.num_row_groups):
                    pages.read_row_group(group)
    except FileNotFoundError:
        return "missing"
    except Exception as exc:  # noqa: BLE001 - OSError, ArrowInvalid: a footer that does not parse
        return f"unreadable: {exc}"
    return None


def damaged(table) -> list[tuple]:
    """[(data file, {queue: (first, end)} its snapshot covered, why)] of the current snapshot."""
    snap = table.current_snapshot()
    if snap is None:
        return []
    out = []
    for manifest in snap.manifests(table.io):
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            entry.data_file.spec_id = manifest.partition_spec_id  # not set on entries read this way
            why = file_problem(table.io, entry.data_file.file_path, entry.data_file.file_size_in_bytes)
            if why is not None:
                added = table.snapshot_by_id(entry.snapshot_id)
                text = added.summary.additional_properties.get(cat.COVERED) if added and added.summary else None
                covered = {int(q): tuple(r) for q, r in json.loads(text).items()} if text else {}
                out.append((entry.data_file, covered, why))
    return out


def replace(table, files, data) -> int:
    """One overwrite snapshot: `files` (damaged) out, the files of the Arrow table `data` (rows from the
    log) whose partition is one of theirs in; the offsets of the current snapshot kept. Rows written."""
    summary = table.current_snapshot().summary.additional_properties
    props = {cat.NEXT_OFFSETS: summary.get(cat.NEXT_OFFSETS, "{}"), cat.COVERED: "{}",
             "rocketgate.replaced-damaged-files": json.dumps([f.file_path for f in files])}
    current_spec = table.spec().spec_id  # new files are written with it (and carry no spec id yet)
    wanted = {f.partition for f in files if f.spec_id == current_spec}
    rows = 0
    with table.transaction() as tx:
        with tx.update_snapshot(snapshot_properties=props).overwrite() as overwrite:
            for f in files:
                overwrite.delete_data_file(f)
            if data is not None and data.num_rows:
                for new in _dataframe_to_data_files(table_metadata=tx.table_metadata, df=data, io=table.io,
                                                    write_uuid=overwrite.commit_uuid):
                    if new.partition in wanted:  # the others' rows are in intact files
                        overwrite.append_data_file(new)
                        rows += new.record_count
    return rows
