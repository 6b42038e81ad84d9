"""Pre-flight checks and topic administration for the Spark jobs.

Spark's Kafka source waits silently (streaming) or returns nothing (batch) for a topic that does not
exist, and retries for minutes against an unreachable bootstrap; the pipelines check both first so a
user gets one clear line. Topic calls go through the Java Admin client that comes with the
connector (kafka-clients), i.e. the same client Spark's driver uses.
"""
from __future__ import annotations

import socket


class PipelineError(RuntimeError):
    """A user-facing failure: printed as one line, exit status 2."""


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for part in bootstrap.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit():
            raise PipelineError(f"bad --bootstrap {bootstrap!r}: expected HOST:PORT[,HOST:PORT...]")
        out.append((host.strip("[]"), int(port)))
    return out


def check_reachable(bootstrap: str, timeout: float = 3.0) -> None:
    """At least one bootstrap address accepts a TCP connection."""
    errors = []
    for host, port in parse_bootstrap(bootstrap):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc.strerror or exc}")
    raise PipelineError("gateway unreachable at " + "; ".join(errors))


class Admin:
    """A Java Admin client in Spark's driver JVM; use as a context manager."""

    def __init__(self, spark, bootstrap: str, timeout_s: int = 15) -> None:
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        self.timeout_s = timeout_s
        props = jvm.java.util.Properties()
        props.setProperty("bootstrap.servers", bootstrap)
        props.setProperty("request.timeout.ms", str(timeout_s * 1000))
        props.setProperty("default.api.timeout.ms", str(timeout_s * 1000))
        self._admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._admin.close()

    def _get(self, future, what: str):
        try:
            return future.get(self.timeout_s, self._jvm.java.util.concurrent.TimeUnit.SECONDS)
        except Exception as exc:  # py4j wraps the Java exception; keep its first line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PipelineError(f"{what} failed: {first}") from None

    def topics(self) -> set[str]:
        opts = self._jvm.org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(True)
        return set(self._get(self._admin.listTopics(opts).names(), "listing topics"))

    def partitions(self, topic: str) -> int:
        names = self._jvm.java.util.Collections.singletonList(topic)
        desc = self._get(self._admin.describeTopics(names).allTopicNames(), f"describing {topic}")
        return desc.get(topic).partitions().size()

    def require_topic(self, topic: str) -> None:
        if topic not in self.topics():
            raise PipelineError(f"topic {topic!r} does not exist")

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        jvm = self._jvm
        new = jvm.org.apache.kafka.clients.admin.NewTopic(name, partitions, jvm.java.lang.Short.valueOf("1"))
        if configs:
            jmap = jvm.java.util.HashMap()
            for k, v in configs.items():
                jmap.put(k, v)
            new = new.configs(jmap)
        self._get(self._admin.createTopics(jvm.java.util.Collections.singletonList(new)).all(),
                  f"creating topic {name}")

    def ensure_topic(self, name: str, partitions: int = 1) -> None:
        if name not in self.topics():
            self.create_topic(name, partitions)

    def create_view(self, name: str, base: str, tag_expression: str) -> None:
        """A filtered view: a topic holding the base topic's messages whose tag matches."""
        self.create_topic(name, self.partitions(base),
                          {"filter.source.topic": base, "filter.tag.expression": tag_expression})
