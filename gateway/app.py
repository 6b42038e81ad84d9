"""The composition root: `build_app(config)` opens the store and builds every shared table and
service of one gateway process into one frozen, typed `App` (nothing is added to it later).
`gateway.services` runs its background services; `gateway.server` serves connections with it."""
from __future__ import annotations

import dataclasses
import functools
import os

import security
import store
from gateway.cluster.ownership import SINGLE_NODE
from gateway.config import GatewayConfig
from gateway.diskless import Diskless, adopt_topics, open_diskless, restore_offsets
from gateway.diskless_delivery import route_due_messages
from gateway import diskless_pop
from gateway.flush import AsyncFlush, GroupCommit
from gateway.grpc.state import GrpcState
from gateway.kafka.state import KafkaState
from gateway.longpoll import ArrivalHub
from gateway.ops.stats import GatewayStats
from gateway.remoting.common import PopRemotingState
from gateway.remoting.end_transaction import send_transaction_check
from gateway.remoting.replica_client import RemotingReplicaTransport, outgoing
from semantics.clock import WALL_CLOCK, WallClock
from semantics.delay import DelayScheduler
from semantics.diskless_queues import diskless_queue_view
from semantics.flow_control import SendFlowControl
from semantics.offsets import OffsetTable
from semantics.subscription_groups import SubscriptionGroups
from semantics.pop import PopEngine
from semantics.pop_carry import PopCarry
from semantics.replication import Follower, ReplicaManager
from semantics.rocketmq_clients import ClientRegistry
from semantics.schema_registry import Registry
from semantics.schema_validation import SchemaValidation
from semantics.routing import DelayLevels, ensure_system_topics
from semantics.transactions import Transactions, register_checker
from semantics.views import Views
from gateway.services import ConfigWriterService
from store.config import ConfigDir, ConfigWriter
from store.objstore.api import ObjectStore
from store.objstore.directory import DirectoryObjectStore
from tables.service import TablesService
from store.tier.tiered import open_tiered


class StartupError(Exception):
    """A problem the user can fix (port in use, bad setting): one line on stderr, exit status 2."""


@dataclasses.dataclass(frozen=True, slots=True)
class App:
    """Everything a connection handler and a background service needs."""

    config: GatewayConfig
    clock: WallClock  # wall-clock ms and sleeps of the timer-driven services
    store: store.Store
    durability: GroupCommit | AsyncFlush  # by --flush; also the flush service
    arrivals: ArrivalHub  # wakes long polls when a queue grows
    config_writer: ConfigWriterService  # off-loop writes of offsets, delay and transaction progress
    offsets: OffsetTable
    delay_levels: DelayLevels
    delay: DelayScheduler
    transactions: Transactions
    views: Views
    rocketmq_clients: ClientRegistry  # registered producers/consumers of the remoting side
    flow: SendFlowControl  # send flow control: refuses (remoting) or throttles (Kafka) when the store is slow
    pop: PopEngine  # per-message consumption (RocketMQ POP; Kafka share groups later)
    pop_remoting: PopRemotingState
    replication: ReplicaManager  # roles of replicated queues, ISR, high watermarks (docs/internals.md)
    grpc: GrpcState = dataclasses.field(default_factory=GrpcState)  # gRPC clients' settings and telemetry streams
    security: security.Security | None = None  # users, keys, ACLs (docs/security.md); None: --authorizer none
    # what SASL listeners check passwords against: `security`, or without an authorizer the user store alone
    authentication: security.Authentication | None = None
    # Confluent's schema registry over `_schemas` (semantics.schema_registry); None without --schema-registry-port
    schema_registry: Registry | None = None
    # which queues this gateway serves: all of them alone, its own in a cluster (docs/cluster.md)
    ownership: object = SINGLE_NODE
    # the tier's object store (store.objstore, docs/tiered-storage.md); None without --tier-url
    object_store: ObjectStore | None = None
    # diskless topics' index and WAL writer on `object_store` (docs/diskless.md); None without --tier-url
    diskless: Diskless | None = None
    # request counts and latencies, bytes, connections, readiness (gateway.ops; docs/metrics.md)
    stats: GatewayStats = dataclasses.field(default_factory=GatewayStats)
    # Kafka's group coordinator and producer ids; it keeps the App, so it is made from it.
    kafka: KafkaState = dataclasses.field(init=False)
    # topics' schema validation rules and refusal counts (semantics.schema_validation), on `schema_registry`
    schema_validation: SchemaValidation = dataclasses.field(init=False)
    # Iceberg table topics: their writers and what the REST catalog at /iceberg serves (docs/tables.md)
    tables: TablesService = dataclasses.field(init=False)
    # RocketMQ subscription group attributes (lite.*, priority.factor), as updateSubGroup sets them
    subscription_groups: SubscriptionGroups = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kafka", KafkaState(self))
        object.__setattr__(self, "schema_validation", SchemaValidation(self.schema_registry))
        object.__setattr__(self, "tables", TablesService(
            self.store, self.config.data_dir, self.schema_registry, tables_object_store(self.config),
            self.config.tables_vend_credentials, owns=self.ownership.owns,
            readable_end=self.replication.readable_end))
        object.__setattr__(self, "subscription_groups", SubscriptionGroups(self.store))

    @property
    def sync_flush(self) -> bool:
        return self.config.flush == "sync"

    async def durable(self, end_offset: int) -> None:
        """In sync mode wait until the CommitLog is on disk up to `end_offset`; no-op in async mode."""
        await self.durability.durable(end_offset)

    async def topics_written(self) -> None:
        """Wait until the topic table's newest change is on disk; a failed write (ENOSPC...) ends
        the wait too: the change is kept in memory and written again by the writer service."""
        topics = self.store.topics
        if topics.submission:
            await self.config_writer.written(topics.FILE, topics.submission, until_failure=True)

    async def replicated(self, topic: str, queue_id: int, end_queue_offset: int) -> None:
        """acks=all / SYNC_MASTER: wait until the queue's in-sync replicas hold every offset below
        `end_queue_offset`; no-op for a queue that is not replicated. Raises NotLeader."""
        await self.replication.wait_replicated(topic, queue_id, end_queue_offset)


def open_store(config: GatewayConfig, objects=None) -> store.Store:
    """The store, with its remote tier (store.tier) when `objects` is the tier's object store."""
    opener = store.open if objects is None else \
        functools.partial(open_tiered, objects=objects, cache_bytes=config.tier_read_cache_bytes)
    return opener(
        config.data_dir,
        store.StoreConfig(
            commitlog_file_size=config.commitlog_file_size,
            max_message_size=config.store_max_message_bytes,
            flush=config.flush,
            file_reserved_hours=config.file_reserved_hours,
            write_delay_ms=config.store_write_delay_ms, write_hold_file=config.store_write_hold_file,
            disk_max_used_space_ratio=config.disk_max_used_space_ratio / 100,
            index_slots=config.index_slots, index_entries=config.index_entries,
            # msgIds name this address: clients use it to view messages and send them back.
            store_host=(config.advertised, config.remoting_port),
        ),
        recover=False,  # _assemble registers the dispatchers the replay feeds, then recovers
    )


def build_app(config: GatewayConfig, clock: WallClock = WALL_CLOCK, ownership=SINGLE_NODE) -> App:
    """Open the store and build the App; StartupError for a bad setting or an unusable store."""
    try:
        levels = DelayLevels(config.message_delay_level, config.timer_max_delay_sec * 1000)
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    try:
        object_store = open_object_store(config)
    except ValueError as exc:
        raise StartupError(f"--tier-url: {exc}") from None
    try:
        st = open_store(config, object_store)
    except (OSError, ValueError) as exc:
        raise StartupError(f"cannot open store in {config.data_dir!r}: {exc}") from None
    try:
        return _assemble(config, clock, st, levels, ownership, object_store)
    except BaseException as exc:
        st.close()
        if isinstance(exc, (OSError, ValueError)):
            raise StartupError(str(exc)) from None
        raise


def open_object_store(config: GatewayConfig, url: str | None = None, **options) -> ObjectStore | None:
    """The --tier-* flags' S3 store (no request is made yet); boto3 is loaded only with a tier.
    `url`: another bucket/prefix on the same server (the table topics'); `options`: S3Options fields
    over the defaults (the diskless path's shorter timeouts)."""
    if config.tier_url is None:
        return None
    from store.objstore.s3 import S3ObjectStore
    return S3ObjectStore.from_url(url or config.tier_url, endpoint=config.tier_endpoint, addressing=config.tier_addressing,
                                  ca_file=config.tier_ca_file, credentials_file=config.tier_credentials_file,
                                  **options)


def tables_object_store(config: GatewayConfig) -> ObjectStore | None:
    """Where the table topics' warehouse and catalog live with a tier: --tables-url, else the tier's
    prefix + tables/ (docs/tables.md, "Warehouse")."""
    if config.tier_url is None:
        # the shards of --shards N: one catalog and warehouse in a directory they share (docs/shards.md)
        return DirectoryObjectStore(config.shared_tables) if config.shared_tables else None
    return open_object_store(config, config.tables_url or config.tier_url.rstrip("/") + "/tables/")


def _assemble(config: GatewayConfig, clock: WallClock, st: store.Store, levels: DelayLevels, ownership,
              object_store: ObjectStore | None) -> App:
    sync = config.flush == "sync"
    durability = GroupCommit(st) if sync else AsyncFlush(st, clock)
    writer = ConfigWriterService(ConfigWriter(ConfigDir(os.path.join(st.path, "config"))))
    flow = SendFlowControl(config.os_page_cache_busy_timeout_ms, config.wait_time_mills_in_send_queue,
                           writing_since=lambda: st.write_began)
    st.set_write_observer(flow.observe)
    arrivals = ArrivalHub()
    st.add_dispatcher(arrivals)
    views = Views(st)  # a dispatcher too: registered before the replay, which rebuilds view units
    st.recover()
    st.topics.use_writer(writer, sync)  # topic changes are journalled (fsynced as the flush mode says)
    ensure_system_topics(st, levels)
    # a produce waits on the diskless store: its own client, with requests bounded tighter than the tier's
    timeout = config.diskless_request_timeout_ms / 1000
    diskless = open_diskless(config, object_store and open_object_store(
        config, connect_timeout=timeout, read_timeout=timeout, max_attempts=2))
    if diskless is not None:
        adopt_topics(st, diskless)
    offsets = OffsetTable(st, durable=sync, writer=writer, clock=clock)
    if diskless is not None:
        restore_offsets(offsets, diskless)
    guard = security.from_config(config, os.path.join(st.path, "config"))
    replication = _replication(config, st, arrivals)
    registry = None if config.schema_registry_port is None else \
        Registry(st, flow, durable=durability.durable, replicated=replication.wait_replicated)
    app = App(
        config=config, clock=clock, store=st, durability=durability, arrivals=arrivals,
        config_writer=writer,
        offsets=offsets,
        delay_levels=levels,
        delay=DelayScheduler(st, levels, clock=clock, durable=durability.durable, writer=writer, flow=flow,
                             source=str(config.node_id) if config.cluster else None),
        transactions=Transactions(
            st, levels, timeout_ms=config.transaction_timeout_ms,
            check_interval_ms=config.transaction_check_interval_ms,
            check_max=config.transaction_check_max, clock=clock, writer=writer),
        views=views,
        rocketmq_clients=ClientRegistry(),
        flow=flow,
        pop=PopEngine(diskless_queue_view(st, diskless), offsets, notify=arrivals.notify, clock=clock.now_ms, writer=writer),
        pop_remoting=PopRemotingState(),
        replication=replication,
        schema_registry=registry,
        security=guard,
        authentication=security.authentication_for(config, guard, os.path.join(st.path, "config")),
        ownership=ownership,
        object_store=object_store,
        diskless=diskless,
    )
    if hasattr(st, "carry"):  # a tiered store: the POP log must not pin its files (the cluster adds the journals)
        st.carry = PopCarry(st, app.pop)
    if ownership.clustered:  # topics made here are placed in the cluster; producer ids come in blocks
        st.topics.on_create = ownership.topic_created
        st.topics.on_deleted = functools.partial(_deleted_in_cluster, ownership, app.transactions.layout)
        st.topics.on_updated = ownership.topic_updated
        app.kafka.producers.id_source = ownership.next_producer_id
    else:  # a deleted topic's open and aborted transactions (Kafka's layout: one gateway) go with it
        st.topics.on_deleted = app.transactions.layout.forget_topic
    # The Kafka checker was registered by KafkaState; the remoting one asks live producers.
    register_checker(app, "remoting", functools.partial(send_transaction_check, app))
    # A queue this node starts leading may hold batches it copied: rebuild their producer state.
    app.replication.on_leader = lambda topic, _qid: app.kafka.producers.forget_topic(topic)
    register_checker(app, "grpc", functools.partial(_grpc_transaction_check, app))
    route_due_messages(app)  # due delayed and committed messages of diskless queues: through the WAL
    diskless_pop.install(app)  # POP reads diskless queues from the bucket
    if registry is not None:  # after the cluster hooks: `_schemas` is placed like any topic it creates
        registry.start(create=not ownership.clustered)
    return app


def _replication(config: GatewayConfig, st: store.Store, arrivals: ArrivalHub) -> ReplicaManager:
    """The replica manager, named by this node's remoting address, with its follower side."""
    manager = ReplicaManager(st, f"{config.advertised}:{config.remoting_port}",
                             config.replica_lag_time_max_ms, notify=arrivals.notify)
    Follower(manager, RemotingReplicaTransport(*outgoing(config)))  # signed, TLS as the cluster's ports
    return manager


async def _grpc_transaction_check(app: App, producer_group: str, half, body: bytes) -> bool:
    """gateway.grpc.telemetry's transaction checker; the gRPC side (the RocketMQ SDK's protobuf,
    grpc: ~0.7 s of imports) is imported only once a gRPC client is known."""
    if not app.grpc.clients:
        return False
    from gateway.grpc.telemetry import check_transaction

    return await check_transaction(app, producer_group, half, body)


def _deleted_in_cluster(ownership, layout, name: str) -> None:
    """A topic deleted from this store (here, or following the cluster): out of etcd, and its open and
    aborted Kafka transactions forgotten, as on one gateway (a topic made again under the name read
    the deleted one's aborted transactions at its own offsets: read_committed skipped its records)."""
    ownership.topic_deleted(name)
    layout.forget_topic(name)
