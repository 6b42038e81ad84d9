"""The scenario lists one JVM runs; tests/compat and compat.validate run the same ones. At `pause`
the driver restarts the broker under test (commit → restart → resume; sends in flight across it)."""
KAFKA_SCENARIOS = ["codecs", "idempotent", "group", "seek", "times", "admin", "too_large",
                   "commit1", "retry_start", "pause", "retry_finish", "commit2"]
ROCKETMQ_SCENARIOS = ["send", "ordered", "push_tags", "lite_subscribe", "transaction", "reconsume"]
# RocketMQ semantics (tests/compat/test_java_rocketmq_semantics.py), on a gateway with short delay levels and
# transaction timings so the delay, check-back and retry paths finish in seconds.
TX_CHECK_MAX = 3
ROCKETMQ_SEMANTICS_SCENARIOS = ["sql_filter", "delay_level", f"tx_check:{TX_CHECK_MAX}", "dlq", "status_hold"]
ROCKETMQ_SEMANTICS_GATEWAY_ARGS = [
    "--message-delay-level", " ".join(f"{s}s" for s in range(1, 19)),
    "--transaction-timeout-ms", "1000", "--transaction-check-interval-ms", "1000",
    "--transaction-check-max", str(TX_CHECK_MAX)]
