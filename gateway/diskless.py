"""Diskless topics in a gateway (docs/diskless.md): the App's index and WAL writer on the --tier-url
store, the topic table kept in step with the bucket's diskless topics, and creation."""
from __future__ import annotations

import dataclasses
import logging

import trio

import gateway.diskless_topics as diskless_topics
from semantics import retention
from semantics.diskless import ATTRIBUTE, DisklessWriter, is_diskless
from store.diskless import topic_records
from store.diskless.index import DisklessIndex
from store.diskless import offsets as group_offsets
from store.diskless.janitor import Janitor
from store.diskless.janitor_lease import JanitorLease
from store.diskless import txn_staging
from store.objstore.api import ObjectStore, ObjectStoreError

log = logging.getLogger("rocketgate")
LEASE_MIN_TTL_S = 5.0  # a janitor silent this long (and 3 of its intervals) is replaced
ACTIVE_CHECK_S = 0.25  # how often an idle service looks at the topic table for a diskless topic


@dataclasses.dataclass(frozen=True)
class Diskless:
    index: DisklessIndex
    writer: DisklessWriter
    # (topic, queue) whose idempotent producers' state was read from the index (gateway.kafka.diskless)
    producers_seeded: set = dataclasses.field(default_factory=set)
    # (producer id, topic, queue) -> [(epoch, first seq, last seq, slot)] of idempotent batches still
    # in WAL buffers: a pipelined connection's next batch follows them (gateway.kafka.diskless)
    inflight: dict = dataclasses.field(default_factory=dict)
    # topic -> the incarnation (store.diskless.layout.home) this gateway's topic table has (gateway.diskless_topics)
    topic_homes: dict = dataclasses.field(default_factory=dict)
    # set for good once the bucket or this gateway's topic table has a diskless topic: until then the
    # services that poll the bucket's diskless state (the POP lease, the janitor) ask it nothing
    active: trio.Event = dataclasses.field(default_factory=trio.Event)


def open_diskless(config, object_store: ObjectStore | None) -> Diskless | None:
    if object_store is None:
        return None
    index = DisklessIndex(object_store, config.diskless_cache_bytes)
    return Diskless(index, DisklessWriter(index, config.diskless_wal_max_bytes, config.diskless_wal_max_ms))


def adopt_topics(st, diskless: Diskless) -> None:
    """(blocking, at start) Create locally every diskless topic of the bucket this data dir lacks: a
    wiped data dir, or a gateway new to the bucket, serves them with no copy from a peer."""
    try:
        found = diskless.index.topics()
        if found or any(True for _ in diskless.index.store.list("diskless/", limit=1)):
            diskless.active.set()  # (deleted topics' objects too: the janitor collects them)
    except ObjectStoreError as exc:
        log.warning("diskless topics not listed (object store: %s); known ones only", exc)
        diskless.active.set()  # not known to be idle
        return
    _adopt(st, found)


def _adopt(st, found: dict[str, int]) -> list[str]:
    made = []
    for name, partitions in found.items():
        if st.topics.get(name) is None:
            st.topics.create(name, read_queues=partitions, write_queues=partitions, attributes={ATTRIBUTE: "true"})
            made.append(name)
    return made


def has_diskless_topic(topics) -> bool:
    return any(is_diskless(topics.get(name)) for name in topics.names())


async def until_active(app) -> None:
    """Return once the bucket's diskless state is in use here (`Diskless.active`): set by a creation,
    an adoption or the topic watch, or found here in the topic table (a cluster member's topic)."""
    active = app.diskless.active
    while not active.is_set():
        if has_diskless_topic(app.store.topics):
            active.set()
            break
        with trio.move_on_after(ACTIVE_CHECK_S):
            await active.wait()


def restore_offsets(offsets, diskless: Diskless) -> None:
    """(blocking, at start) Group offsets of diskless queues that the offset table lacks, from the
    bucket: a wiped data dir, or a gateway new to the bucket, resumes every group where it was."""
    try:
        found = list(group_offsets.load_all(diskless.index.store))
    except ObjectStoreError as exc:
        log.warning("diskless group offsets not read (object store: %s)", exc)
        return
    for group, topic, queue, offset, epoch, metadata in found:
        if offsets.fetch(group, topic, queue) is None:
            offsets.commit(group, topic, queue, offset, metadata, epoch)


async def save_offsets(app, group: str, committed: list) -> bool:
    """Write the diskless partitions among `committed` (topic, queue, offset, epoch, metadata) to the
    bucket; False when the store failed (the commit is answered with a retriable error)."""
    mine = [c for c in committed if app.diskless is not None and is_diskless(app.store.topics.get(c[0]))]
    if not mine:
        return True
    try:
        await trio.to_thread.run_sync(group_offsets.save, app.diskless.index.store, group, mine)
    except ObjectStoreError as exc:
        log.warning("diskless group offsets of %s not saved (object store: %s)", group, exc)
        return False
    return True


class JanitorService:
    """Background service: every `--diskless-janitor-interval-ms` one `Janitor` pass (retention,
    compaction, garbage collection; store/diskless/janitor.py) off the loop, with the retention
    limits of this gateway's topic configs, on the one gateway of the bucket that holds the janitor
    lease (store/diskless/janitor_lease.py); another takes over once it stops renewing it."""

    def __init__(self, app) -> None:
        self.app = app
        self.janitor = Janitor(app.diskless.index, app.config.diskless_gc_grace_ms / 1000)
        interval_s = app.config.diskless_janitor_interval_ms / 1000
        self.lease = JanitorLease(app.diskless.index.store, max(3 * interval_s, LEASE_MIN_TTL_S),
                                  owner=str(app.config.node_id))

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await until_active(self.app)  # no lease, no pass while nothing diskless exists
        while True:
            await trio.sleep(self.app.config.diskless_janitor_interval_ms / 1000)
            limits = {}
            for name in self.app.store.topics.names():
                cfg = self.app.store.topics.get(name)
                found = retention.limits(cfg.attributes) if is_diskless(cfg) else None
                if found is not None:
                    limits[name] = found
            try:
                await trio.to_thread.run_sync(self._pass, limits, self.app.clock.now_ms())
            except ObjectStoreError as exc:
                log.warning("diskless janitor pass stopped (object store: %s); next one later", exc)

    def _pass(self, limits: dict, now_ms: int) -> None:
        if not self.lease.hold():
            return
        before = dataclasses.asdict(self.janitor.stats)
        swept = txn_staging.sweep(self.app.diskless.index.store, now_ms)  # abandoned transactions' batches
        if swept:
            log.info("diskless janitor: %d staged transactional batches of abandoned transactions deleted", swept)
        after = dataclasses.asdict(self.janitor.run_once(limits, now_ms))
        if after != before:
            log.info("diskless janitor (term %d): %s", self.lease.term,
                     ", ".join(f"{k} {after[k] - before[k]}" for k in after if after[k] != before[k]))


class TopicWatch:
    """Background service: list the bucket's diskless topics (off the loop) when they may have
    changed and follow what changed through other gateways (created, deleted, created again, grown).
    In an etcd cluster a topic change reaches every member through the cluster view's watch (the
    record is written to the bucket before the topic goes to etcd): the watch lists when the view
    reports one, with no request in between. Without a cluster it HEADs the marker every gateway
    rewrites after a record change (`topic_records.changed_mark`) every `interval_s` and lists when
    its etag moved. Both also list every FULL_LOOK_S: a gateway that died between a record change
    and the marker, or one of a version that writes no marker. Before, it listed every 2 s."""

    FULL_LOOK_S = 60.0

    def __init__(self, st, diskless: Diskless, interval_s: float = 2.0, view=None) -> None:
        self.st, self.diskless, self.interval_s, self.view = st, diskless, interval_s, view
        self.seen: dict = {}  # topic -> (record etag, home) as last listed
        self.mark: object = ()  # the marker's etag at the last look (() before the first)
        self._nudged = trio.Event()

    def _nudge(self, _name, _record) -> None:
        self._nudged.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        if self.view is not None:
            self.view.on_topic(self._nudge)
        task_status.started()
        listed_at = float("-inf")
        while True:
            try:  # created, deleted, created again or grown through another gateway (gateway.diskless_topics)
                if not await self._may_have_changed(trio.current_time() - listed_at >= self.FULL_LOOK_S):
                    continue
                listed_at = trio.current_time()
                changed, gone = await trio.to_thread.run_sync(topic_records.look, self.diskless.index, self.seen)
            except ObjectStoreError:
                continue  # the store is down: produces say so; the watch tries again
            done = diskless_topics.follow(self.st, self.diskless, changed, gone)
            if done:
                log.info("diskless topics from the bucket: %s", ", ".join(done))

    async def _may_have_changed(self, due: bool) -> bool:
        """Wait for the next look; whether the records are to be listed then."""
        if self.view is not None:
            with trio.move_on_after(self.interval_s if due else self.FULL_LOOK_S):
                await self._nudged.wait()
            self._nudged = trio.Event()
            return True
        await trio.sleep(self.interval_s)
        mark = await trio.to_thread.run_sync(topic_records.changed_mark, self.diskless.index)
        moved, self.mark = mark != self.mark, mark
        return moved or due


def creation_problem(app, configs: dict) -> str | None:
    """Why a topic with these configs cannot be created diskless, or None."""
    value = configs.get(ATTRIBUTE, "false")
    if value is None or str(value).strip().lower() not in ("true", "false"):
        return f"Invalid value {value} for configuration {ATTRIBUTE}: Expected value to be either true or false"
    if str(value).strip().lower() == "true" and app.diskless is None:
        return "Diskless topics need an object store: start the gateway with --tier-url"
    return None


async def publish(app, name: str, configs: dict, partitions: int) -> str | None:
    """Record a new diskless topic in the bucket before it is created here; why it failed, or None."""
    if str(configs.get(ATTRIBUTE, "false")).strip().lower() != "true":
        return None
    try:
        await trio.to_thread.run_sync(app.diskless.index.publish_topic, name, partitions)
        await trio.to_thread.run_sync(topic_records.mark_changed, app.diskless.index)
    except ObjectStoreError as exc:
        return f"diskless topic not recorded in the object store: {exc}"
    app.diskless.topic_homes[name] = app.diskless.index.home(name)  # (known since the publish: no request)
    app.diskless.active.set()
    return None
