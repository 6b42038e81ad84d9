"""A real gateway process with --schema-registry-port, and its registry's URL."""
from __future__ import annotations

import pytest

from gateway_process import free_port, wait_port


class RegistryGateway:
    def __init__(self, gateway, port: int) -> None:
        self.gateway, self.port = gateway, port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def restart(self, kill9: bool = False) -> None:
        if kill9:
            self.gateway.kill9()
            self.gateway.start()
        else:
            self.gateway.restart()
        wait_port(self.port)


@pytest.fixture
def registry_gateway(gateway_factory) -> RegistryGateway:
    port = free_port()
    g = gateway_factory(extra_args=["--schema-registry-port", str(port)])
    wait_port(port)
    return RegistryGateway(g, port)
