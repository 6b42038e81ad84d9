"""The table topics' catalog in the object-storage tier's bucket, shared by every gateway on it
(docs/tables.md, "Clusters"): a table's current metadata location is the newest of its numbered
pointer objects `catalog/<namespace>/<table>/<seq>` (under --tables-url) (12 digits). A commit writes its metadata
file, then pointer seq+1 with if_absent (S3 If-None-Match: *): of two gateways committing on the same
snapshot only one gets the slot, the other gets CommitFailedException and, since the table's
`rocketgate.next-offsets` moved, converts again from there. No database and no consensus of our own:
the bucket's conditional write is the compare-and-swap. Old pointers are deleted (the newest KEEP
stay). Every call does I/O: callers run it in worker threads.
"""
from __future__ import annotations

import logging

from pyiceberg.catalog import Catalog, MetastoreCatalog, PropertiesUpdateSummary
from pyiceberg.exceptions import (CommitFailedException, NamespaceAlreadyExistsError, NoSuchNamespaceError,
                                  NoSuchTableError, TableAlreadyExistsError)
from pyiceberg.io import load_file_io
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.typedef import EMPTY_DICT

from store.objstore.api import PreconditionFailed
from tables import faults
from tables.names import NAMESPACE

log = logging.getLogger("rocketgate.tables")
POINTERS = "catalog"
KEEP = 32  # pointer objects kept per table
SEQ_DIGITS = 12


class BucketCatalog(MetastoreCatalog):
    """One namespace (`rocketgate`); pointers on `objects` (a store.objstore ObjectStore); the
    warehouse and FileIO properties as any pyiceberg catalog takes them."""

    def __init__(self, name: str, objects, **properties: str):
        super().__init__(name, **properties)
        self.objects = objects

    # --- pointers ---
    def _prefix(self, table: str) -> str:
        return f"{POINTERS}/{NAMESPACE}/{table}/"

    def _pointers(self, table: str) -> list[str]:
        return sorted(o.key for o in self.objects.list(self._prefix(table)))

    def _current(self, table: str) -> tuple[int, str] | None:
        """(seq, metadata location) of the table's newest pointer, None when there is none."""
        keys = self._pointers(table)
        if not keys:
            return None
        return int(keys[-1].rsplit("/", 1)[1]), self.objects.get(keys[-1]).decode()

    def _swap(self, table: str, seq: int, location: str) -> None:
        """Point the table at `location` as pointer `seq`, unless another writer took that slot."""
        try:
            self.objects.put(f"{self._prefix(table)}{seq:0{SEQ_DIGITS}d}", location.encode(), if_absent=True)
        except PreconditionFailed:
            raise CommitFailedException(f"{NAMESPACE}.{table} was committed by another gateway (pointer {seq})") \
                from None
        for old in self._pointers(table)[:-KEEP]:
            self.objects.delete(old)

    def _table(self, name: str, location: str) -> Table:
        io = load_file_io(properties=self.properties, location=location)
        metadata = FromInputFile.table_metadata(io.new_input(location))
        return Table(identifier=(NAMESPACE, name), metadata=metadata, metadata_location=location,
                     io=self._load_file_io(metadata.properties, location), catalog=self)

    def _write_metadata(self, metadata, io, metadata_path) -> None:  # type: ignore[override]
        MetastoreCatalog._write_metadata(metadata, io, metadata_path)
        if faults.rules():
            faults.metadata_written()

    @staticmethod
    def _name(identifier) -> str:
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        if namespace != NAMESPACE:
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        return Catalog.table_name_from(identifier)

    # --- tables ---
    def create_table(self, identifier, schema, location=None, partition_spec=UNPARTITIONED_PARTITION_SPEC,
                     sort_order=UNSORTED_SORT_ORDER, properties=EMPTY_DICT) -> Table:
        name = self._name(identifier)
        if self._current(name) is not None:
            raise TableAlreadyExistsError(f"Table {NAMESPACE}.{name} already exists")
        staged = self._create_staged_table(identifier, schema, location, partition_spec, sort_order, properties)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        try:
            self._swap(name, 0, staged.metadata_location)
        except CommitFailedException:
            raise TableAlreadyExistsError(f"Table {NAMESPACE}.{name} already exists") from None
        return self.load_table(identifier)

    def load_table(self, identifier) -> Table:
        name = self._name(identifier)
        current = self._current(name)
        if current is None:
            raise NoSuchTableError(f"Table does not exist: {NAMESPACE}.{name}")
        return self._table(name, current[1])

    def metadata_location(self, name: str) -> str | None:
        current = self._current(name)
        return current[1] if current else None

    def commit_table(self, table: Table, requirements, updates) -> CommitTableResponse:
        name = self._name(table.name())
        current = self._current(name)
        current_table = self._table(name, current[1]) if current else None
        staged = self._update_and_stage_table(current_table, table.name(), requirements, updates)
        if current_table and staged.metadata == current_table.metadata:
            return CommitTableResponse(metadata=current_table.metadata,
                                       metadata_location=current_table.metadata_location)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        self._swap(name, current[0] + 1 if current else 0, staged.metadata_location)
        return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)

    def drop_table(self, identifier) -> None:
        name = self._name(identifier)
        keys = self._pointers(name)
        if not keys:
            raise NoSuchTableError(f"Table does not exist: {NAMESPACE}.{name}")
        for key in keys:
            self.objects.delete(key)

    def list_tables(self, namespace) -> list:
        if Catalog.identifier_to_tuple(namespace) != (NAMESPACE,):
            return []
        prefix = f"{POINTERS}/{NAMESPACE}/"
        names = {o.key[len(prefix):].split("/", 1)[0] for o in self.objects.list(prefix)}
        return [(NAMESPACE, n) for n in sorted(names)]

    # --- the one namespace ---
    def create_namespace(self, namespace, properties=EMPTY_DICT) -> None:
        if Catalog.identifier_to_tuple(namespace) != (NAMESPACE,):
            raise ValueError(f"only the namespace {NAMESPACE} exists here")
        raise NamespaceAlreadyExistsError(NAMESPACE)

    def create_namespace_if_not_exists(self, namespace, properties=EMPTY_DICT) -> None:
        if Catalog.identifier_to_tuple(namespace) != (NAMESPACE,):
            raise ValueError(f"only the namespace {NAMESPACE} exists here")

    def list_namespaces(self, namespace=()) -> list:
        return [] if namespace else [(NAMESPACE,)]

    def load_namespace_properties(self, namespace) -> dict:
        if Catalog.identifier_to_tuple(namespace) != (NAMESPACE,):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        return {}

    def namespace_exists(self, namespace) -> bool:
        return Catalog.identifier_to_tuple(namespace) == (NAMESPACE,)

    def drop_namespace(self, namespace) -> None:
        raise NotImplementedError("the rocketgate namespace is not dropped")

    def update_namespace_properties(self, namespace, removals=None, updates=EMPTY_DICT) -> PropertiesUpdateSummary:
        raise NotImplementedError("the rocketgate namespace has no properties")

    def register_table(self, identifier, metadata_location: str, overwrite: bool = False) -> Table:
        raise NotImplementedError("tables are made by the gateway for table topics")

    def rename_table(self, from_identifier, to_identifier) -> Table:
        raise NotImplementedError("a table is named after its topic")

    def list_views(self, namespace) -> list:
        return []

    def view_exists(self, identifier) -> bool:
        return False

    def drop_view(self, identifier) -> None:
        raise NotImplementedError("no views")

    def load_view(self, identifier):
        raise NotImplementedError("no views")

    def create_view(self, *args, **kwargs):
        raise NotImplementedError("no views")

    def register_view(self, *args, **kwargs):
        raise NotImplementedError("no views")
