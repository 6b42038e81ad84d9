"""One-off check that the scenario programs and compat/checks.py hold against the real systems.

    .venv/bin/python -m compat.validate [kafka] [rocketmq]

Starts Apache Kafka and/or Apache RocketMQ from bench/brokers.py (Maven jars), runs the same
scenarios tests/compat runs against the gateway, and prints PASS/FAIL per check. Not part of the
test suite: it needs the bench jars and a few minutes.
"""
from __future__ import annotations

import sys
import tempfile
import traceback

from bench.brokers import KafkaBroker, RocketMQBroker
from compat import checks
from compat.jvm import KAFKA_CLIENTS, ROCKETMQ_CLIENTS, ScenarioRun
from compat.scenarios import KAFKA_SCENARIOS, ROCKETMQ_SCENARIOS




# (label, check, scenarios whose results it takes)
KAFKA_CHECKS = [(f"codec-{c}", lambda r, c=c: checks.kafka_codec(r, c), ["codecs"]) for c in checks.CODECS] + [
    ("idempotent", checks.kafka_idempotent, ["idempotent"]),
    ("group", checks.kafka_group, ["group"]),
    ("seek", checks.kafka_seek, ["seek"]),
    ("times", checks.kafka_times, ["times"]),
    ("admin", checks.kafka_admin, ["admin"]),
    ("too_large", checks.kafka_too_large, ["too_large"]),
    ("commit", checks.kafka_commit, ["commit1", "commit2"]),
    ("retry", checks.kafka_retry, ["retry_start", "retry_finish"]),
]
ROCKETMQ_CHECKS = [
    ("send", checks.rocketmq_send, ["send"]),
    ("ordered", checks.rocketmq_ordered, ["ordered"]),
    ("push_tags", checks.rocketmq_push_tags, ["push_tags"]),
    ("lite", checks.rocketmq_lite, ["lite_subscribe"]),
    ("transaction", checks.rocketmq_transaction, ["transaction"]),
    ("reconsume", checks.rocketmq_reconsume, ["reconsume"]),
]


def report(label: str, run: ScenarioRun, table: list) -> int:
    failed = 0
    for name, check, scenarios in table:
        try:
            check(*(run[s] for s in scenarios))
            print(f"PASS {label} {name}")
        except AssertionError:
            failed += 1
            print(f"FAIL {label} {name}\n{traceback.format_exc(limit=2)[-3000:]}")
    return failed


# system name -> (broker class, its client address, client modules, scenario program, scenarios, checks)
SYSTEMS = {
    "kafka": (KafkaBroker, lambda k: k.bootstrap, KAFKA_CLIENTS, "compat.KafkaCompat", KAFKA_SCENARIOS, KAFKA_CHECKS),
    "rocketmq": (RocketMQBroker, lambda r: r.namesrv, ROCKETMQ_CLIENTS, "compat.RocketCompat", ROCKETMQ_SCENARIOS,
                 ROCKETMQ_CHECKS),
}


def main(argv: list[str]) -> int:
    failed = 0
    with tempfile.TemporaryDirectory(prefix="compat-validate-") as tmp:
        for name in argv or list(SYSTEMS):
            broker_class, address, clients, program, scenarios, table = SYSTEMS[name]
            with broker_class(f"{tmp}/{name}") as broker:
                for version, module in clients.items():
                    run = ScenarioRun(module, program, [address(broker), f"v{module}", *scenarios], f"{tmp}/logs",
                                      on_pause=broker.restart)
                    failed += report(f"{module} ({version})", run, table)
    print("validation:", "OK" if failed == 0 else f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
