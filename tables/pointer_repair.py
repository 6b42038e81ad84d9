"""A local catalog pointing at a metadata file that is torn or gone (docs/tables.md, "Failure
handling"): files are fsynced before the catalog points at them (tables.durable_io), but a table made
before that, a disk fault or a hand that deleted a file can still leave one. The catalog row is
moved back to the newest older metadata file of the table that parses (its previous location
first); the snapshots after it are lost to the table, and since the writer resumes from that
metadata's `rocketgate.next-offsets`, their rows are converted again from the log: nothing missing,
nothing twice. With no readable older file the row is removed and the table made again from the log.
"""
from __future__ import annotations

import logging
import os
import re

from pyiceberg.catalog import Catalog, MetastoreCatalog
from pyiceberg.catalog.sql import IcebergTables
from pyiceberg.io import load_file_io
from pyiceberg.serializers import FromInputFile
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from tables.durable_io import local_path

log = logging.getLogger("rocketgate.tables")
METADATA_FILE = re.compile(r"^(\d+)-.*\.metadata\.json$")


def _readable(catalog, location: str) -> bool:
    try:
        FromInputFile.table_metadata(load_file_io(catalog.properties, location).new_input(location))
        return True
    except Exception:  # noqa: BLE001 - missing, torn JSON, not table metadata
        return False


def _older(location: str) -> list[str]:
    """The table's metadata files numbered below `location`'s, newest first (file:// locations)."""
    path = local_path(location)
    if path is None:
        return []
    version = MetastoreCatalog._parse_metadata_version(location)
    folder = os.path.dirname(path)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    found = [(int(m.group(1)), n) for n in names if (m := METADATA_FILE.match(n)) and int(m.group(1)) < version]
    return [f"file://{os.path.join(folder, n)}" for _, n in sorted(found, reverse=True)]


def repair(catalog, identifier) -> bool:
    """Re-point the SqlCatalog `catalog`'s row of `identifier` when its metadata file is unreadable;
    False when there is nothing to repair (no row, or a file that reads)."""
    namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
    name = Catalog.table_name_from(identifier)
    where = (IcebergTables.catalog_name == catalog.name, IcebergTables.table_namespace == namespace,
             IcebergTables.table_name == name)
    with Session(catalog.engine) as session:
        row = session.execute(select(IcebergTables.metadata_location, IcebergTables.previous_metadata_location)
                              .where(*where)).first()
    if row is None or _readable(catalog, row[0]):
        return False
    current, previous = row
    candidates = ([previous] if previous else []) + [c for c in _older(current) if c != previous]
    back = next((c for c in candidates if _readable(catalog, c)), None)
    with Session(catalog.engine) as session:
        if back is None:
            session.execute(delete(IcebergTables).where(*where, IcebergTables.metadata_location == current))
        else:
            session.execute(update(IcebergTables).where(*where, IcebergTables.metadata_location == current)
                            .values(metadata_location=back, previous_metadata_location=None))
        session.commit()
    log.error("table %s.%s: its metadata file %s is torn or missing; %s", namespace, name, current,
              f"back to {back} (later rows are converted again from the log)" if back else
              "no older metadata file reads: the table is made again from the log")
    return True
