"""Why a gateway failure or skip is expected: features the gateway does not claim (docs/mapping.md). Keyed by
suite, then test; the report prints the note next to the result, so an unexpected failure stands out by having
none."""
_NO_OFFSETS_TOPIC = ("the gateway keeps committed offsets in its one offset table (shared with RocketMQ), so "
                     "Metadata lists no __consumer_offsets internal topic; the test looks for it by name")
_NO_SHARE_GROUPS = "share groups (KIP-932, ShareFetch/ShareAcknowledge) are not implemented"

_KAFKA_TOOLS = ("the test runs Kafka's shell tools (KAFKA_PATH, a Kafka distribution) to create topics; the report "
                "gives it none, so it fails on both systems")
_NO_ACLS = "the report runs both systems without an authorizer (the gateway's ACLs: --authorizer acl, docs/security.md)"

NOTES: dict[str, dict[str, str]] = {
    "librdkafka tests": {
        "0052_msg_timestamps": _KAFKA_TOOLS,
        "0077_compaction": _KAFKA_TOOLS,
        "0109_auto_create_topics": _KAFKA_TOOLS,
        "0115_producer_auth": _KAFKA_TOOLS,
        "0119_consumer_auth": _KAFKA_TOOLS,
        "0081_admin": _NO_ACLS + " (its ACL sub-test)",
    },
    "kafka-python integration tests": {
        "test_admin_integration::test_create_describe_delete_acls": _NO_ACLS,
        "test_admin_integration::test_elect_leaders": "one node, no replicas: no leader election API",
        "test_admin_integration::test_describe_log_dirs": "the store is one directory: no log-dir APIs",
        "test_admin_integration::test_alter_replica_log_dirs": "the store is one directory: no log-dir APIs",
        "test_admin_integration::test_describe_metadata_quorum": "no KRaft quorum to describe",
        "test_admin_integration::test_alter_partition_reassignments": "one node, no replicas: nothing to reassign",
        "test_admin_integration::test_list_partition_reassignments": "one node, no replicas: nothing to reassign",
    },
    "franz-go kgo": {
        "Test848RegexBrokerResolves": _NO_OFFSETS_TOPIC,
        "TestConsumeRegex": _NO_OFFSETS_TOPIC,
        "TestIssueFetchLargerThanBrokerMaxReadBytes": (
            "the test creates a topic with max.message.bytes=10 MiB; the gateway refuses a topic limit above what "
            "its store holds (--max-message-bytes, 4 MiB by default)"),
        "TestConsumeRegexShareSkipsInternal": _NO_SHARE_GROUPS,
        "TestShareGroup": _NO_SHARE_GROUPS,
        "TestShareGroupAckOnClose": _NO_SHARE_GROUPS,
        "TestShareGroupETL": _NO_SHARE_GROUPS,
        "TestShareGroupOffsetsAdmin": _NO_SHARE_GROUPS,
    },
}
