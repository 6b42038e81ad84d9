"""The table topics service: one `TableWriter` per topic whose `iceberg.mode` is not `disabled`,
started, restarted (its settings changed) and stopped as topic configs change; it also holds what
the REST catalog facade (tables.rest) serves: table name -> current metadata location.
pyiceberg is imported only once a table topic or an existing catalog needs it."""
from __future__ import annotations

import logging
import os

import trio

from semantics.table_configs import MODE, settings
from tables.names import table_name

log = logging.getLogger("rocketgate.tables")
RECONCILE_INTERVAL = 1.0  # seconds between looks at the topic configs
CATALOG_RETRY_S = 30.0  # between attempts to open a catalog that failed to open
COMMIT_THREADS = 2  # worker threads converting and committing at once (all table topics)


class TablesService:
    def __init__(self, store, data_dir: str, registry=None, object_store=None, vend_credentials: bool = False,
                 owns=None, readable_end=None) -> None:
        self.store = store
        # which queues this gateway converts into a shared (bucket) catalog: a cluster's the ones it leads;
        # into its own catalog it converts every queue it holds. Up to where: the high watermark of a
        # replicated queue (gateway.cluster.ownership / semantics.replication)
        self.owns = owns or (lambda topic, queue_id: True)
        self.readable_end = readable_end or (lambda topic, queue_id, log_end: log_end)
        self.data_dir = data_dir
        self.registry = registry  # semantics.schema_registry.Registry (the schema modes), or None
        self.object_store = object_store  # the tier's (store.objstore): the warehouse is in its bucket
        self.vend_credentials = vend_credentials
        self.warehouse = None  # tables.warehouse.Warehouse, once the catalog is open
        self.catalog = None
        self.locations: dict[str, str] = {}  # Iceberg table name -> metadata location
        self.writers: dict[str, tuple] = {}  # topic -> (settings, cancel scope, TableWriter)
        self.limiter = trio.CapacityLimiter(COMMIT_THREADS)
        self._open_after = 0.0  # trio.current_time() before which a failed catalog is not tried again

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        # a catalog in the bucket is opened once a table topic exists (pyiceberg is not loaded before)
        if self.object_store is None and os.path.exists(os.path.join(self.data_dir, "tables", "catalog.db")):
            await self._try_open_catalog()
        task_status.started()
        async with trio.open_nursery() as nursery:
            while True:
                await self._reconcile(nursery)
                await trio.sleep(RECONCILE_INTERVAL)

    def table_topics(self) -> dict[str, dict]:
        topics = self.store.topics
        out = {}
        for name in topics.names():
            cfg = topics.get(name)
            attrs = cfg.attributes if cfg is not None else None
            if attrs and attrs.get(MODE, "disabled") != "disabled":
                out[name] = attrs
        return out

    async def _try_open_catalog(self) -> bool:
        """Open the catalog; a failure is logged and tried again after CATALOG_RETRY_S (the log and
        the protocols go on without tables meanwhile)."""
        if trio.current_time() < self._open_after:
            return False
        try:
            await self._open_catalog()
            return True
        except Exception as exc:  # noqa: BLE001 - a damaged catalog.db, a full disk, ...
            self._open_after = trio.current_time() + CATALOG_RETRY_S
            log.error("tables: the catalog in %s cannot be opened: %s (tried again in %.0f s)",
                      self.data_dir, exc, CATALOG_RETRY_S)
            return False

    async def _open_catalog(self) -> None:
        writing = {table_name(t) for t in self.table_topics()}

        def open_and_list():  # in a thread: importing pyiceberg takes a while too
            from pyiceberg.exceptions import NoSuchTableError
            from tables.catalog import DLQ_SUFFIX, NAMESPACE, open_catalog
            import tables.decode  # noqa: F401 - imported here, off the event loop (with pyiceberg, pyarrow)
            import tables.layout  # noqa: F401
            import tables.writer  # noqa: F401
            from tables.warehouse import local_warehouse, s3_warehouse
            from store.objstore.directory import DirectoryObjectStore
            from tables.warehouse import directory_warehouse
            if self.object_store is None:
                self.warehouse = local_warehouse(self.data_dir)
            elif isinstance(self.object_store, DirectoryObjectStore):  # the shards' one catalog
                self.warehouse = directory_warehouse(self.object_store.root)
            else:
                self.warehouse = s3_warehouse(self.object_store, self.vend_credentials)
            catalog = open_catalog(self.data_dir, self.warehouse, self.object_store)
            if self.shared:
                return catalog  # served straight from the bucket (location, names)
            for ident in catalog.list_tables(NAMESPACE):
                if ident[-1].removesuffix(DLQ_SUFFIX) not in writing:  # a writer's tables: served once it checked them
                    try:
                        self.locations[ident[-1]] = catalog.load_table(ident).metadata_location
                    except NoSuchTableError:  # its metadata was unreadable and nothing older (tables.pointer_repair)
                        pass
            return catalog
        self.catalog = await trio.to_thread.run_sync(open_and_list)

    async def _reconcile(self, nursery) -> None:
        wanted = {name: settings(attrs) for name, attrs in self.table_topics().items()}
        for topic, (have, scope, _) in list(self.writers.items()):
            if wanted.get(topic) != have:
                scope.cancel()
                del self.writers[topic]
                log.info("table topic %s: writer stopped (%s)", topic,
                         "settings changed" if topic in wanted else "no longer a table topic")
        if not wanted or all(t in self.writers for t in wanted):
            return
        if self.catalog is None and not await self._try_open_catalog():
            return
        for topic, have in wanted.items():
            if topic not in self.writers:
                await nursery.start(self._writer, topic, have)

    async def _writer(self, topic: str, have: tuple, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        from tables.writer import TableWriter
        from tables.schemas import decoder_for
        attrs = (self.store.topics.get(topic).attributes or {}) if self.store.topics.get(topic) else {}
        writer = TableWriter(self.store, topic, attrs, self.catalog, self.locations, self.limiter,
                             decoder_for(have[0], topic, self.registry), owns=self.owns if self.shared else None,
                             readable_end=self.readable_end, shared=self.shared)
        with trio.CancelScope() as scope:
            self.writers[topic] = (have, scope, writer)
            task_status.started()
            log.info("table topic %s: writer started (mode %s, commit every %d ms)", topic, have[0], have[1])
            try:
                await writer.run()
            finally:
                if self.store.topics.get(topic) is None:  # the topic was deleted: so is its table
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(self._drop, topic)

    def _drop(self, topic: str) -> None:
        """Purge the tables of a deleted topic (its table and DLQ table, metadata and data files), as
        Redpanda does by default: a topic created again with the name starts a new table."""
        from tables.catalog import DLQ_SUFFIX, NAMESPACE, table_name
        for name in (table_name(topic), table_name(topic) + DLQ_SUFFIX):
            self.locations.pop(name, None)
            try:
                self.catalog.purge_table((NAMESPACE, name))
                log.info("table topic %s deleted: table %s.%s purged", topic, NAMESPACE, name)
            except Exception as exc:  # NoSuchTableError (no DLQ table), a file already gone
                if "not exist" not in str(exc).lower():
                    log.warning("table topic %s deleted: purging table %s failed: %s", topic, name, exc)

    @property
    def shared(self) -> bool:
        """The catalog is in the tier's bucket, one for every gateway on it, or in the directory the
        shards of --shards N share (tables.bucket_catalog on store.objstore.directory)."""
        return self.object_store is not None

    async def location(self, name: str) -> str | None:
        """The current metadata location of table `name` (None: no such table, or not served yet)."""
        if not self.shared:
            return self.locations.get(name)
        if self.catalog is None:
            return None
        return await trio.to_thread.run_sync(self.catalog.metadata_location, name)

    async def table_names(self) -> list[str]:
        if not self.shared:
            return sorted(self.locations)
        if self.catalog is None:
            return []
        from tables.names import NAMESPACE
        return [ident[-1] for ident in await trio.to_thread.run_sync(self.catalog.list_tables, NAMESPACE)]

    def reader_config(self) -> dict:
        """The `config` /iceberg answers with each table: how readers reach the warehouse's files."""
        return dict(self.warehouse.readers) if self.warehouse is not None else {}

    def read_metadata(self, location: str) -> dict:
        """A table metadata file's JSON (file:// or s3://), read through the catalog's FileIO (a thread)."""
        import json
        with self.catalog._load_file_io(location=location).new_input(location).open() as f:
            return json.loads(f.read())

    def status(self) -> dict:
        """Per table topic: mode and the writer's counters (the ops API and metrics)."""
        return {topic: {"mode": have[0], **vars(w.stats)} for topic, (have, _, w) in self.writers.items()}
