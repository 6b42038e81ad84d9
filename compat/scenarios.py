"""The scenario lists one JVM runs; tests/compat and compat.validate run the same ones. At `pause`
the driver restarts the broker under test (commit → restart → resume; sends in flight across it)."""
KAFKA_SCENARIOS = ["codecs", "idempotent", "group", "seek", "times", "admin", "too_large",
                   "commit1", "retry_start", "pause", "retry_finish", "commit2"]
ROCKETMQ_SCENARIOS = ["send", "ordered", "push_tags", "lite_subscribe", "transaction", "reconsume"]
