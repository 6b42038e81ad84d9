"""Serves the registry's REST API on `--schema-registry-port`: a Starlette app on hypercorn's trio
worker in the gateway's own loop (as the HTTP port, gateway/ops/http.py), so handlers read and write the
registry between two requests of the protocol listeners, with no locks beyond the registry's writer."""
from __future__ import annotations

import logging
import ssl

import trio
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.exceptions import HTTPException

import gateway.schema_registry.settings as settings
import gateway.schema_registry.subjects as subjects
from gateway.app import StartupError
from gateway.ops.http import bind_port
from gateway.schema_registry.access import Access, Authenticate
from gateway.schema_registry.common import BufferedBody, error
from gateway.schema_registry.forward import ForwardToLeader
from gateway.schema_registry.lookup import LeaderLookup

log = logging.getLogger("rocketgate.schema_registry")


def make_asgi_app(gateway_app) -> BufferedBody:
    """The registry's ASGI app: bodies read whole, then forwarded to the `_schemas` leader in a cluster
    (gateway.schema_registry.forward), then authenticated and routed here."""
    registry, access = gateway_app.schema_registry, Access(gateway_app)

    async def http_error(request, exc: HTTPException):
        # Unknown paths and methods: Confluent's Jersey answers them with the status as error_code.
        return error(exc.status_code, exc.status_code, f"HTTP {exc.status_code} {exc.detail}")

    app = Starlette(routes=[*subjects.routes(registry, access), *settings.routes(registry, access)],
                    exception_handlers={HTTPException: http_error})
    return BufferedBody(ForwardToLeader(Authenticate(app, access, error), gateway_app))


def bind_schema_registry(config):
    """The bound hypercorn config of --schema-registry-port, None when the registry is off."""
    if config.schema_registry_port is None:
        return None
    if config.schema_registry_tls and not (config.tls_cert and config.tls_key):
        raise StartupError("--schema-registry-tls needs --tls-cert and --tls-key")

    def tls(cfg) -> None:  # hypercorn serves TLS on the sockets it binds once certfile is set
        if config.schema_registry_tls:
            cfg.certfile, cfg.keyfile = config.tls_cert, config.tls_key
            if config.tls_ca:
                cfg.ca_certs, cfg.verify_mode = config.tls_ca, ssl.CERT_REQUIRED
    return bind_port(config.host, config.schema_registry_port, "the schema registry", "--schema-registry-port", tls)


class SchemaRegistryService:
    def __init__(self, app, bound) -> None:
        self.app = app
        self.bound = bound
        if getattr(app.ownership, "clustered", False):  # ids this gateway lacks are asked of the leader
            app.schema_validation.fetch_ids = LeaderLookup(app)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(self._serve)
            log.info("schema registry listener ready on %s", ", ".join(binds))
            task_status.started(binds)

    async def _serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await serve(make_asgi_app(self.app), self.bound,
                    shutdown_trigger=self.app.stats.shutdown.wait, task_status=task_status)
