"""The gateway's HTTP port (`--http-port`): an ASGI app (Starlette) served by hypercorn's trio
worker in the gateway's own event loop, so every handler reads the App between two requests of
the protocol listeners, with no locks. Routes: /metrics (Prometheus text format), /healthz (the
process is alive), /readyz (store recovered and listeners accepting; 503 otherwise and while
shutting down) and a read-only JSON API under /api/ that `gateway.admin` uses (on shard 0 of --shards,
every shard's topics and groups: gateway.ops.shard_view)."""
from __future__ import annotations

import logging

import trio
from hypercorn.config import Config as HypercornConfig, Sockets
from hypercorn.trio import serve
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

import gateway.ops.inspect as inspect
import gateway.ops.messages as messages
import gateway.ops.shard_view as shard_view
from gateway import tier_reads
from gateway.app import StartupError
from gateway.listeners import bind_failure
from gateway.ops.collector import make_registry
from gateway.ops.history import History
from gateway.ops.pages import routes as page_routes
from gateway.ops.shard_metrics import merge, scrape
from tables.metrics import TablesCollector
from tables.rest import routes as iceberg_routes

log = logging.getLogger("rocketgate.http")


def make_asgi_app(app, history: History | None = None) -> Starlette:
    registry = make_registry(app)
    registry.register(TablesCollector(app.tables))
    history = history or History(app)

    async def metrics(request):
        # Read the App on the loop (one consistent state), format the text in a worker thread:
        # with 10 000 groups the formatting is most of a scrape's cost.
        families = list(registry.collect())
        if app.config.shard_metrics:  # shard 0 of --shards: every shard's
            texts = await scrape(app.config.shard_metrics)
            families = await trio.to_thread.run_sync(merge, families, texts)
        families = _Collected(families)
        body = await trio.to_thread.run_sync(generate_latest, families)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def healthz(request):
        return PlainTextResponse("ok\n")

    async def readyz(request):
        if app.stats.ready():
            return PlainTextResponse("ready\n")
        reason = "shutting down" if app.stats.stopping else "listeners not up"
        return PlainTextResponse(f"not ready: {reason}\n", status_code=503)

    async def every_shard(*parts: str):
        return await shard_view.gather(app, history, parts)

    async def topics(request):
        if app.config.shard_metrics:  # shard 0 of --shards: every shard's queues, each on its leader
            return JSONResponse((await every_shard("topics")).topics())
        return JSONResponse(inspect.topics(app))

    async def groups(request):
        if app.config.shard_metrics:
            return JSONResponse((await every_shard("groups")).groups())
        return JSONResponse(inspect.groups(app))

    async def shard(request):
        parts = shard_view.parts_param(request.query_params.get("parts"))
        series = tuple(request.query_params.getlist("series"))[:100]
        return JSONResponse(await shard_view.local(app, history, parts, series))

    async def schemas(request):
        return JSONResponse(inspect.schemas(app))

    async def group(request):
        name = request.path_params["group"]
        if name not in app.offsets.groups():
            return JSONResponse({"error": f"group {name!r} has no committed offsets"}, status_code=404)
        if app.config.shard_metrics:
            return JSONResponse((await every_shard("groups")).lag(name))
        return JSONResponse(inspect.group_lag(app, name))

    async def delay(request):
        return JSONResponse(inspect.delay_queues(app))

    async def dlq(request):
        if app.config.shard_metrics:  # every shard's %DLQ% topics, added up per group
            merged: dict[str, int] = {}
            for row in (await every_shard("dlq")).dead_letters():
                merged[row["group"]] = merged.get(row["group"], 0) + row["messages"]
            return JSONResponse(merged)
        return JSONResponse(inspect.dead_letters(app))

    async def dlq_group(request):
        try:
            start = int(request.query_params.get("start", 0))
            limit = min(1000, int(request.query_params.get("limit", 100)))
        except ValueError:
            return JSONResponse({"error": "start and limit must be integers"}, status_code=400)
        return JSONResponse(inspect.dead_letter_page(app, request.path_params["group"], start, limit))

    async def tables_status(request):
        return JSONResponse(app.tables.status())

    async def messages_by_key(request):
        topic, key = request.query_params.get("topic"), request.query_params.get("key")
        if not topic or not key:
            return JSONResponse({"error": "topic and key are required"}, status_code=400)
        return JSONResponse(await tier_reads.read(messages.by_key, app.store, topic, key))

    async def message_by_id(request):
        msg_id = request.path_params["msg_id"]
        try:
            found = await tier_reads.read(messages.by_msg_id, app.store, msg_id)
        except ValueError:
            return JSONResponse({"error": f"{msg_id!r} is not a msgId"}, status_code=400)
        if found is None:
            return JSONResponse({"error": f"no message with msgId {msg_id}"}, status_code=404)
        return JSONResponse(found)

    return Starlette(routes=[
        Route("/metrics", metrics), Route("/healthz", healthz), Route("/readyz", readyz),
        Route("/api/shard", shard), Route("/api/topics", topics), Route("/api/groups", groups), Route("/api/groups/{group:path}", group),
        Route("/api/delay", delay), Route("/api/schemas", schemas), Route("/api/dlq", dlq), Route("/api/dlq/{group:path}", dlq_group),
        Route("/api/messages", messages_by_key), Route("/api/messages/{msg_id}", message_by_id),
        Route("/api/tables", tables_status), Mount("/iceberg", routes=iceberg_routes(app.tables)),
        *page_routes(app, history),
    ])


class _Collected:
    """Metric families already collected, in the shape generate_latest reads (a registry)."""

    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        return iter(self.families)


class _BoundConfig(HypercornConfig):
    """Hypercorn's config with the listening sockets bound beforehand (`bind_http`), so a port in
    use is a startup error, reported before the store recovers, like the protocol ports."""

    sockets: Sockets | None = None

    def create_sockets(self) -> Sockets:
        return self.sockets if self.sockets is not None else super().create_sockets()


def bind_http(config) -> _BoundConfig | None:
    """The hypercorn config with --http-port bound, None without --http-port; StartupError when the
    port cannot be bound."""
    return None if config.http_port is None else bind_port(config.host, config.http_port, "http", "--http-port")


def bind_port(host: str, port: int, what: str, flag: str, configure=None) -> _BoundConfig:
    """A hypercorn config listening on host:port (bound now; StartupError when it cannot be);
    `configure(cfg)` runs first (TLS settings decide which kind of socket hypercorn makes)."""
    cfg = _BoundConfig()
    cfg.bind = [f"{host}:{port}"]
    if configure is not None:
        configure(cfg)
    cfg.accesslog = None
    cfg.errorlog = log
    cfg.graceful_timeout = 1.0
    try:
        cfg.sockets = cfg.create_sockets()
    except OSError as exc:
        raise StartupError(f"cannot listen for {what} on {host}:{port} ({flag}): {bind_failure(exc)}") from None
    return cfg


class HttpService:
    """Serves the ASGI app until the gateway stops accepting (`app.stats.shutdown`, hypercorn's
    shutdown trigger) or the service is cancelled. `bound`: from `bind_http` (else it binds now)."""

    def __init__(self, app, bound: _BoundConfig | None = None) -> None:
        self.app = app
        self.bound = bound

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        cfg = self.bound or bind_http(self.app.config)
        history = History(self.app)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(history.run)
            binds = await nursery.start(self._serve, cfg, history, nursery.cancel_scope)
            log.info("http listener ready on %s", ", ".join(binds))
            for url in binds:  # the newcomer's way in (make run): where the dashboard is
                log.info("dashboard: %s/  metrics: %s/metrics  health: %s/healthz", url, url, url)
            task_status.started(binds)

    async def _serve(self, cfg: HypercornConfig, history: History, done: trio.CancelScope, *,
                     task_status=trio.TASK_STATUS_IGNORED) -> None:
        try:
            await serve(make_asgi_app(self.app, history), cfg, shutdown_trigger=self.app.stats.shutdown.wait,
                        task_status=task_status)
        finally:
            done.cancel()  # the server is done: the history sampler stops too
