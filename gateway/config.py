"""Command-line and runtime configuration of the gateway (the command-line contract in docs/config.md).
`GatewayConfig` is the one place every setting and its default lives."""
from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys

from gateway.listeners import PROTOCOLS, ListenerError, check, parse_listener
from security.inter_broker import InterBrokerCredential, InterBrokerError, load as load_inter_broker
from store.objstore.api import TierLocation


@dataclasses.dataclass
class GatewayConfig:
    data_dir: str = "./data"
    shards: int = 1  # gateway processes, one per core (gateway.shards); 1: this process is the gateway
    host: str = "127.0.0.1"
    kafka_port: int = 9092
    remoting_port: int = 9876
    grpc_port: int | None = None  # RocketMQ 5 gRPC (gateway.grpc); off when None
    # push consumers' long poll, told in Settings (the proxy's grpcClientConsumerMaxLongPollingTimeoutMillis)
    grpc_long_polling_ms: int = 30_000
    http_port: int | None = None  # /metrics, /healthz, /readyz, /api (gateway.ops); off when None
    console_sample_ms: int = 5000  # the console's history: one sample of rates, sizes and lag this often (1 h kept)
    schema_registry_port: int | None = None  # Confluent's registry REST API (gateway.schema_registry); off: None
    schema_registry_tls: bool = False  # the registry port serves HTTPS with --tls-cert/--tls-key (--tls-ca: mTLS)
    flush: str = "async"
    # Address clients are told to connect back to; defaults to host.
    advertised_host: str | None = None
    auto_create_topics: bool = True
    default_partitions: int = 4
    max_frame_bytes: int = 100 * 1024 * 1024
    max_message_bytes: int = 4 * 1024 * 1024
    commitlog_file_size: int = 1 << 30
    file_reserved_hours: float = 72  # retention (RocketMQ's fileReservedTime); no flag yet
    log_retention_check_interval_ms: int = 60_000  # per-topic retention.ms/bytes (semantics.retention)
    log_cleaner_backoff_ms: int = 15_000  # between compaction passes (semantics.compaction)
    producer_id_expiration_ms: int = 86_400_000  # Kafka's producer.id.expiration.ms
    streams_num_standby_replicas: int = 0  # Kafka's group.streams.num.standby.replicas (KIP-1071)
    # Disk space (RocketMQ's diskMaxUsedSpaceRatio, %; clamped to 10..95): refuse writes above it.
    disk_max_used_space_ratio: int = 75
    # Connection pressure (docs/robustness.md): a cap on open connections (both ports together) and
    # idle timeouts: Kafka's connections.max.idle.ms, RocketMQ's serverChannelMaxIdleTimeSeconds.
    max_connections: int = 50_000
    connections_max_idle_ms: int = 600_000
    remoting_channel_max_idle_seconds: int = 120
    remoting_max_parked_requests: int = 10_000  # per connection: long polls etc. beyond it get SYSTEM_BUSY
    request_deadline_ms: int = 30_000  # a request (one frame) must arrive whole within this (slowloris)
    max_buffered_request_bytes: int = 256 * 1024 * 1024  # request bytes read but not yet handled, all connections
    verify: bool = False  # at start, check every CommitLog entry's body CRC (quarantine corrupt ones)
    index_slots: int = 5_000_000  # IndexFile size (hidden flags, for tests on a small filesystem)
    index_entries: int = 20_000_000
    log_level: str = "INFO"
    # RocketMQ semantics (defaults are RocketMQ's broker defaults).
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    timer_max_delay_sec: int = 259_200  # RocketMQ 5's timerMaxDelaySec: deliver times further ahead are refused
    transaction_timeout_ms: int = 6000
    transaction_check_interval_ms: int = 30000
    transaction_check_max: int = 15
    lite_min_ttl_ms: int = 900_000  # RocketMQ 5.5's minLiteTTl (semantics.lite.expire_after_ms)
    lite_ttl_check_interval_ms: int = 120_000  # RocketMQ 5.5's liteTtlCheckInterval (gateway.lite_expiry)
    # Send flow control (semantics/flow_control.py; RocketMQ's broker defaults).
    os_page_cache_busy_timeout_ms: int = 1000
    wait_time_mills_in_send_queue: int = 200
    store_write_delay_ms: int = 0  # tests/benchmarks only: every store write sleeps this long
    store_write_hold_file: str | None = None  # tests only: store writes wait while this file exists
    # Replication (semantics/replication): a follower this long behind leaves the in-sync set.
    replica_lag_time_max_ms: int = 30_000
    # Security (docs/security.md): "acl" checks every remoting request's signature and permissions.
    authorizer: str = "none"
    super_users: str = ""  # comma-separated principals, e.g. "User:admin"
    allow_everyone_if_no_acl_found: bool = False
    # A cluster with --authorizer acl: what gateways sign their requests to each other with (security.inter_broker).
    inter_broker: InterBrokerCredential | None = None
    # Delegation tokens (KIP-48, security.tokens): enabled by a secret key file (Kafka's delegation.token.*).
    delegation_token_secret_key_file: str | None = None
    delegation_token_max_lifetime_ms: int = 604_800_000
    delegation_token_expiry_time_ms: int = 86_400_000
    max_incremental_fetch_session_cache_slots: int = 1000  # Kafka's; gateway/kafka/fetch_sessions.py
    # Listeners and TLS (gateway/listeners.py, gateway/tls.py).
    kafka_security_protocol: str = "PLAINTEXT"
    # KIP-714: the metric name prefixes Kafka clients are asked to push ("" none), and how often.
    kafka_telemetry_metrics: str = "org.apache.kafka.producer.,org.apache.kafka.consumer."
    kafka_telemetry_interval_ms: int = 60_000
    listeners: tuple = ()  # more Kafka listeners (gateway.listeners.Listener)
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca: str | None = None  # set: TLS clients must present a certificate it signed
    remoting_tls: bool = False
    allow_anonymous: bool = False  # serve a non-loopback address without authentication
    # Cluster (docs/cluster.md): None runs one process alone, as before.
    cluster: str | None = None  # etcd://HOST:PORT[,HOST:PORT]
    node_id: int = 0
    default_replication_factor: int = 1  # of RocketMQ-created and auto-created topics
    cluster_lease_ttl: int = 10  # seconds a dead gateway stays a member
    cluster_txn_layout: str = "kafka"  # Kafka transactions in a cluster: Kafka's layout; "halves": the earlier one
    cluster_txn_snapshot_s: float = 60.0  # Kafka's layout: a queue's state snapshot at most this long after it grew
    shard_metrics: tuple[str, ...] = ()  # shard 0 of --shards: the other shards' HTTP host:port, in order
    shared_security: bool = False  # a shard of --shards: users and ACLs mirrored through etcd
    shared_tables: str | None = None  # a shard of --shards without a tier: the shards' one table catalog dir
    whole_dlq: bool = False  # a shard of --shards: %DLQ% topics led whole by shard 0 (gateway.cluster.dead_letters)
    # Tiered storage (docs/tiered-storage.md): the S3-compatible object store; None: no tier.
    tier_url: str | None = None  # s3://BUCKET/PREFIX
    tier_endpoint: str | None = None  # None: AWS's own endpoint
    tier_addressing: str | None = None  # "path" | "virtual"; None: path with an endpoint, virtual without
    tier_ca_file: str | None = None  # PEM CA the endpoint's certificate must chain to
    tier_credentials_file: str | None = None  # AWS credentials file; None: environment, then the default file
    remote_log_manager_copy_max_bytes_per_second: int = 64 << 20  # the tier's uploads (Kafka's broker config)
    tier_read_cache_bytes: int = 256 << 20  # the tier's on-disk read cache (<data dir>/tiercache)
    # table topics with a tier (docs/tables.md): their warehouse and catalog; None: TIER_URL + "tables/"
    tables_url: str | None = None
    tables_vend_credentials: bool = False  # /iceberg hands readers the tier's S3 credentials too
    # Diskless topics (docs/diskless.md): the WAL object's bounds and the read cache, on the --tier-url store
    diskless_wal_max_bytes: int = 4 << 20
    diskless_wal_max_ms: int = 250
    diskless_cache_bytes: int = 64 << 20
    diskless_request_timeout_ms: int = 5000  # connect/read bound of each diskless S3 request (2 tries)
    diskless_janitor_interval_ms: int = 60_000  # retention, compaction and garbage collection passes
    diskless_gc_grace_ms: int = 300_000  # an object no index entry refers to is deleted after this long

    @property
    def advertised(self) -> str:
        return self.advertised_host or self.host

    @property
    def store_max_message_bytes(self) -> int:
        """The largest entry the store takes: what a topic's max.message.bytes may be raised to (Kafka
        topics may set e.g. 10 MiB). --max-message-bytes stays the default limit of every topic and of
        the RocketMQ ports; this ceiling is what fits one request frame and a quarter CommitLog file."""
        return max(self.max_message_bytes, min(self.max_frame_bytes, self.commitlog_file_size // 4))


class _DefaultsFormatter(argparse.HelpFormatter):
    """--help shows every flag's default (unless its help already says it): "off" for an unset
    option or switch, so a newcomer sees what running without the flag does."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if "default" in help_text.lower() or action.default is argparse.SUPPRESS or not action.option_strings:
            return help_text
        unset = action.default is None or action.default is False or action.default in ("", [])
        shown = "off" if unset else "%(default)s"
        return f"{help_text} (default: {shown})"


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exit code 2, never a traceback."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse hook
        sys.stderr.write(f"rocketgate: error: {message}\n")
        raise SystemExit(2)


def _size(text: str) -> int:
    """A positive byte count with an optional k/m/g suffix (and an optional trailing b): 4096, 64k, 1g."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("b")
    try:
        value = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"invalid size {text!r} (use e.g. 4096, 64k, 100m, 1g)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: must be positive")
    return value


def _int_between(lo: int, hi: int | None, what: str):
    """An argparse type: an integer in [lo, hi] (no upper bound when hi is None)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}")
        return value
    return parse


_port = _int_between(0, 65535, "port (0-65535; 0 picks a free one)")
_positive_int = _int_between(1, None, "value (a positive integer)")


def _shards(text: str) -> int:
    """N (1 to the usable core count) or auto (the usable core count)."""
    cores = len(os.sched_getaffinity(0))
    if text == "auto":
        return cores
    n = _int_between(1, cores, f"shard count (1 to the {cores} usable cores, or auto)")(text)
    return n


def _inter_broker(path: str):
    try:
        return load_inter_broker(path)
    except InterBrokerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _listener(text: str):
    try:
        return parse_listener(text)
    except ListenerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _tier_url(text: str) -> str:
    try:
        TierLocation.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# The store refuses smaller CommitLog files (store.Store); say so here, as a usage error.
MIN_COMMITLOG_FILE_SIZE = 4096


def build_parser() -> _Parser:
    """The command line (docs/config.md); every flag but the test-only ones has a help text."""
    d = GatewayConfig()
    p = _Parser(prog="python -m gateway", description="rocketgate: Kafka + RocketMQ protocols over one store",
                formatter_class=_DefaultsFormatter, epilog="Every flag is described in docs/config.md.")
    p.add_argument("--shards", type=_shards, default=d.shards, metavar="N|auto",
                   help="gateway processes, one per core, under a supervisor (docs/shards.md); auto: every usable core")
    p.add_argument("--data-dir", default=d.data_dir, help="the store's directory (CommitLog, queues, config)")
    p.add_argument("--host", default=d.host, help="address every listener binds")
    p.add_argument("--kafka-port", type=_port, default=d.kafka_port, help="the Kafka protocol's port")
    p.add_argument("--remoting-port", type=_port, default=d.remoting_port,
                   help="RocketMQ's remoting protocol's port (name server and broker in one)")
    p.add_argument("--grpc-port", type=_port, default=None,
                   help="serve RocketMQ 5's gRPC protocol (rocketmq-clients SDKs) on this port (off by default)")
    p.add_argument("--grpc-long-polling-ms", type=_int_between(1000, 30_000, "milliseconds (1000-30000)"),
                   default=d.grpc_long_polling_ms,
                   help="how long a gRPC push consumer's receive waits for messages (told in its Settings)")
    p.add_argument("--http-port", type=_port, default=None,
                   help="serve /metrics, /healthz, /readyz and the admin API on this port (off by default)")
    p.add_argument("--console-sample-ms", type=_int_between(100, 3_600_000, "milliseconds (100-3600000)"),
                   default=d.console_sample_ms,
                   help="how often the console samples rates, sizes and lag for its charts (720 samples kept)")
    p.add_argument("--schema-registry-port", type=_port, default=None,
                   help="serve Confluent's schema registry REST API on this port (off by default; "
                   "docs/schema-registry.md)")
    p.add_argument("--schema-registry-tls", action="store_true",
                   help="the schema registry port serves HTTPS only, with --tls-cert/--tls-key (and --tls-ca)")
    p.add_argument("--flush", choices=["async", "sync"], default=d.flush,
                   help="sync: acknowledge a write once it is on disk (fsync); async: flushed in the background")
    p.add_argument("--advertised-host", default=None, help="host clients connect back to (default: --host)")
    p.add_argument("--no-auto-create-topics", dest="auto_create_topics", action="store_false",
                   help="refuse requests naming unknown topics instead of creating them "
                   "(by default topics are created on first use)")
    p.add_argument("--default-partitions", type=_positive_int, default=d.default_partitions,
                   help="partitions (queues) of an auto-created topic")
    p.add_argument("--max-frame-bytes", type=_size, default=d.max_frame_bytes,
                   help="the largest request frame read (sizes take k/m/g)")
    p.add_argument("--max-message-bytes", type=_size, default=d.max_message_bytes,
                   help="the largest message (a topic's max.message.bytes may raise it)")
    p.add_argument("--commitlog-file-size", type=_size, default=d.commitlog_file_size,
                   help="size of each CommitLog file")
    p.add_argument("--disk-max-used-space-ratio", type=_int_between(1, 100, "percentage (1-100)"),
                   default=d.disk_max_used_space_ratio,
                   help="refuse writes while the data dir's filesystem is fuller than this (%%; 10..95 applies)")
    p.add_argument("--max-connections", type=_positive_int, default=d.max_connections,
                   help="refuse (close at once) connections beyond this many open ones")
    p.add_argument("--connections-max-idle-ms", type=_positive_int, default=d.connections_max_idle_ms,
                   help="close a Kafka connection idle this long (Kafka's connections.max.idle.ms)")
    p.add_argument("--remoting-channel-max-idle-seconds", type=_positive_int,
                   default=d.remoting_channel_max_idle_seconds,
                   help="close a RocketMQ connection idle this long (serverChannelMaxIdleTimeSeconds)")
    p.add_argument("--remoting-max-parked-requests", type=_positive_int, default=d.remoting_max_parked_requests,
                   help="per remoting connection: requests waiting in a task (long polls); more get SYSTEM_BUSY")
    p.add_argument("--request-deadline-ms", type=_positive_int, default=d.request_deadline_ms,
                   help="close a connection whose request (one frame) takes longer than this to arrive")
    p.add_argument("--max-buffered-request-bytes", type=_size, default=d.max_buffered_request_bytes,
                   help="pause reading requests while all connections together hold this many unhandled bytes")
    p.add_argument("--verify", action="store_true",
                   help="at start, walk the whole CommitLog checking body CRCs; corrupt entries are quarantined")
    p.add_argument("--index-slots", type=_positive_int, default=d.index_slots, help=argparse.SUPPRESS)
    p.add_argument("--index-entries", type=_positive_int, default=d.index_entries, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default=d.log_level, help="DEBUG, INFO, WARNING, ERROR or CRITICAL")
    p.add_argument("--message-delay-level", default=d.message_delay_level,
                   help="the 18 (or more) delay levels, e.g. '1s 5s 10s 30s 1m ... 2h' (units s/m/h/d)")
    p.add_argument("--timer-max-delay-sec", type=_positive_int, default=d.timer_max_delay_sec,
                   help="the furthest a deliver time (__STARTDELIVERTIME, gRPC delivery_timestamp) may lie "
                        "ahead; sends beyond it are refused (RocketMQ timerMaxDelaySec)")
    p.add_argument("--transaction-timeout-ms", type=int, default=d.transaction_timeout_ms,
                   help="a RocketMQ half message older than this is checked with its producer")
    p.add_argument("--transaction-check-interval-ms", type=int, default=d.transaction_check_interval_ms,
                   help="how often half messages are checked")
    p.add_argument("--transaction-check-max", type=int, default=d.transaction_check_max,
                   help="checks of one half message before it is rolled back")
    p.add_argument("--lite-min-ttl-ms", type=_positive_int, default=d.lite_min_ttl_ms,
                   help="no lite topic expires sooner than this, whatever its parent's lite.topic.expiration "
                        "(RocketMQ 5.5 minLiteTTl)")
    p.add_argument("--lite-ttl-check-interval-ms", type=_positive_int, default=d.lite_ttl_check_interval_ms,
                   help="how often expired lite topics are forgotten (RocketMQ 5.5 liteTtlCheckInterval)")
    p.add_argument("--log-retention-check-interval-ms", type=_positive_int,
                   default=d.log_retention_check_interval_ms, help="how often topic retention.ms/bytes are applied")
    p.add_argument("--log-cleaner-backoff-ms", type=_positive_int, default=d.log_cleaner_backoff_ms,
                   help="pause between compaction passes over compacted topics")
    p.add_argument("--producer-id-expiration-ms", type=_positive_int, default=d.producer_id_expiration_ms,
                   help="idle producers' idempotence state is forgotten after this (Kafka producer.id.expiration.ms)")
    p.add_argument("--streams-num-standby-replicas", type=_int_between(0, 2, "value (0 to 2)"),
                   default=d.streams_num_standby_replicas,
                   help="standby tasks per active task in streams groups (Kafka group.streams.num.standby.replicas)")
    p.add_argument("--os-page-cache-busy-timeout-ms", type=_positive_int, default=d.os_page_cache_busy_timeout_ms,
                   help="refuse sends (SYSTEM_BUSY) after a store write held the store this long")
    p.add_argument("--wait-time-mills-in-send-queue", type=_int_between(0, None, "value (0 or more)"),
                   default=d.wait_time_mills_in_send_queue, help="refuse a send that waited this long to be stored")
    p.add_argument("--store-write-delay-ms", type=_int_between(0, None, "value (0 or more)"),
                   default=d.store_write_delay_ms, help=argparse.SUPPRESS)  # a throttled disk, for tests
    p.add_argument("--store-write-hold-file", default=None, help=argparse.SUPPRESS)  # a stalled disk, for tests
    p.add_argument("--replica-lag-time-max-ms", type=_positive_int, default=d.replica_lag_time_max_ms,
                   help="a replica that has not caught up for this long leaves the in-sync set")
    p.add_argument("--authorizer", choices=["none", "acl"], default=d.authorizer,
                   help="acl: authenticate and authorize requests (docs/security.md)")
    p.add_argument("--super-users", default=d.super_users, help="principals allowed everything, e.g. User:admin")
    p.add_argument("--allow-everyone-if-no-acl-found", action="store_true",
                   help="a resource no ACL names is open to every authenticated principal")
    p.add_argument("--inter-broker-credentials", dest="inter_broker", type=_inter_broker, default=None,
                   metavar="FILE", help='JSON {"accessKey": ..., "secretKey": ...} gateways of a cluster sign '
                   "their forwards with (needed with --cluster and --authorizer acl; docs/security.md)")
    p.add_argument("--delegation-token-secret-key-file", default=None, metavar="FILE",
                   help="enables Kafka delegation tokens; their HMAC key is this file's content (all gateways "
                   "of a cluster: the same), as Kafka's delegation.token.secret.key")
    p.add_argument("--delegation-token-max-lifetime-ms", type=_positive_int, default=d.delegation_token_max_lifetime_ms,
                   help="a delegation token cannot be renewed past this age (Kafka's default: 7 days)")
    p.add_argument("--delegation-token-expiry-time-ms", type=_positive_int, default=d.delegation_token_expiry_time_ms,
                   help="a delegation token not renewed expires after this (Kafka's default: 1 day)")
    p.add_argument("--max-incremental-fetch-session-cache-slots", type=_int_between(0, None, "value (0 or more)"),
                   default=d.max_incremental_fetch_session_cache_slots,
                   help="Kafka fetch sessions kept (KIP-227); when full, clients fall back to full fetches")
    p.add_argument("--kafka-telemetry-metrics", default=d.kafka_telemetry_metrics, metavar="PREFIX[,PREFIX]",
                   help="metric name prefixes Kafka clients push (KIP-714), shown on /metrics; \"\" asks none")
    p.add_argument("--kafka-telemetry-interval-ms", type=_int_between(100, 3_600_000, "interval (100-3600000 ms)"),
                   default=d.kafka_telemetry_interval_ms, help="how often Kafka clients push their metrics")
    p.add_argument("--kafka-security-protocol", type=str.upper, choices=PROTOCOLS, default=d.kafka_security_protocol,
                   help="security of the --kafka-port listener")
    p.add_argument("--listener", dest="listeners", action="append", type=_listener, default=[],
                   metavar="NAME=PROTOCOL://HOST:PORT[,ADVERTISED_HOST[:PORT]]", help="one more Kafka listener")
    p.add_argument("--tls-cert", default=None, help="PEM certificate (chain) of every TLS listener")
    p.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    p.add_argument("--tls-ca", default=None, help="PEM CA: TLS clients must present a certificate it signed")
    p.add_argument("--remoting-tls", action="store_true", help="the remoting port accepts TLS only")
    p.add_argument("--allow-anonymous", action="store_true",
                   help="allow serving a non-loopback address without authentication")
    p.add_argument("--cluster", default=None, metavar="etcd://HOST:PORT[,HOST:PORT]",
                   help="join the cluster coordinated by this etcd (docs/cluster.md)")
    p.add_argument("--node-id", type=_int_between(0, 2**31 - 1, "node id"), default=d.node_id,
                   help="this gateway's id in the cluster (Kafka's node.id)")
    p.add_argument("--default-replication-factor", type=_positive_int, default=d.default_replication_factor,
                   help="replicas of an auto-created topic in a cluster")
    p.add_argument("--cluster-lease-ttl", type=_int_between(2, 3600, "lease TTL (2-3600 s)"),
                   default=d.cluster_lease_ttl, help=argparse.SUPPRESS)
    p.add_argument("--cluster-txn-layout", choices=("halves", "kafka"), default=d.cluster_txn_layout,
                   help="a cluster's Kafka transactions: Kafka's layout (default: records at produce time, "
                   "markers, last stable offset; docs/cluster-txn-layout.md) or the earlier halves until the end")
    p.add_argument("--cluster-txn-snapshot-s", type=float, default=d.cluster_txn_snapshot_s,
                   help="Kafka's layout: snapshot each replicated queue's transaction state at most this many "
                   "seconds after it grew, or every 50 000 offsets, so a start replays only what came after "
                   "(docs/cluster-txn-layout.md)")
    p.add_argument("--shard-metrics", type=lambda text: tuple(a for a in text.split(",") if a),
                   default=d.shard_metrics, help=argparse.SUPPRESS)  # set by gateway.shards for shard 0
    p.add_argument("--shared-security", action="store_true", help=argparse.SUPPRESS)  # set by gateway.shards
    p.add_argument("--shared-tables", default=None, help=argparse.SUPPRESS)  # set by gateway.shards (no tier)
    p.add_argument("--whole-dlq", action="store_true", help=argparse.SUPPRESS)  # set by gateway.shards
    p.add_argument("--tier-url", type=_tier_url, default=None, metavar="s3://BUCKET/PREFIX",
                   help="tier sealed store files to this S3 bucket and prefix (docs/tiered-storage.md)")
    p.add_argument("--tier-endpoint", default=None, metavar="URL",
                   help="the S3-compatible server, e.g. http://127.0.0.1:8333 (default: AWS's endpoint)")
    p.add_argument("--tier-addressing", choices=["path", "virtual"], default=None,
                   help="S3 addressing style (default: path with --tier-endpoint, virtual without)")
    p.add_argument("--tier-ca-file", default=None, metavar="PEM",
                   help="CA certificates the --tier-endpoint TLS certificate must chain to (default: system CAs)")
    p.add_argument("--tier-credentials-file", default=None, metavar="FILE",
                   help="AWS credentials file (default: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then "
                   "AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials)")
    p.add_argument("--remote-log-manager-copy-max-bytes-per-second", type=_size,
                   default=d.remote_log_manager_copy_max_bytes_per_second, metavar="N",
                   help="bytes per second the tier's uploads may use (Kafka's "
                   "remote.log.manager.copy.max.bytes.per.second; k/m/g suffixes)")
    p.add_argument("--tier-read-cache-bytes", type=_size, default=d.tier_read_cache_bytes, metavar="N",
                   help="bytes of tier segments kept in the on-disk read cache, least recently used evicted")
    p.add_argument("--tables-url", type=_tier_url, default=None, metavar="s3://BUCKET/PREFIX",
                   help="with --tier-url, the table topics' Iceberg warehouse and catalog, on the same S3 "
                   "server; a cluster's gateways give the same one (default: the tier's PREFIX + tables/)")
    p.add_argument("--tables-vend-credentials", action="store_true",
                   help="with --tier-url, the REST catalog at /iceberg hands readers the tier's S3 credentials "
                   "with each table (docs/tables.md; off: readers bring their own)")
    p.add_argument("--diskless-wal-max-bytes", type=_positive_int, default=d.diskless_wal_max_bytes,
                   help="a diskless WAL object is closed and written at this size (docs/diskless.md)")
    p.add_argument("--diskless-wal-max-ms", type=_int_between(1, 60_000, "WAL linger (1-60000 ms)"),
                   default=d.diskless_wal_max_ms, help="... or this long after its first batch")
    p.add_argument("--diskless-cache-bytes", type=_positive_int, default=d.diskless_cache_bytes,
                   help="bytes of diskless WAL ranges kept in memory for fetches")
    p.add_argument("--diskless-janitor-interval-ms", type=_int_between(10, 86_400_000, "interval (10-86400000 ms)"),
                   default=d.diskless_janitor_interval_ms,
                   help="how often diskless retention, compaction and garbage collection run (docs/diskless.md)")
    p.add_argument("--diskless-gc-grace-ms", type=_int_between(0, 86_400_000, "grace (0-86400000 ms)"),
                   default=d.diskless_gc_grace_ms,
                   help="a diskless object no index entry refers to is deleted once seen so this long")
    p.add_argument("--diskless-request-timeout-ms", type=_int_between(100, 600_000, "timeout (100-600000 ms)"),
                   default=d.diskless_request_timeout_ms,
                   help="connect and read timeout of each diskless object-store request (tried twice): "
                   "how soon a produce fails when the store hangs")
    return p


def parse_args(argv: list[str] | None = None) -> GatewayConfig:
    p = build_parser()
    ns = p.parse_args(argv)
    if ns.cluster is not None and not ns.cluster.startswith("etcd://"):
        p.error(f"argument --cluster: {ns.cluster!r} is not etcd://HOST:PORT[,HOST:PORT]")
    if ns.cluster is not None and ns.authorizer == "acl" and ns.inter_broker is None:
        p.error("--authorizer acl in a cluster needs --inter-broker-credentials FILE "
                "(the credential gateways sign CLUSTER_DELIVER with; docs/security.md)")
    if ns.delegation_token_secret_key_file is not None and not os.access(ns.delegation_token_secret_key_file, os.R_OK):
        p.error(f"argument --delegation-token-secret-key-file: cannot read {ns.delegation_token_secret_key_file!r}")
    ns.listeners = tuple(ns.listeners)
    tier_options = [f for f in ("tier_endpoint", "tier_addressing", "tier_ca_file", "tier_credentials_file",
                                "tables_url", "tables_vend_credentials")
                    if getattr(ns, f) not in (None, False)]
    if tier_options and ns.tier_url is None:
        p.error(f"argument --{tier_options[0].replace('_', '-')}: needs --tier-url s3://BUCKET/PREFIX")
    if ns.commitlog_file_size < MIN_COMMITLOG_FILE_SIZE:
        p.error(f"argument --commitlog-file-size: {ns.commitlog_file_size} bytes is too small "
                f"(at least {MIN_COMMITLOG_FILE_SIZE})")
    if not isinstance(logging.getLevelName(ns.log_level.upper()), int):
        p.error(f"argument --log-level: unknown level {ns.log_level!r} (DEBUG, INFO, WARNING, ERROR, CRITICAL)")
    config = GatewayConfig(**vars(ns))
    try:
        check(config)
    except ListenerError as exc:
        p.error(str(exc))
    return config
