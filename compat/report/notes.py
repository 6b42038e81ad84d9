"""Why a gateway failure or skip is expected: features the gateway does not claim (docs/mapping.md). Keyed by
suite, then test; the report prints the note next to the result, so an unexpected failure stands out by having
none."""
_NO_OFFSETS_TOPIC = ("the gateway keeps committed offsets in its one offset table (shared with RocketMQ), so "
                     "Metadata lists no __consumer_offsets internal topic; the test looks for it by name")
_NO_SHARE_GROUPS = "share groups (KIP-932, ShareFetch/ShareAcknowledge) are not implemented"

NOTES: dict[str, dict[str, str]] = {
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
