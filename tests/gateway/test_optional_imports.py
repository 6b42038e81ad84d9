"""A gateway without the optional features switched on does not load their libraries (each start of
the test suite's 1000+ paid ~1 s of CPU for them): the RocketMQ SDK, grpc and opentelemetry
(--grpc-port), the web stack (--http-port, --schema-registry-port), httpx (--cluster), numpy, scramp."""
from __future__ import annotations

import subprocess
import sys

from gateway_process import ROOT

OPTIONAL = ("rocketmq", "grpc", "opentelemetry", "google.protobuf", "hypercorn", "starlette",
            "prometheus_client", "httpx", "numpy", "fastavro", "scramp")


def test_importing_the_gateway_loads_no_optional_library():
    probe = ("import sys, gateway.__main__, gateway.app, gateway.services\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules if m.startswith({OPTIONAL!r})}}))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_running_gateway_maps_no_grpc_or_numpy_library(gateway):
    """The whole start (store, services, listeners) of a plain gateway, seen from its memory map."""
    with open(f"/proc/{gateway.proc.pid}/maps") as f:
        libraries = {line.split()[-1] for line in f if ".so" in line}
    assert not [path for path in libraries if "cygrpc" in path or "/numpy/" in path or "_upb" in path]
