"""The stock Go gRPC SDK (github.com/apache/rocketmq-clients/golang/v5, pinned in compat/go/go.mod,
fetched from the Go module proxy) against the gateway's --grpc-port: producer + SimpleConsumer
(tags, keys, properties, ack; FIFO order). The SDK always speaks TLS, so the gateway runs with
--tls-cert/--tls-key. With GRPC_TARGET=proxy it runs against Apache RocketMQ 5.5's proxy instead."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from grpc_sdk import GATEWAY_ARGS, GrpcGateway, start_target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(ROOT, "compat", "go")
pytestmark = [pytest.mark.timeout(900),
              pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain (make grpc-go installs one)")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("go-grpc")
    binary = str(tmp / "rocketgrpc")
    built = subprocess.run(["go", "build", "-o", binary, "."], cwd=MODULE, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    if os.environ.get("GRPC_TARGET") == "proxy":
        target = start_target(str(tmp / "data"), {"go-normal": "NORMAL", "go-fifo": "FIFO"}, ["go-fifo-g"])
    else:
        from tests.security.certs import make_certs
        certs = make_certs(str(tmp / "certs"))
        target = GrpcGateway(str(tmp / "data"), [*GATEWAY_ARGS, "--tls-cert", certs.server_cert,
                                                 "--tls-key", certs.server_key]).start()
    env = dict(os.environ, **{"rocketmq.client.logRoot": str(tmp / "logs")})
    try:
        out = subprocess.run([binary, target.endpoints, "go"], capture_output=True, text=True, timeout=300, env=env)
    finally:
        target.stop()
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["stderr"] = out.stderr[-3000:]
    return result


def test_normal_send_receive_ack_with_tags_keys_properties(run):
    got = run["normal"] or []
    assert sorted(m["body"] for m in got) == [f"m{i}" for i in range(0, 10, 2)], run["stderr"]
    for m in got:
        n = m["body"][1:]
        assert m["tag"] == "TA" and m["keys"] == [f"k{n}"] and m["n"] == n
        assert m["id_matches"] and m["attempt"] == 1
    assert run["after_ack"] == 0


def test_fifo_in_order(run):
    got = run["fifo"] or []
    assert [m["body"] for m in got] == [str(i) for i in range(10)], run["stderr"]
    assert all(m["group"] == "order-1" and m["id_matches"] for m in got)
