"""Per-API request/response schemas for every version the gateway advertises.

Each `Api` names its key, the advertised version range, the flexible versions (Kafka's
`flexibleVersions`), the versions actually served and the two field lists. Field names, versions,
nullable versions and tags follow Kafka's message JSON (names in snake_case);
tests/kafka/test_kafka_schemas.py compares every advertised version with kafka-clients' schemas.
"""
from __future__ import annotations

from codec.kafka.schema import NULL, F, Struct, version_range


class Api:
    """One Kafka API: `versions` is the advertised range ("0-9"), `flexible` Kafka's flexibleVersions
    ("9+"), `served` the versions handled (default: all advertised; Produce advertises 0-2 for old
    clients' version negotiation but answers them UNSUPPORTED_VERSION)."""

    __slots__ = ("key", "name", "min_version", "max_version", "flexible_from", "served_from", "request",
                 "response")

    def __init__(self, *, key: int, name: str, versions: str, flexible: str, request: list, response: list,
                 served: str | None = None) -> None:
        self.key, self.name = key, name
        self.min_version, self.max_version = version_range(versions)
        self.flexible_from = version_range(flexible)[0] if flexible != "none" else 1 << 30
        self.served_from = version_range(served)[0] if served else self.min_version
        self.request, self.response = request, response

    def flexible(self, version: int) -> bool:
        return version >= self.flexible_from

    def __repr__(self) -> str:
        return f"Api({self.name}, key={self.key}, versions={self.min_version}-{self.max_version})"


NO_AUTH_OPS = -2147483648

# Brokers named in an answer's errors (KIP-951 leader discovery: Produce v10+, Fetch v16+, ShareFetch)
_NODE_ENDPOINTS = [F("node_id", "i32"), F("host", "str"), F("port", "i32"), F("rack", "str", nullable="0+")]
_LEADER_ID_AND_EPOCH = Struct([F("leader_id", "i32", default=-1), F("leader_epoch", "i32", default=-1)])

PRODUCE = Api(key=0, name="Produce", versions="0-13", flexible="9+", served="3+", request=[
    F("transactional_id", "str", "3+", nullable="3+"),
    F("acks", "i16"),
    F("timeout_ms", "i32"),
    F("topic_data", [
        F("name", "str", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partition_data", [F("index", "i32"), F("records", "records", nullable="0+")]),
    ]),
], response=[
    F("responses", [
        F("name", "str", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partition_responses", [
            F("index", "i32"),
            F("error_code", "i16"),
            F("base_offset", "i64"),
            F("log_append_time_ms", "i64", "2+", default=-1),
            F("log_start_offset", "i64", "5+", default=-1),
            F("record_errors", [
                F("batch_index", "i32"),
                F("batch_index_error_message", "str", "8+", nullable="8+"),
            ], "8+"),
            F("error_message", "str", "8+", nullable="8+"),
            F("current_leader", _LEADER_ID_AND_EPOCH, "10+", tag=0),
        ]),
    ]),
    F("throttle_time_ms", "i32", "1+"),
    F("node_endpoints", _NODE_ENDPOINTS, "10+", tag=0),
])

_EPOCH_END_OFFSET = Struct([F("epoch", "i32", default=-1), F("end_offset", "i64", default=-1)])
_SNAPSHOT_ID = Struct([F("end_offset", "i64", default=-1), F("epoch", "i32", default=-1)])

FETCH = Api(key=1, name="Fetch", versions="4-18", flexible="12+", request=[
    F("replica_id", "i32", "0-14", default=-1),
    F("max_wait_ms", "i32"),
    F("min_bytes", "i32"),
    F("max_bytes", "i32", "3+", default=0x7FFFFFFF),
    F("isolation_level", "i8", "4+"),
    F("session_id", "i32", "7+"),
    F("session_epoch", "i32", "7+", default=-1),
    F("topics", [
        F("topic", "str", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", [
            F("partition", "i32"),
            F("current_leader_epoch", "i32", "9+", default=-1),
            F("fetch_offset", "i64"),
            F("last_fetched_epoch", "i32", "12+", default=-1),
            F("log_start_offset", "i64", "5+", default=-1),
            F("partition_max_bytes", "i32"),
            F("replica_directory_id", "uuid", "17+", tag=0),
            F("high_watermark", "i64", "18+", tag=1, default=0x7FFFFFFFFFFFFFFF),
        ]),
    ]),
    F("forgotten_topics_data", [F("topic", "str", "7-12"), F("topic_id", "uuid", "13+"),
                                F("partitions", "[i32]")], "7+"),
    F("rack_id", "str", "11+"),
    F("cluster_id", "str", "12+", nullable="12+", tag=0),
    F("replica_state", Struct([F("replica_id", "i32", default=-1), F("replica_epoch", "i64", default=-1)]), "15+",
      tag=1),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("error_code", "i16", "7+"),
    F("session_id", "i32", "7+"),
    F("responses", [
        F("topic", "str", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", [
            F("partition_index", "i32"),
            F("error_code", "i16"),
            F("high_watermark", "i64"),
            F("last_stable_offset", "i64", "4+", default=-1),
            F("log_start_offset", "i64", "5+", default=-1),
            F("aborted_transactions", [F("producer_id", "i64"), F("first_offset", "i64")], "4+",
              nullable="4+"),
            F("preferred_read_replica", "i32", "11+", default=-1),
            F("records", "records", nullable="0+"),
            F("diverging_epoch", _EPOCH_END_OFFSET, "12+", tag=0),
            F("current_leader", _LEADER_ID_AND_EPOCH, "12+", tag=1),
            F("snapshot_id", _SNAPSHOT_ID, "12+", tag=2),
        ]),
    ]),
    F("node_endpoints", _NODE_ENDPOINTS, "16+", tag=0),
])

LIST_OFFSETS = Api(key=2, name="ListOffsets", versions="1-11", flexible="6+", request=[
    F("replica_id", "i32"),
    F("isolation_level", "i8", "2+"),
    F("topics", [
        F("name", "str"),
        F("partitions", [
            F("partition_index", "i32"),
            F("current_leader_epoch", "i32", "4+", default=-1),
            F("timestamp", "i64"),
            F("max_num_offsets", "i32", "0"),
        ]),
    ]),
    F("timeout_ms", "i32", "10+", default=0),
], response=[
    F("throttle_time_ms", "i32", "2+"),
    F("topics", [
        F("name", "str"),
        F("partitions", [
            F("partition_index", "i32"),
            F("error_code", "i16"),
            F("old_style_offsets", "[i64]", "0"),
            F("timestamp", "i64", "1+", default=-1),
            F("offset", "i64", "1+", default=-1),
            F("leader_epoch", "i32", "4+", default=-1),
        ]),
    ]),
])

OFFSET_FOR_LEADER_EPOCH = Api(key=23, name="OffsetForLeaderEpoch", versions="2-4", flexible="4+", request=[
    F("replica_id", "i32", "3+", default=-2),
    F("topics", [
        F("topic", "str"),
        F("partitions", [
            F("partition", "i32"),
            F("current_leader_epoch", "i32", "2+", default=-1),
            F("leader_epoch", "i32"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "i32", "2+"),
    F("topics", [
        F("topic", "str"),
        F("partitions", [
            F("error_code", "i16"),
            F("partition", "i32"),
            F("leader_epoch", "i32", "1+", default=-1),
            F("end_offset", "i64", default=-1),
        ]),
    ]),
])

METADATA = Api(key=3, name="Metadata", versions="0-13", flexible="9+", request=[
    F("topics", [F("topic_id", "uuid", "10+"), F("name", "str", nullable="10+")], nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
], response=[
    F("throttle_time_ms", "i32", "3+"),
    F("brokers", [
        F("node_id", "i32"), F("host", "str"), F("port", "i32"), F("rack", "str", "1+", nullable="1+"),
    ]),
    F("cluster_id", "str", "2+", nullable="2+"),
    F("controller_id", "i32", "1+", default=-1),
    F("topics", [
        F("error_code", "i16"),
        F("name", "str", nullable="12+"),
        F("topic_id", "uuid", "10+"),
        F("is_internal", "bool", "1+"),
        F("partitions", [
            F("error_code", "i16"),
            F("partition_index", "i32"),
            F("leader_id", "i32"),
            F("leader_epoch", "i32", "7+", default=-1),
            F("replica_nodes", "[i32]"),
            F("isr_nodes", "[i32]"),
            F("offline_replicas", "[i32]", "5+"),
        ]),
        F("topic_authorized_operations", "i32", "8+", default=NO_AUTH_OPS),
    ]),
    F("cluster_authorized_operations", "i32", "8-10", default=NO_AUTH_OPS),
    F("error_code", "i16", "13+"),
])

OFFSET_COMMIT = Api(key=8, name="OffsetCommit", versions="2-10", flexible="8+", request=[
    F("group_id", "str"),
    F("generation_id_or_member_epoch", "i32", "1+", default=-1),
    F("member_id", "str", "1+"),
    F("group_instance_id", "str", "7+", nullable="7+"),
    F("retention_time_ms", "i64", "2-4", default=-1),
    F("topics", [
        F("name", "str", "0-9"),
        F("topic_id", "uuid", "10+"),
        F("partitions", [
            F("partition_index", "i32"),
            F("committed_offset", "i64"),
            F("committed_leader_epoch", "i32", "6+", default=-1),
            F("commit_timestamp", "i64", "1", default=-1),
            F("committed_metadata", "str", nullable="0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "i32", "3+"),
    F("topics", [F("name", "str", "0-9"), F("topic_id", "uuid", "10+"),
                 F("partitions", [F("partition_index", "i32"), F("error_code", "i16")])]),
])

_OFFSET_FETCH_PARTITION = [
    F("partition_index", "i32"),
    F("committed_offset", "i64", default=-1),
    F("committed_leader_epoch", "i32", "5+", default=-1),
    F("metadata", "str", nullable="0+"),
    F("error_code", "i16"),
]

OFFSET_FETCH = Api(key=9, name="OffsetFetch", versions="1-10", flexible="6+", request=[
    F("group_id", "str", "0-7"),
    F("topics", [F("name", "str"), F("partition_indexes", "[i32]")], "0-7", nullable="2-7"),
    F("groups", [
        F("group_id", "str"),
        F("member_id", "str", "9+", nullable="9+"),
        F("member_epoch", "i32", "9+", default=-1),
        F("topics", [F("name", "str", "0-9"), F("topic_id", "uuid", "10+"), F("partition_indexes", "[i32]")],
          nullable="8+", default=NULL),  # null: every committed partition
    ], "8+"),
    F("require_stable", "bool", "7+"),
], response=[
    F("throttle_time_ms", "i32", "3+"),
    F("topics", [F("name", "str"), F("partitions", _OFFSET_FETCH_PARTITION)], "0-7"),
    F("error_code", "i16", "2-7"),
    F("groups", [
        F("group_id", "str"),
        F("topics", [F("name", "str", "0-9"), F("topic_id", "uuid", "10+"), F("partitions", _OFFSET_FETCH_PARTITION)]),
        F("error_code", "i16"),
    ], "8+"),
])

FIND_COORDINATOR = Api(key=10, name="FindCoordinator", versions="0-6", flexible="3+", request=[
    F("key", "str", "0-3"),
    F("key_type", "i8", "1+"),
    F("coordinator_keys", "[str]", "4+"),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("error_code", "i16", "0-3"),
    F("error_message", "str", "1-3", nullable="1-3"),
    F("node_id", "i32", "0-3"),
    F("host", "str", "0-3"),
    F("port", "i32", "0-3"),
    F("coordinators", [
        F("key", "str"), F("node_id", "i32"), F("host", "str"), F("port", "i32"),
        F("error_code", "i16"), F("error_message", "str", nullable="0+"),
    ], "4+"),
])

JOIN_GROUP = Api(key=11, name="JoinGroup", versions="0-9", flexible="6+", request=[
    F("group_id", "str"),
    F("session_timeout_ms", "i32"),
    F("rebalance_timeout_ms", "i32", "1+", default=-1),
    F("member_id", "str"),
    F("group_instance_id", "str", "5+", nullable="5+"),
    F("protocol_type", "str"),
    F("protocols", [F("name", "str"), F("metadata", "bytes")]),
    F("reason", "str", "8+", nullable="8+"),
], response=[
    F("throttle_time_ms", "i32", "2+"),
    F("error_code", "i16"),
    F("generation_id", "i32", default=-1),
    F("protocol_type", "str", "7+", nullable="7+"),
    F("protocol_name", "str", nullable="7+"),
    F("leader", "str"),
    F("skip_assignment", "bool", "9+"),
    F("member_id", "str"),
    F("members", [
        F("member_id", "str"),
        F("group_instance_id", "str", "5+", nullable="5+"),
        F("metadata", "bytes"),
    ]),
])

HEARTBEAT = Api(key=12, name="Heartbeat", versions="0-4", flexible="4+", request=[
    F("group_id", "str"),
    F("generation_id", "i32"),
    F("member_id", "str"),
    F("group_instance_id", "str", "3+", nullable="3+"),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("error_code", "i16"),
])

LEAVE_GROUP = Api(key=13, name="LeaveGroup", versions="0-5", flexible="4+", request=[
    F("group_id", "str"),
    F("member_id", "str", "0-2"),
    F("members", [
        F("member_id", "str"),
        F("group_instance_id", "str", nullable="3+"),
        F("reason", "str", "5+", nullable="5+"),
    ], "3+"),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("error_code", "i16"),
    F("members", [
        F("member_id", "str"),
        F("group_instance_id", "str", nullable="3+"),
        F("error_code", "i16"),
    ], "3+"),
])

SYNC_GROUP = Api(key=14, name="SyncGroup", versions="0-5", flexible="4+", request=[
    F("group_id", "str"),
    F("generation_id", "i32"),
    F("member_id", "str"),
    F("group_instance_id", "str", "3+", nullable="3+"),
    F("protocol_type", "str", "5+", nullable="5+"),
    F("protocol_name", "str", "5+", nullable="5+"),
    F("assignments", [F("member_id", "str"), F("assignment", "bytes")]),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("error_code", "i16"),
    F("protocol_type", "str", "5+", nullable="5+"),
    F("protocol_name", "str", "5+", nullable="5+"),
    F("assignment", "bytes"),
])

DESCRIBE_GROUPS = Api(key=15, name="DescribeGroups", versions="0-6", flexible="5+", request=[
    F("groups", "[str]"),
    F("include_authorized_operations", "bool", "3+"),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("groups", [
        F("error_code", "i16"),
        F("error_message", "str", "6+", nullable="6+"),
        F("group_id", "str"),
        F("group_state", "str"),
        F("protocol_type", "str"),
        F("protocol_data", "str"),
        F("members", [
            F("member_id", "str"),
            F("group_instance_id", "str", "4+", nullable="4+"),
            F("client_id", "str"),
            F("client_host", "str"),
            F("member_metadata", "bytes"),
            F("member_assignment", "bytes"),
        ]),
        F("authorized_operations", "i32", "3+", default=NO_AUTH_OPS),
    ]),
])

LIST_GROUPS = Api(key=16, name="ListGroups", versions="0-5", flexible="3+", request=[
    F("states_filter", "[str]", "4+"),
    F("types_filter", "[str]", "5+"),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("error_code", "i16"),
    F("groups", [F("group_id", "str"), F("protocol_type", "str"), F("group_state", "str", "4+"),
                 F("group_type", "str", "5+")]),
])

API_VERSIONS = Api(key=18, name="ApiVersions", versions="0-4", flexible="3+", request=[
    F("client_software_name", "str", "3+"),
    F("client_software_version", "str", "3+"),
], response=[
    F("error_code", "i16"),
    F("api_keys", [F("api_key", "i16"), F("min_version", "i16"), F("max_version", "i16")]),
    F("throttle_time_ms", "i32", "1+"),
    F("supported_features", [F("name", "str"), F("min_version", "i16"), F("max_version", "i16")], "3+",
      tag=0),
    F("finalized_features_epoch", "i64", "3+", tag=1, default=-1),
    F("finalized_features", [F("name", "str"), F("max_version_level", "i16"), F("min_version_level", "i16")],
      "3+", tag=2),
    F("zk_migration_ready", "bool", "3+", tag=3),
])

_CREATABLE_CONFIG = [F("name", "str"), F("value", "str", nullable="0+")]

CREATE_TOPICS = Api(key=19, name="CreateTopics", versions="2-7", flexible="5+", request=[
    F("topics", [
        F("name", "str"),
        F("num_partitions", "i32"),
        F("replication_factor", "i16"),
        F("assignments", [F("partition_index", "i32"), F("broker_ids", "[i32]")]),
        F("configs", _CREATABLE_CONFIG),
    ]),
    F("timeout_ms", "i32"),
    F("validate_only", "bool", "1+"),
], response=[
    F("throttle_time_ms", "i32", "2+"),
    F("topics", [
        F("name", "str"),
        F("topic_id", "uuid", "7+"),
        F("error_code", "i16"),
        F("error_message", "str", "1+", nullable="1+"),
        F("num_partitions", "i32", "5+", default=-1),
        F("replication_factor", "i16", "5+", default=-1),
        F("configs", [
            F("name", "str"), F("value", "str", nullable="5+"), F("read_only", "bool"),
            F("config_source", "i8", default=-1), F("is_sensitive", "bool"),
        ], "5+", nullable="5+"),
        F("topic_config_error_code", "i16", "5+", tag=0),
    ]),
])

DELETE_TOPICS = Api(key=20, name="DeleteTopics", versions="1-6", flexible="4+", request=[
    F("topics", [F("name", "str", nullable="6+"), F("topic_id", "uuid")], "6+"),
    F("topic_names", "[str]", "0-5"),
    F("timeout_ms", "i32"),
], response=[
    F("throttle_time_ms", "i32", "1+"),
    F("responses", [
        F("name", "str", nullable="6+"),
        F("topic_id", "uuid", "6+"),
        F("error_code", "i16"),
        F("error_message", "str", "5+", nullable="5+"),
    ]),
])

INIT_PRODUCER_ID = Api(key=22, name="InitProducerId", versions="0-5", flexible="2+", request=[
    F("transactional_id", "str", nullable="0+"),
    F("transaction_timeout_ms", "i32"),
    F("producer_id", "i64", "3+", default=-1),
    F("producer_epoch", "i16", "3+", default=-1),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("producer_id", "i64", default=-1),
    F("producer_epoch", "i16", default=-1),
])

DESCRIBE_CONFIGS = Api(key=32, name="DescribeConfigs", versions="1-4", flexible="4+", request=[
    F("resources", [
        F("resource_type", "i8"),
        F("resource_name", "str"),
        F("configuration_keys", "[str]", nullable="0+"),
    ]),
    F("include_synonyms", "bool", "1+"),
    F("include_documentation", "bool", "3+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("results", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("resource_type", "i8"),
        F("resource_name", "str"),
        F("configs", [
            F("name", "str"),
            F("value", "str", nullable="0+"),
            F("read_only", "bool"),
            F("is_default", "bool", "0"),
            F("config_source", "i8", "1+", default=-1),
            F("is_sensitive", "bool"),
            F("synonyms", [F("name", "str"), F("value", "str", nullable="0+"), F("source", "i8")], "1+"),
            F("config_type", "i8", "3+"),
            F("documentation", "str", "3+", nullable="3+"),
        ]),
    ]),
])

CREATE_PARTITIONS = Api(key=37, name="CreatePartitions", versions="0-3", flexible="2+", request=[
    F("topics", [
        F("name", "str"),
        F("count", "i32"),
        F("assignments", [F("broker_ids", "[i32]")], nullable="0+"),
    ]),
    F("timeout_ms", "i32"),
    F("validate_only", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("results", [F("name", "str"), F("error_code", "i16"), F("error_message", "str", nullable="0+")]),
])

DELETE_GROUPS = Api(key=42, name="DeleteGroups", versions="0-2", flexible="2+", request=[
    F("groups_names", "[str]"),
], response=[
    F("throttle_time_ms", "i32"),
    F("results", [F("group_id", "str"), F("error_code", "i16")]),
])

DESCRIBE_CLUSTER = Api(key=60, name="DescribeCluster", versions="0-2", flexible="0+", request=[
    F("include_cluster_authorized_operations", "bool"),
    F("endpoint_type", "i8", "1+", default=1),
    F("include_fenced_brokers", "bool", "2+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("endpoint_type", "i8", "1+", default=1),
    F("cluster_id", "str"),
    F("controller_id", "i32", default=-1),
    F("brokers", [
        F("broker_id", "i32"), F("host", "str"), F("port", "i32"), F("rack", "str", nullable="0+"),
        F("is_fenced", "bool", "2+"),
    ]),
    F("cluster_authorized_operations", "i32", default=NO_AUTH_OPS),
])

DELETE_RECORDS = Api(key=21, name="DeleteRecords", versions="0-2", flexible="2+", request=[
    F("topics", [F("name", "str"), F("partitions", [F("partition_index", "i32"), F("offset", "i64")])]),
    F("timeout_ms", "i32"),
], response=[
    F("throttle_time_ms", "i32"),
    F("topics", [
        F("name", "str"),
        F("partitions", [F("partition_index", "i32"), F("low_watermark", "i64"), F("error_code", "i16")]),
    ]),
])

_ALTER_CONFIGS_RESPONSE = [
    F("throttle_time_ms", "i32"),
    F("responses", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("resource_type", "i8"),
        F("resource_name", "str"),
    ]),
]

ALTER_CONFIGS = Api(key=33, name="AlterConfigs", versions="0-2", flexible="2+", request=[
    F("resources", [
        F("resource_type", "i8"),
        F("resource_name", "str"),
        F("configs", [F("name", "str"), F("value", "str", nullable="0+")]),
    ]),
    F("validate_only", "bool"),
], response=_ALTER_CONFIGS_RESPONSE)

INCREMENTAL_ALTER_CONFIGS = Api(key=44, name="IncrementalAlterConfigs", versions="0-1", flexible="1+", request=[
    F("resources", [
        F("resource_type", "i8"),
        F("resource_name", "str"),
        F("configs", [F("name", "str"), F("config_operation", "i8"), F("value", "str", nullable="0+")]),
    ]),
    F("validate_only", "bool"),
], response=_ALTER_CONFIGS_RESPONSE)

# Kafka: flexibleVersions "none" (v1 does not exist, so "1+" means never).
OFFSET_DELETE = Api(key=47, name="OffsetDelete", versions="0", flexible="1+", request=[
    F("group_id", "str"),
    F("topics", [F("name", "str"), F("partitions", [F("partition_index", "i32")])]),
], response=[
    F("error_code", "i16"),
    F("throttle_time_ms", "i32"),
    F("topics", [F("name", "str"), F("partitions", [F("partition_index", "i32"), F("error_code", "i16")])]),
])

ALTER_REPLICA_LOG_DIRS = Api(key=34, name="AlterReplicaLogDirs", versions="1-2", flexible="2+", request=[
    F("dirs", [F("path", "str"), F("topics", [F("name", "str"), F("partitions", "[i32]")])]),
], response=[
    F("throttle_time_ms", "i32"),
    F("results", [F("topic_name", "str"), F("partitions", [F("partition_index", "i32"), F("error_code", "i16")])]),
])

UPDATE_FEATURES = Api(key=57, name="UpdateFeatures", versions="0-2", flexible="0+", request=[
    F("timeout_ms", "i32", default=60000),
    F("feature_updates", [
        F("feature", "str"),
        F("max_version_level", "i16"),
        F("allow_downgrade", "bool", "0"),
        F("upgrade_type", "i8", "1+", default=1),
    ]),
    F("validate_only", "bool", "1+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("results", [F("feature", "str"), F("error_code", "i16"), F("error_message", "str", nullable="0+")], "0-1"),
])

DESCRIBE_LOG_DIRS = Api(key=35, name="DescribeLogDirs", versions="1-5", flexible="2+", request=[
    F("topics", [F("topic", "str"), F("partitions", "[i32]")], nullable="0+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16", "3+"),
    F("results", [
        F("error_code", "i16"),
        F("log_dir", "str"),
        F("topics", [
            F("name", "str"),
            F("partitions", [F("partition_index", "i32"), F("partition_size", "i64"), F("offset_lag", "i64"),
                             F("is_future_key", "bool")]),
        ]),
        F("total_bytes", "i64", "4+", default=-1),
        F("usable_bytes", "i64", "4+", default=-1),
        F("is_cordoned", "bool", "5+"),
    ]),
])

DESCRIBE_PRODUCERS = Api(key=61, name="DescribeProducers", versions="0", flexible="0+", request=[
    F("topics", [F("name", "str"), F("partition_indexes", "[i32]")]),
], response=[
    F("throttle_time_ms", "i32"),
    F("topics", [
        F("name", "str"),
        F("partitions", [
            F("partition_index", "i32"),
            F("error_code", "i16"),
            F("error_message", "str", nullable="0+", default=None),
            F("active_producers", [
                F("producer_id", "i64"),
                F("producer_epoch", "i32"),
                F("last_sequence", "i32", default=-1),
                F("last_timestamp", "i64", default=-1),
                F("coordinator_epoch", "i32"),
                F("current_txn_start_offset", "i64", default=-1),
            ]),
        ]),
    ]),
])

DESCRIBE_TRANSACTIONS = Api(key=65, name="DescribeTransactions", versions="0", flexible="0+", request=[
    F("transactional_ids", "[str]"),
], response=[
    F("throttle_time_ms", "i32"),
    F("transaction_states", [
        F("error_code", "i16"),
        F("transactional_id", "str"),
        F("transaction_state", "str"),
        F("transaction_timeout_ms", "i32"),
        F("transaction_start_time_ms", "i64"),
        F("producer_id", "i64"),
        F("producer_epoch", "i16"),
        F("topics", [F("topic", "str"), F("partitions", "[i32]")]),
    ]),
])

LIST_TRANSACTIONS = Api(key=66, name="ListTransactions", versions="0-2", flexible="0+", request=[
    F("state_filters", "[str]"),
    F("producer_id_filters", "[i64]"),
    F("duration_filter", "i64", "1+", default=-1),
    F("transactional_id_pattern", "str", "2+", nullable="2+", default=None),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("unknown_state_filters", "[str]"),
    F("transaction_states", [F("transactional_id", "str"), F("producer_id", "i64"), F("transaction_state", "str")]),
])

_TOPIC_PARTITIONS = [F("topic_id", "uuid"), F("partitions", "[i32]")]

CONSUMER_GROUP_HEARTBEAT = Api(key=68, name="ConsumerGroupHeartbeat", versions="0-1", flexible="0+", request=[
    F("group_id", "str"),
    F("member_id", "str"),
    F("member_epoch", "i32"),
    F("instance_id", "str", nullable="0+"),
    F("rack_id", "str", nullable="0+"),
    F("rebalance_timeout_ms", "i32", default=-1),
    F("subscribed_topic_names", "[str]", nullable="0+"),
    F("subscribed_topic_regex", "str", "1+", nullable="1+"),
    F("server_assignor", "str", nullable="0+"),
    F("topic_partitions", _TOPIC_PARTITIONS, nullable="0+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("member_id", "str", nullable="0+"),
    F("member_epoch", "i32"),
    F("heartbeat_interval_ms", "i32"),
    F("assignment", Struct([F("topic_partitions", _TOPIC_PARTITIONS)]), nullable="0+"),  # int8 marker first
])

_DESCRIBED_ASSIGNMENT = Struct([F("topic_partitions", [F("topic_id", "uuid"), F("topic_name", "str"),
                                                       F("partitions", "[i32]")])])

CONSUMER_GROUP_DESCRIBE = Api(key=69, name="ConsumerGroupDescribe", versions="0-1", flexible="0+", request=[
    F("group_ids", "[str]"),
    F("include_authorized_operations", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("groups", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("group_id", "str"),
        F("group_state", "str"),
        F("group_epoch", "i32"),
        F("assignment_epoch", "i32"),
        F("assignor_name", "str"),
        F("members", [
            F("member_id", "str"),
            F("instance_id", "str", nullable="0+"),
            F("rack_id", "str", nullable="0+"),
            F("member_epoch", "i32"),
            F("client_id", "str"),
            F("client_host", "str"),
            F("subscribed_topic_names", "[str]"),
            F("subscribed_topic_regex", "str", nullable="0+"),
            F("assignment", _DESCRIBED_ASSIGNMENT),
            F("target_assignment", _DESCRIBED_ASSIGNMENT),
            F("member_type", "i8", "1+", default=-1),
        ]),
        F("authorized_operations", "i32", default=NO_AUTH_OPS),
    ]),
])

# KIP-932 share groups (the versions kafka-clients 4.2 uses; v0 of each was the 4.0 early access).
_SHARE_ASSIGNMENT = Struct([F("topic_partitions", _TOPIC_PARTITIONS)])

SHARE_GROUP_HEARTBEAT = Api(key=76, name="ShareGroupHeartbeat", versions="1", flexible="0+", request=[
    F("group_id", "str"),
    F("member_id", "str"),
    F("member_epoch", "i32"),
    F("rack_id", "str", nullable="0+"),
    F("subscribed_topic_names", "[str]", nullable="0+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("member_id", "str", nullable="0+"),
    F("member_epoch", "i32"),
    F("heartbeat_interval_ms", "i32"),
    F("assignment", _SHARE_ASSIGNMENT, nullable="0+"),  # int8 marker first, as ConsumerGroupHeartbeat's
])

SHARE_GROUP_DESCRIBE = Api(key=77, name="ShareGroupDescribe", versions="1", flexible="0+", request=[
    F("group_ids", "[str]"),
    F("include_authorized_operations", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("groups", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("group_id", "str"),
        F("group_state", "str"),
        F("group_epoch", "i32"),
        F("assignment_epoch", "i32"),
        F("assignor_name", "str"),
        F("members", [
            F("member_id", "str"),
            F("rack_id", "str", nullable="0+"),
            F("member_epoch", "i32"),
            F("client_id", "str"),
            F("client_host", "str"),
            F("subscribed_topic_names", "[str]"),
            F("assignment", _DESCRIBED_ASSIGNMENT),
        ]),
        F("authorized_operations", "i32", default=NO_AUTH_OPS),
    ]),
])

_ACK_BATCHES = [F("first_offset", "i64"), F("last_offset", "i64"), F("acknowledge_types", "[i8]")]
_SHARE_PARTITION_ERROR = [F("partition_index", "i32"), F("error_code", "i16"),
                          F("error_message", "str", nullable="0+")]

SHARE_FETCH = Api(key=78, name="ShareFetch", versions="1-2", flexible="0+", request=[
    F("group_id", "str", nullable="0+"),
    F("member_id", "str", nullable="0+"),
    F("share_session_epoch", "i32"),
    F("max_wait_ms", "i32"),
    F("min_bytes", "i32"),
    F("max_bytes", "i32", default=0x7FFFFFFF),
    F("max_records", "i32"),
    F("batch_size", "i32"),
    F("share_acquire_mode", "i8", "2+"),
    F("is_renew_ack", "bool", "2+"),
    F("topics", [
        F("topic_id", "uuid"),
        F("partitions", [F("partition_index", "i32"), F("acknowledgement_batches", _ACK_BATCHES)]),
    ]),
    F("forgotten_topics_data", [F("topic_id", "uuid"), F("partitions", "[i32]")]),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("acquisition_lock_timeout_ms", "i32"),
    F("responses", [
        F("topic_id", "uuid"),
        F("partitions", [
            *_SHARE_PARTITION_ERROR,
            F("acknowledge_error_code", "i16"),
            F("acknowledge_error_message", "str", nullable="0+"),
            F("current_leader", _LEADER_ID_AND_EPOCH),
            F("records", "records", nullable="0+"),
            F("acquired_records", [F("first_offset", "i64"), F("last_offset", "i64"), F("delivery_count", "i16")]),
        ]),
    ]),
    F("node_endpoints", _NODE_ENDPOINTS),
])

SHARE_ACKNOWLEDGE = Api(key=79, name="ShareAcknowledge", versions="1-2", flexible="0+", request=[
    F("group_id", "str", nullable="0+"),
    F("member_id", "str", nullable="0+"),
    F("share_session_epoch", "i32"),
    F("is_renew_ack", "bool", "2+"),
    F("topics", [
        F("topic_id", "uuid"),
        F("partitions", [F("partition_index", "i32"), F("acknowledgement_batches", _ACK_BATCHES)]),
    ]),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("acquisition_lock_timeout_ms", "i32", "2+"),
    F("responses", [
        F("topic_id", "uuid"),
        F("partitions", [*_SHARE_PARTITION_ERROR, F("current_leader", _LEADER_ID_AND_EPOCH)]),
    ]),
    F("node_endpoints", _NODE_ENDPOINTS),
])

DESCRIBE_SHARE_GROUP_OFFSETS = Api(key=90, name="DescribeShareGroupOffsets", versions="0-1", flexible="0+",
                                   request=[
    F("groups", [
        F("group_id", "str"),
        F("topics", [F("topic_name", "str"), F("partitions", "[i32]")], nullable="0+"),
    ]),
], response=[
    F("throttle_time_ms", "i32"),
    F("groups", [
        F("group_id", "str"),
        F("topics", [
            F("topic_name", "str"),
            F("topic_id", "uuid"),
            F("partitions", [
                F("partition_index", "i32"),
                F("start_offset", "i64"),
                F("leader_epoch", "i32"),
                F("lag", "i64", "1+", default=-1),
                F("error_code", "i16"),
                F("error_message", "str", nullable="0+"),
            ]),
        ]),
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
    ]),
])

ALTER_SHARE_GROUP_OFFSETS = Api(key=91, name="AlterShareGroupOffsets", versions="0", flexible="0+", request=[
    F("group_id", "str"),
    F("topics", [F("topic_name", "str"),
                 F("partitions", [F("partition_index", "i32"), F("start_offset", "i64")])]),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("responses", [F("topic_name", "str"), F("topic_id", "uuid"), F("partitions", _SHARE_PARTITION_ERROR)]),
])

DELETE_SHARE_GROUP_OFFSETS = Api(key=92, name="DeleteShareGroupOffsets", versions="0", flexible="0+", request=[
    F("group_id", "str"),
    F("topics", [F("topic_name", "str")]),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("responses", [F("topic_name", "str"), F("topic_id", "uuid"), F("error_code", "i16"),
                    F("error_message", "str", nullable="0+")]),
])

SHARE_APIS = [SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE,
              DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS]

_TXN_TOPICS = [F("name", "str"), F("partitions", "[i32]")]
_TXN_TOPIC_RESULTS = [F("name", "str"), F("results", [F("partition_index", "i32"), F("partition_error_code", "i16")])]

# v4+ (KIP-890) batches transactions, as brokers send it; clients send v0-3 (Kafka renamed those fields
# V3AndBelow*; tests/kafka/test_kafka_schemas.py maps the names).
ADD_PARTITIONS_TO_TXN = Api(key=24, name="AddPartitionsToTxn", versions="0-5", flexible="3+", request=[
    F("transactions", [
        F("transactional_id", "str"),
        F("producer_id", "i64"),
        F("producer_epoch", "i16"),
        F("verify_only", "bool"),
        F("topics", _TXN_TOPICS),
    ], "4+"),
    F("transactional_id", "str", "0-3"),
    F("producer_id", "i64", "0-3"),
    F("producer_epoch", "i16", "0-3"),
    F("topics", _TXN_TOPICS, "0-3"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16", "4+"),
    F("results_by_transaction", [F("transactional_id", "str"), F("topic_results", _TXN_TOPIC_RESULTS)], "4+"),
    F("results", _TXN_TOPIC_RESULTS, "0-3"),
])

ADD_OFFSETS_TO_TXN = Api(key=25, name="AddOffsetsToTxn", versions="0-4", flexible="3+", request=[
    F("transactional_id", "str"),
    F("producer_id", "i64"),
    F("producer_epoch", "i16"),
    F("group_id", "str"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
])

END_TXN = Api(key=26, name="EndTxn", versions="0-5", flexible="3+", request=[
    F("transactional_id", "str"),
    F("producer_id", "i64"),
    F("producer_epoch", "i16"),
    F("committed", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("producer_id", "i64", "5+", default=-1),  # v5 (TV2): the epoch bumped by the end, for the next one
    F("producer_epoch", "i16", "5+", default=-1),
])

TXN_OFFSET_COMMIT = Api(key=28, name="TxnOffsetCommit", versions="0-5", flexible="3+", request=[
    F("transactional_id", "str"),
    F("group_id", "str"),
    F("producer_id", "i64"),
    F("producer_epoch", "i16"),
    F("generation_id", "i32", "3+", default=-1),
    F("member_id", "str", "3+", default=""),
    F("group_instance_id", "str", "3+", nullable="3+"),
    F("topics", [
        F("name", "str"),
        F("partitions", [
            F("partition_index", "i32"),
            F("committed_offset", "i64"),
            F("committed_leader_epoch", "i32", "2+", default=-1),
            F("committed_metadata", "str", nullable="0+"),
        ]),
    ]),
], response=[
    F("throttle_time_ms", "i32"),
    F("topics", [
        F("name", "str"),
        F("partitions", [F("partition_index", "i32"), F("error_code", "i16")]),
    ]),
])

# Security (gateway/kafka/sasl.py, gateway/kafka/security_admin.py). SaslHandshake v0 (raw SASL tokens
# after the handshake, no SaslAuthenticate) is not offered: every maintained client uses v1.
SASL_HANDSHAKE = Api(key=17, name="SaslHandshake", versions="0-1", flexible="none", request=[
    F("mechanism", "str"),
], response=[
    F("error_code", "i16"),
    F("mechanisms", "[str]"),
])

SASL_AUTHENTICATE = Api(key=36, name="SaslAuthenticate", versions="0-2", flexible="2+", request=[
    F("auth_bytes", "bytes"),
], response=[
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("auth_bytes", "bytes"),
    F("session_lifetime_ms", "i64", "1+"),
])

_ACL_FILTER = [
    F("resource_type_filter", "i8"),
    F("resource_name_filter", "str", nullable="0+"),
    F("pattern_type_filter", "i8", "1+", default=3),
    F("principal_filter", "str", nullable="0+"),
    F("host_filter", "str", nullable="0+"),
    F("operation", "i8"),
    F("permission_type", "i8"),
]

DESCRIBE_ACLS = Api(key=29, name="DescribeAcls", versions="1-3", flexible="2+", request=_ACL_FILTER, response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("resources", [
        F("resource_type", "i8"),
        F("resource_name", "str"),
        F("pattern_type", "i8", "1+", default=3),
        F("acls", [F("principal", "str"), F("host", "str"), F("operation", "i8"), F("permission_type", "i8")]),
    ]),
])

CREATE_ACLS = Api(key=30, name="CreateAcls", versions="1-3", flexible="2+", request=[
    F("creations", [
        F("resource_type", "i8"),
        F("resource_name", "str"),
        F("resource_pattern_type", "i8", "1+", default=3),
        F("principal", "str"),
        F("host", "str"),
        F("operation", "i8"),
        F("permission_type", "i8"),
    ]),
], response=[
    F("throttle_time_ms", "i32"),
    F("results", [F("error_code", "i16"), F("error_message", "str", nullable="0+")]),
])

DELETE_ACLS = Api(key=31, name="DeleteAcls", versions="1-3", flexible="2+", request=[
    F("filters", _ACL_FILTER),
], response=[
    F("throttle_time_ms", "i32"),
    F("filter_results", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("matching_acls", [
            F("error_code", "i16"),
            F("error_message", "str", nullable="0+"),
            F("resource_type", "i8"),
            F("resource_name", "str"),
            F("pattern_type", "i8", "1+", default=3),
            F("principal", "str"),
            F("host", "str"),
            F("operation", "i8"),
            F("permission_type", "i8"),
        ]),
    ]),
])

DESCRIBE_USER_SCRAM_CREDENTIALS = Api(key=50, name="DescribeUserScramCredentials", versions="0", flexible="0+",
                                      request=[
    F("users", [F("name", "str")], nullable="0+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("results", [
        F("user", "str"),
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("credential_infos", [F("mechanism", "i8"), F("iterations", "i32")]),
    ]),
])

ALTER_USER_SCRAM_CREDENTIALS = Api(key=51, name="AlterUserScramCredentials", versions="0", flexible="0+",
                                   request=[
    F("deletions", [F("name", "str"), F("mechanism", "i8")]),
    F("upsertions", [F("name", "str"), F("mechanism", "i8"), F("iterations", "i32"), F("salt", "bytes"),
                     F("salted_password", "bytes")]),
], response=[
    F("throttle_time_ms", "i32"),
    F("results", [F("user", "str"), F("error_code", "i16"), F("error_message", "str", nullable="0+")]),
])

# Delegation tokens (KIP-48; gateway.kafka.delegation_tokens): created by SASL-authenticated principals,
# then used as SCRAM credentials (tokenauth=true).
_TOKEN_PRINCIPAL = [F("principal_type", "str"), F("principal_name", "str")]

CREATE_DELEGATION_TOKEN = Api(key=38, name="CreateDelegationToken", versions="1-3", flexible="2+", request=[
    F("owner_principal_type", "str", "3+", nullable="3+"),
    F("owner_principal_name", "str", "3+", nullable="3+"),
    F("renewers", _TOKEN_PRINCIPAL),
    F("max_lifetime_ms", "i64"),
], response=[
    F("error_code", "i16"),
    *_TOKEN_PRINCIPAL,
    F("token_requester_principal_type", "str", "3+"),
    F("token_requester_principal_name", "str", "3+"),
    F("issue_timestamp_ms", "i64"),
    F("expiry_timestamp_ms", "i64"),
    F("max_timestamp_ms", "i64"),
    F("token_id", "str"),
    F("hmac", "bytes"),
    F("throttle_time_ms", "i32"),
])

RENEW_DELEGATION_TOKEN = Api(key=39, name="RenewDelegationToken", versions="1-2", flexible="2+", request=[
    F("hmac", "bytes"),
    F("renew_period_ms", "i64"),
], response=[
    F("error_code", "i16"),
    F("expiry_timestamp_ms", "i64"),
    F("throttle_time_ms", "i32"),
])

EXPIRE_DELEGATION_TOKEN = Api(key=40, name="ExpireDelegationToken", versions="1-2", flexible="2+", request=[
    F("hmac", "bytes"),
    F("expiry_time_period_ms", "i64"),
], response=[
    F("error_code", "i16"),
    F("expiry_timestamp_ms", "i64"),
    F("throttle_time_ms", "i32"),
])

DESCRIBE_DELEGATION_TOKEN = Api(key=41, name="DescribeDelegationToken", versions="1-3", flexible="2+", request=[
    F("owners", _TOKEN_PRINCIPAL, nullable="0+"),
], response=[
    F("error_code", "i16"),
    F("tokens", [
        *_TOKEN_PRINCIPAL,
        F("token_requester_principal_type", "str", "3+"),
        F("token_requester_principal_name", "str", "3+"),
        F("issue_timestamp", "i64"),
        F("expiry_timestamp", "i64"),
        F("max_timestamp", "i64"),
        F("token_id", "str"),
        F("hmac", "bytes"),
        F("renewers", _TOKEN_PRINCIPAL),
    ]),
    F("throttle_time_ms", "i32"),
])

TOKEN_APIS = [CREATE_DELEGATION_TOKEN, RENEW_DELEGATION_TOKEN, EXPIRE_DELEGATION_TOKEN, DESCRIBE_DELEGATION_TOKEN]

# Client quotas (gateway.kafka.quotas): `kafka-configs --entity-type users/clients` reads and sets them.
DESCRIBE_CLIENT_QUOTAS = Api(key=48, name="DescribeClientQuotas", versions="0-1", flexible="1+", request=[
    F("components", [F("entity_type", "str"), F("match_type", "i8"), F("match", "str", nullable="0+")]),
    F("strict", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("entries", [
        F("entity", [F("entity_type", "str"), F("entity_name", "str", nullable="0+")]),
        F("values", [F("key", "str"), F("value", "f64")]),
    ], nullable="0+", default=NULL),
])

ALTER_CLIENT_QUOTAS = Api(key=49, name="AlterClientQuotas", versions="0-1", flexible="1+", request=[
    F("entries", [
        F("entity", [F("entity_type", "str"), F("entity_name", "str", nullable="0+")]),
        F("ops", [F("key", "str"), F("value", "f64"), F("remove", "bool")]),
    ]),
    F("validate_only", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("entries", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("entity", [F("entity_type", "str"), F("entity_name", "str", nullable="0+")]),
    ]),
])

# Partition placement on one node (gateway.kafka.partitions): KIP-966's paged describe, leader
# elections, reassignments and the KRaft quorum a Kafka 4.x broker describes to clients.
_CURSOR = Struct([F("topic_name", "str"), F("partition_index", "i32")])

DESCRIBE_TOPIC_PARTITIONS = Api(key=75, name="DescribeTopicPartitions", versions="0", flexible="0+", request=[
    F("topics", [F("name", "str")]),
    F("response_partition_limit", "i32", default=2000),
    F("cursor", _CURSOR, nullable="0+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("topics", [
        F("error_code", "i16"),
        F("name", "str", nullable="0+"),
        F("topic_id", "uuid"),
        F("is_internal", "bool"),
        F("partitions", [
            F("error_code", "i16"),
            F("partition_index", "i32"),
            F("leader_id", "i32"),
            F("leader_epoch", "i32", default=-1),
            F("replica_nodes", "[i32]"),
            F("isr_nodes", "[i32]"),
            F("eligible_leader_replicas", "[i32]", nullable="0+"),
            F("last_known_elr", "[i32]", nullable="0+"),
            F("offline_replicas", "[i32]"),
        ]),
        F("topic_authorized_operations", "i32", default=NO_AUTH_OPS),
    ]),
    F("next_cursor", _CURSOR, nullable="0+"),
])

ELECT_LEADERS = Api(key=43, name="ElectLeaders", versions="0-2", flexible="2+", request=[
    F("election_type", "i8", "1+"),
    F("topic_partitions", [F("topic", "str"), F("partitions", "[i32]")], nullable="0+"),
    F("timeout_ms", "i32", default=60000),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16", "1+"),
    F("replica_election_results", [
        F("topic", "str"),
        F("partition_result", [F("partition_id", "i32"), F("error_code", "i16"),
                               F("error_message", "str", nullable="0+")]),
    ]),
])

ALTER_PARTITION_REASSIGNMENTS = Api(key=45, name="AlterPartitionReassignments", versions="0-1", flexible="0+",
                                    request=[
    F("timeout_ms", "i32", default=60000),
    F("allow_replication_factor_change", "bool", "1+", default=True),
    F("topics", [
        F("name", "str"),
        F("partitions", [F("partition_index", "i32"), F("replicas", "[i32]", nullable="0+")]),
    ]),
], response=[
    F("throttle_time_ms", "i32"),
    F("allow_replication_factor_change", "bool", "1+", default=True),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("responses", [
        F("name", "str"),
        F("partitions", [F("partition_index", "i32"), F("error_code", "i16"),
                         F("error_message", "str", nullable="0+")]),
    ]),
])

LIST_PARTITION_REASSIGNMENTS = Api(key=46, name="ListPartitionReassignments", versions="0", flexible="0+", request=[
    F("timeout_ms", "i32", default=60000),
    F("topics", [F("name", "str"), F("partition_indexes", "[i32]")], nullable="0+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("topics", [
        F("name", "str"),
        F("partitions", [F("partition_index", "i32"), F("replicas", "[i32]"), F("adding_replicas", "[i32]"),
                         F("removing_replicas", "[i32]")]),
    ]),
])

_REPLICA_STATE = [F("replica_id", "i32"), F("replica_directory_id", "uuid", "2+"), F("log_end_offset", "i64"),
                  F("last_fetch_timestamp", "i64", "1+", default=-1),
                  F("last_caught_up_timestamp", "i64", "1+", default=-1)]

DESCRIBE_QUORUM = Api(key=55, name="DescribeQuorum", versions="0-2", flexible="0+", request=[
    F("topics", [F("topic_name", "str"), F("partitions", [F("partition_index", "i32")])]),
], response=[
    F("error_code", "i16"),
    F("error_message", "str", "2+", nullable="2+"),
    F("topics", [
        F("topic_name", "str"),
        F("partitions", [
            F("partition_index", "i32"),
            F("error_code", "i16"),
            F("error_message", "str", "2+", nullable="2+"),
            F("leader_id", "i32"),
            F("leader_epoch", "i32"),
            F("high_watermark", "i64"),
            F("current_voters", _REPLICA_STATE),
            F("observers", _REPLICA_STATE),
        ]),
    ]),
    F("nodes", [F("node_id", "i32"), F("listeners", [F("name", "str"), F("host", "str"), F("port", "u16")])], "2+"),
])

# KIP-1071 streams groups (Kafka 4.1+): the coordinator assigns Kafka Streams tasks.
_KEY_VALUE = [F("key", "str"), F("value", "str")]
_TOPIC_INFO = [F("name", "str"), F("partitions", "i32"), F("replication_factor", "i16"),
               F("topic_configs", _KEY_VALUE)]
_TASK_IDS = [F("subtopology_id", "str"), F("partitions", "[i32]")]
_TASK_OFFSET = [F("subtopology_id", "str"), F("partition", "i32"), F("offset", "i64")]
_ENDPOINT = Struct([F("host", "str"), F("port", "u16")])

STREAMS_GROUP_HEARTBEAT = Api(key=88, name="StreamsGroupHeartbeat", versions="0", flexible="0+", request=[
    F("group_id", "str"),
    F("member_id", "str"),
    F("member_epoch", "i32"),
    F("endpoint_information_epoch", "i32"),
    F("instance_id", "str", nullable="0+"),
    F("rack_id", "str", nullable="0+"),
    F("rebalance_timeout_ms", "i32", default=-1),
    F("topology", Struct([
        F("epoch", "i32"),
        F("subtopologies", [
            F("subtopology_id", "str"),
            F("source_topics", "[str]"),
            F("source_topic_regex", "[str]"),
            F("state_changelog_topics", _TOPIC_INFO),
            F("repartition_sink_topics", "[str]"),
            F("repartition_source_topics", _TOPIC_INFO),
            F("copartition_groups", [F("source_topics", "[i16]"), F("source_topic_regex", "[i16]"),
                                     F("repartition_source_topics", "[i16]")]),
        ]),
    ]), nullable="0+"),
    F("active_tasks", _TASK_IDS, nullable="0+", default=NULL),
    F("standby_tasks", _TASK_IDS, nullable="0+", default=NULL),
    F("warmup_tasks", _TASK_IDS, nullable="0+", default=NULL),
    F("process_id", "str", nullable="0+"),
    F("user_endpoint", _ENDPOINT, nullable="0+"),
    F("client_tags", _KEY_VALUE, nullable="0+", default=NULL),
    F("task_offsets", _TASK_OFFSET, nullable="0+", default=NULL),
    F("task_end_offsets", _TASK_OFFSET, nullable="0+", default=NULL),
    F("shutdown_application", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("error_message", "str", nullable="0+"),
    F("member_id", "str"),
    F("member_epoch", "i32"),
    F("heartbeat_interval_ms", "i32"),
    F("acceptable_recovery_lag", "i32"),
    F("task_offset_interval_ms", "i32"),
    F("status", [F("status_code", "i8"), F("status_detail", "str")], nullable="0+", default=NULL),
    F("active_tasks", _TASK_IDS, nullable="0+", default=NULL),
    F("standby_tasks", _TASK_IDS, nullable="0+", default=NULL),
    F("warmup_tasks", _TASK_IDS, nullable="0+", default=NULL),
    F("endpoint_information_epoch", "i32"),
    F("partitions_by_user_endpoint", [
        F("user_endpoint", _ENDPOINT),
        F("active_partitions", [F("topic", "str"), F("partitions", "[i32]")]),
        F("standby_partitions", [F("topic", "str"), F("partitions", "[i32]")]),
    ], nullable="0+", default=NULL),
])

_STREAMS_ASSIGNMENT = Struct([F("active_tasks", _TASK_IDS), F("standby_tasks", _TASK_IDS),
                              F("warmup_tasks", _TASK_IDS)])

STREAMS_GROUP_DESCRIBE = Api(key=89, name="StreamsGroupDescribe", versions="0", flexible="0+", request=[
    F("group_ids", "[str]"),
    F("include_authorized_operations", "bool"),
], response=[
    F("throttle_time_ms", "i32"),
    F("groups", [
        F("error_code", "i16"),
        F("error_message", "str", nullable="0+"),
        F("group_id", "str"),
        F("group_state", "str"),
        F("group_epoch", "i32"),
        F("assignment_epoch", "i32"),
        F("topology", Struct([
            F("epoch", "i32"),
            F("subtopologies", [
                F("subtopology_id", "str"),
                F("source_topics", "[str]"),
                F("repartition_sink_topics", "[str]"),
                F("state_changelog_topics", _TOPIC_INFO),
                F("repartition_source_topics", _TOPIC_INFO),
            ], nullable="0+"),
        ]), nullable="0+"),
        F("members", [
            F("member_id", "str"),
            F("member_epoch", "i32"),
            F("instance_id", "str", nullable="0+"),
            F("rack_id", "str", nullable="0+"),
            F("client_id", "str"),
            F("client_host", "str"),
            F("topology_epoch", "i32"),
            F("process_id", "str"),
            F("user_endpoint", _ENDPOINT, nullable="0+"),
            F("client_tags", _KEY_VALUE),
            F("task_offsets", _TASK_OFFSET),
            F("task_end_offsets", _TASK_OFFSET),
            F("assignment", _STREAMS_ASSIGNMENT),
            F("target_assignment", _STREAMS_ASSIGNMENT),
            F("is_classic", "bool"),
        ]),
        F("authorized_operations", "i32", default=NO_AUTH_OPS),
    ]),
])

LIST_CONFIG_RESOURCES = Api(key=74, name="ListConfigResources", versions="0-1", flexible="0+", request=[
    F("resource_types", "[i8]", "1+"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("config_resources", [F("resource_name", "str"), F("resource_type", "i8", "1+", default=16)]),
])

# KIP-714 client telemetry: the broker names the metrics it wants, clients push them as OTLP protobuf.
GET_TELEMETRY_SUBSCRIPTIONS = Api(key=71, name="GetTelemetrySubscriptions", versions="0", flexible="0+", request=[
    F("client_instance_id", "uuid"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
    F("client_instance_id", "uuid"),
    F("subscription_id", "i32"),
    F("accepted_compression_types", "[i8]"),
    F("push_interval_ms", "i32"),
    F("telemetry_max_bytes", "i32"),
    F("delta_temporality", "bool"),
    F("requested_metrics", "[str]"),
])

PUSH_TELEMETRY = Api(key=72, name="PushTelemetry", versions="0", flexible="0+", request=[
    F("client_instance_id", "uuid"),
    F("subscription_id", "i32"),
    F("terminating", "bool"),
    F("compression_type", "i8"),
    F("metrics", "bytes"),
], response=[
    F("throttle_time_ms", "i32"),
    F("error_code", "i16"),
])

TELEMETRY_APIS = [GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY]

STREAMS_APIS = [STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE]

PARTITION_APIS = [DESCRIBE_TOPIC_PARTITIONS, ELECT_LEADERS, ALTER_PARTITION_REASSIGNMENTS,
                  LIST_PARTITION_REASSIGNMENTS, DESCRIBE_QUORUM]

SECURITY_APIS = [SASL_HANDSHAKE, SASL_AUTHENTICATE, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS,
                 DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_CLIENT_QUOTAS,
                 ALTER_CLIENT_QUOTAS]

TRANSACTION_APIS = [ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT]

ALL = [PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP,
       HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, API_VERSIONS, CREATE_TOPICS,
       DELETE_TOPICS, INIT_PRODUCER_ID, DESCRIBE_CONFIGS, CREATE_PARTITIONS, DELETE_GROUPS, DESCRIBE_CLUSTER,
       DELETE_RECORDS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, OFFSET_DELETE, CONSUMER_GROUP_HEARTBEAT,
       CONSUMER_GROUP_DESCRIBE, DESCRIBE_LOG_DIRS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS,
       LIST_CONFIG_RESOURCES, ALTER_REPLICA_LOG_DIRS, UPDATE_FEATURES,
       *TRANSACTION_APIS, *SECURITY_APIS, *TOKEN_APIS, *SHARE_APIS, *PARTITION_APIS, *STREAMS_APIS, *TELEMETRY_APIS]
BY_KEY = {api.key: api for api in ALL}
