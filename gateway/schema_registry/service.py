"""Serves the registry's REST API on `--schema-registry-port`: a Starlette app on hypercorn's trio
worker in the gateway's own loop (as the HTTP port, gateway/ops/http.py), so handlers read and write the
registry between two requests of the protocol listeners, with no locks beyond the registry's writer."""
from __future__ import annotations

import logging

import trio
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.exceptions import HTTPException

import gateway.schema_registry.settings as settings
import gateway.schema_registry.subjects as subjects
from gateway.ops.http import bind_port
from gateway.schema_registry.common import BufferedBody, error

log = logging.getLogger("rocketgate.schema_registry")


def make_asgi_app(registry) -> BufferedBody:
    async def http_error(request, exc: HTTPException):
        # Unknown paths and methods: Confluent's Jersey answers them with the status as error_code.
        return error(exc.status_code, exc.status_code, f"HTTP {exc.status_code} {exc.detail}")

    app = Starlette(routes=[*subjects.routes(registry), *settings.routes(registry)],
                    exception_handlers={HTTPException: http_error})
    return BufferedBody(app)


def bind_schema_registry(config):
    """The bound hypercorn config of --schema-registry-port, None when the registry is off."""
    if config.schema_registry_port is None:
        return None
    return bind_port(config.host, config.schema_registry_port, "the schema registry")


class SchemaRegistryService:
    def __init__(self, app, bound) -> None:
        self.app = app
        self.bound = bound

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(self._serve)
            log.info("schema registry listener ready on %s", ", ".join(binds))
            task_status.started(binds)

    async def _serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await serve(make_asgi_app(self.app.schema_registry), self.bound,
                    shutdown_trigger=self.app.stats.shutdown.wait, task_status=task_status)
