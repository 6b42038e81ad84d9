"""What every registry endpoint shares: Confluent's content type, error bodies, flags, and the
request body read with a size limit before any parsing."""
from __future__ import annotations

import functools
import json
import logging

from starlette.responses import Response

from semantics.schema_registry import RegistryError

log = logging.getLogger("rocketgate.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY_BYTES = 2 << 20  # a larger request is refused (413) before it is read in full or parsed


class RequestTooLarge(RegistryError):
    def __init__(self) -> None:
        super().__init__(413, 41301, f"Request body larger than {MAX_BODY_BYTES} bytes")


def respond(body, status: int = 200) -> Response:
    return Response(json.dumps(body, separators=(",", ":"), ensure_ascii=False), status_code=status,
                    media_type=CONTENT_TYPE)


def raw(text: str) -> Response:
    """A schema's own text (the /schema endpoints answer it as is, not as a JSON string)."""
    return Response(text, media_type=CONTENT_TYPE)


def error(status: int, code: int, message: str) -> Response:
    return respond({"error_code": code, "message": message}, status)


def flag(request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


async def json_body(request):
    """The request's JSON body; 413 above MAX_BODY_BYTES (by Content-Length or as it streams in),
    42201 when it is not JSON (Confluent answers unparseable bodies as an invalid schema)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise RequestTooLarge()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise RequestTooLarge()
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks) or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RegistryError(422, 42201, f"Invalid JSON body: {str(exc)[:200]}") from None


def endpoint(handler):
    """A handler whose RegistryError becomes Confluent's error body; anything else is our bug: a
    50001 answer, logged with its traceback."""
    @functools.wraps(handler)
    async def run(request):
        try:
            return await handler(request)
        except RegistryError as exc:
            return error(exc.status, exc.code, exc.message)
        except Exception:  # noqa: BLE001 - the server keeps serving; the log says what broke
            log.exception("schema registry: %s %s failed", request.method, request.url.path)
            return error(500, 50001, "Error in the backend data store")
    return run
