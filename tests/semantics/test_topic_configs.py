"""semantics.topic_configs without a server: Kafka's number forms and bounds, list operations, sources."""
from semantics import topic_configs as tc

STORE_MAX = 4 << 20


def test_numbers_parse_as_java_does():
    assert tc.problem("retention.ms", "+5", STORE_MAX) is None
    assert tc.problem("retention.ms", "0000000000000000000000001", STORE_MAX) is None  # leading zeros
    assert tc.problem("retention.ms", str((1 << 63) - 1), STORE_MAX) is None
    for bad in (str(1 << 63), "1_000", "1e3", "", "9" * 5000):
        assert tc.problem("retention.ms", bad, STORE_MAX).endswith("Not a number of type LONG"), bad
    assert tc.problem("segment.bytes", str(1 << 31), STORE_MAX).endswith("Not a number of type INT")
    assert tc.problem("min.cleanable.dirty.ratio", "1_0", STORE_MAX).endswith("Not a number of type DOUBLE")
    assert tc.problem("min.cleanable.dirty.ratio", ".5", STORE_MAX) is None


def test_store_limit_and_unknown_names():
    assert tc.problem("max.message.bytes", str(STORE_MAX), STORE_MAX) is None
    assert "no more than 4194304" in tc.problem("max.message.bytes", str(STORE_MAX + 1), STORE_MAX)
    assert tc.problem("filter.source.topic", "x", STORE_MAX) == "Unknown topic config name: filter.source.topic"


def test_incremental_list_operations():
    attrs, why = tc.incremental({"cleanup.policy": "compact"}, [("cleanup.policy", 2, "delete,compact")])
    assert (attrs, why) == ({"cleanup.policy": "compact,delete"}, None)
    attrs, why = tc.incremental(attrs, [("cleanup.policy", 3, "compact"), ("retention.ms", 0, "5")])
    assert attrs == {"cleanup.policy": "delete", "retention.ms": "5"}
    attrs, why = tc.incremental({}, [("cleanup.policy", 2, "compact")])  # appends to the default
    assert attrs == {"cleanup.policy": "delete,compact"}
    assert tc.incremental({}, [("retention.ms", 2, "1")])[1] == \
        "Can't APPEND to key retention.ms because its type is not LIST."


def test_describe_sources_and_extras():
    entries = {e.name: e for e in tc.describe({"retention.ms": "5", "filter.source.topic": "base"}, STORE_MAX,
                                              1 << 30, ("filter.source.topic",))}
    assert set(tc.TOPIC_CONFIGS) <= set(entries)
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == ("5", tc.SOURCE_TOPIC)
    assert entries["retention.ms"].synonyms[0] == ("retention.ms", "5", tc.SOURCE_TOPIC)
    assert entries["max.message.bytes"].source == tc.SOURCE_STATIC_BROKER
    assert entries["compression.type"].source == tc.SOURCE_DEFAULT
    assert entries["filter.source.topic"].read_only and entries["filter.source.topic"].value == "base"
