"""The target of the RocketMQ 5.4/5.5 feature tests (priority messages, lite topics) through the Java
SDK 5.2 (compat.RocketLite): the gateway with --grpc-port, or with GRPC_TARGET=proxy Apache RocketMQ
5.5 (name server, one broker with LMQ on, as lite topics need, and the proxy in cluster mode: the
local-mode proxy has no lite subscription service) — the reference the expected results were read
from. Topics are created with their `message.type` by mqadmin on both, lite groups with
`lite.bind.topic` (which 5.5 requires)."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from compat.jvm import MQADMIN, run_admin_batch, run_tool
from grpc_sdk import GATEWAY_ARGS, GrpcGateway

LITE_BROKER_CONF = {"enableLmq": "true", "enableMultiDispatch": "true"}


class _Reference:
    """RocketMQCluster with the `endpoints`/`namesrv`/`stop` the tests use."""

    def __init__(self, workdir: str) -> None:
        from bench.brokers import RocketMQCluster
        self.cluster = RocketMQCluster(workdir, brokers=("broker-a",), heap="1g", proxy=True,
                                       extra=LITE_BROKER_CONF).start()
        self.endpoints, self.namesrv = self.cluster.grpc_endpoint, self.cluster.namesrv

    def stop(self) -> None:
        self.cluster.stop()


def _create(namesrv: str, phases: list[list[list[str]]], logs: str) -> None:
    """mqadmin commands (name and arguments after -n/-c) in one JVM, phase by phase; each must succeed."""
    with_target = [[[argv[0], "-n", namesrv, "-c", "DefaultCluster", *argv[1:]] for argv in phase] for phase in phases]
    for argv, r in zip([a for phase in with_target for a in phase], run_admin_batch(with_target, logs)):
        assert r["ok"] and "success" in r["output"], (argv, r["output"][-2000:])


def start(workdir: str, topics: dict, lite_groups: dict | None = None, gateway_args=(), fifo_groups=()):
    """The target with `topics` (name -> message type), `lite_groups` (group -> parent topic, or the
    group's attributes as mqadmin takes them: "+lite.bind.topic=P,+lite.sub.client.quota=2") and
    `fifo_groups` (orderly: consumeMessageOrderly, which 5.5 serves FIFO topics in order for)."""
    reference = os.environ.get("GRPC_TARGET") == "proxy"
    if reference:
        target = _Reference(os.path.join(workdir, "reference"))
    else:
        target = GrpcGateway(os.path.join(workdir, "data"), [*GATEWAY_ARGS, *gateway_args]).start()
    try:
        logs = os.path.join(workdir, "mqadmin")
        groups = [["updateSubGroup", "-g", group, "--attributes", parent if "=" in parent else f"+lite.bind.topic={parent}"]
                  for group, parent in (lite_groups or {}).items()]  # a parent topic, or the group's attributes
        groups += [["updateSubGroup", "-g", group, "-o", "true"] for group in fifo_groups]
        _create(target.namesrv, [[["updateTopic", "-t", topic, "-r", "4", "-w", "4", "-a", f"+message.type={kind}"]
                                  for topic, kind in topics.items()], groups], logs)
        if reference:  # the broker registers the new topics with the name server a little later
            for topic in topics:
                deadline = time.monotonic() + 120
                while run_tool("rocketmqtools", MQADMIN, ["topicRoute", "-n", target.namesrv, "-t", topic],
                               logs).returncode != 0:
                    assert time.monotonic() < deadline, f"topic {topic} never got a route"
                    time.sleep(2)
    except BaseException:
        target.stop()
        raise
    return target


def java_scenarios(workdir: str, topics: dict, lite_groups: dict, prefix: str, scenarios: list[str], fifo_groups=(),
                   before=None):
    """Run compat.RocketLite's `scenarios` against a fresh target; their results by name (and what
    `before(target)`, run meanwhile on groups of its own, returned, under "before")."""
    from compat.jvm import ScenarioRun
    target = start(workdir, topics, lite_groups, fifo_groups=fifo_groups)
    try:
        with ThreadPoolExecutor(1) as pool:
            found = pool.submit(before or (lambda _: None), target)
            run = ScenarioRun("rocketmqgrpc", "compat.RocketLite", [target.endpoints, prefix, *scenarios],
                              os.path.join(workdir, "logs"))
            run.results["before"] = {"ok": True, "found": found.result()}
        return run
    finally:
        target.stop()
