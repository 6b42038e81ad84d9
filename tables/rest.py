"""The Iceberg REST catalog facade (the Iceberg REST OpenAPI spec, read-only) over the table topics'
catalog: the gateway mounts `routes(service)` at /iceberg on its HTTP port, so the catalog URI is
`http://HOST:HTTP_PORT/iceberg`. One namespace, `rocketgate`; a table per table topic (and its
`~dlq` table). Loading a table answers its current metadata location and metadata (read from the
metadata file, which never changes once written) and, as its `config`, how to reach the warehouse
(tables.warehouse: the tier's S3 endpoint, addressing, region, credentials when vended).
Writes through the REST API are refused: the gateway is the only writer."""
from __future__ import annotations

from urllib.parse import unquote

import trio
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tables.names import NAMESPACE
MAX_CACHED = 256


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def routes(service) -> list[Route]:
    cache: dict[str, dict] = {}

    def namespace_ok(request) -> bool:
        return unquote(request.path_params["namespace"]) == NAMESPACE

    async def config(request):
        return JSONResponse({"defaults": {}, "overrides": {}})

    async def namespaces(request):
        parent = request.query_params.get("parent")
        return JSONResponse({"namespaces": [] if parent else [[NAMESPACE]]})

    async def namespace(request):
        if not namespace_ok(request):
            return _error(404, "NoSuchNamespaceException", f"Namespace does not exist: {request.path_params['namespace']}")
        if request.method == "HEAD":
            return Response(status_code=204)
        return JSONResponse({"namespace": [NAMESPACE], "properties": {}})

    async def list_tables(request):
        if not namespace_ok(request):
            return _error(404, "NoSuchNamespaceException", f"Namespace does not exist: {request.path_params['namespace']}")
        names = await service.table_names()
        return JSONResponse({"identifiers": [{"namespace": [NAMESPACE], "name": n} for n in names]})

    async def list_views(request):
        return JSONResponse({"identifiers": []})

    async def load_table(request):
        name = request.path_params["table"]
        try:
            location = await service.location(name) if namespace_ok(request) else None
        except Exception as exc:  # noqa: BLE001 - the bucket unreachable
            return _error(503, "ServiceUnavailableException", f"the catalog cannot be read: {exc}")
        if location is None:
            return _error(404, "NoSuchTableException", f"Table does not exist: {NAMESPACE}.{name}")
        if request.method == "HEAD":
            return Response(status_code=204)
        metadata = cache.get(location)
        if metadata is None:
            try:
                metadata = await trio.to_thread.run_sync(service.read_metadata, location)
            except Exception as exc:  # noqa: BLE001 - OSError, bad JSON, the bucket unreachable
                return _error(500, "ServiceFailureException", f"metadata of {name} cannot be read: {exc}")
            if len(cache) >= MAX_CACHED:
                cache.clear()
            cache[location] = metadata
        return JSONResponse({"metadata-location": location, "metadata": metadata,
                             "config": service.reader_config()})

    async def read_only(request):
        return _error(403, "ForbiddenException", "the rocketgate catalog is read-only: tables are written by "
                                                 "the gateway for table topics (topic config iceberg.mode)")

    writes = ["POST", "DELETE", "PUT"]
    return [
        Route("/v1/config", config),
        Route("/v1/namespaces", namespaces),
        Route("/v1/namespaces", read_only, methods=["POST"]),
        Route("/v1/namespaces/{namespace}", namespace, methods=["GET", "HEAD"]),
        Route("/v1/namespaces/{namespace}", read_only, methods=writes),
        Route("/v1/namespaces/{namespace}/properties", read_only, methods=["POST"]),
        Route("/v1/namespaces/{namespace}/tables", list_tables),
        Route("/v1/namespaces/{namespace}/tables", read_only, methods=["POST"]),
        Route("/v1/namespaces/{namespace}/views", list_views),
        Route("/v1/namespaces/{namespace}/tables/{table}", load_table, methods=["GET", "HEAD"]),
        Route("/v1/namespaces/{namespace}/tables/{table}", read_only, methods=writes),
        Route("/v1/tables/rename", read_only, methods=["POST"]),
        Route("/v1/transactions/commit", read_only, methods=["POST"]),
    ]

