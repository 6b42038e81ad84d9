"""The target of the RocketMQ 5.4/5.5 feature tests (priority messages, lite topics) through the Java
SDK 5.2 (compat.RocketLite): the gateway with --grpc-port, or with GRPC_TARGET=proxy Apache RocketMQ
5.5's own proxy (the reference the expected results were read from). Topics are created with their
`message.type` by mqadmin on both, and lite groups with `lite.bind.topic` (as 5.5 requires)."""
from __future__ import annotations

import os

from compat.jvm import MQADMIN, run_tool
from grpc_sdk import GATEWAY_ARGS, GrpcGateway


def _mqadmin(namesrv: str, args: list[str], logs: str) -> None:
    r = run_tool("rocketmqtools", MQADMIN, [args[0], "-n", namesrv, "-c", "DefaultCluster", *args[1:]], logs)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def start(workdir: str, topics: dict, lite_groups: dict | None = None, gateway_args=()):
    """The target with `topics` (name -> message type) and `lite_groups` (group -> parent topic)."""
    logs = os.path.join(workdir, "mqadmin")
    if os.environ.get("GRPC_TARGET") == "proxy":
        from bench.grpc_proxy import RealProxy
        target = RealProxy(os.path.join(workdir, "proxy")).start()
        try:
            target.create_topics(topics)
            namesrv = f"127.0.0.1:{target.namesrv_port}"
        except BaseException:
            target.stop()
            raise
    else:
        target = GrpcGateway(os.path.join(workdir, "data"), [*GATEWAY_ARGS, *gateway_args]).start()
        namesrv = target.namesrv
    try:
        if namesrv == getattr(target, "namesrv", None):
            for topic, kind in topics.items():
                _mqadmin(namesrv, ["updateTopic", "-t", topic, "-r", "4", "-w", "4", "-a", f"+message.type={kind}"],
                         logs)
        for group, parent in (lite_groups or {}).items():
            _mqadmin(namesrv, ["updateSubGroup", "-g", group, "--attributes", f"+lite.bind.topic={parent}"], logs)
    except BaseException:
        target.stop()
        raise
    return target
