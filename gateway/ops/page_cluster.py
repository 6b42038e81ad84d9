"""The cluster: partitions with leaders, replicas and ISR, and the gateways serving them."""
from __future__ import annotations

from starlette.routing import Route


def routes(console) -> list[Route]:
    return []
