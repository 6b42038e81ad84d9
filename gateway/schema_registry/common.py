"""What every registry endpoint shares: Confluent's content type, error bodies, flags, and the
request body read with a size limit before any parsing."""
from __future__ import annotations

import functools
import json
import logging
from urllib.parse import quote, unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.responses import Response

from semantics.schema_registry import RegistryError

log = logging.getLogger("rocketgate.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY_BYTES = 2 << 20  # a larger request is refused (413) before it is read in full or parsed


class RequestTooLarge(RegistryError):
    def __init__(self) -> None:
        super().__init__(413, 41301, f"Request body larger than {MAX_BODY_BYTES} bytes")


class Segment(Convertor):
    """`{name:segment}`: one path segment, percent-decoded only after routing, so a subject with a '/'
    (sent as %2F by every client) is one segment and not two (routes match `undecoded_path`)."""
    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return unquote(value)

    def to_string(self, value: str) -> str:
        return quote(str(value), safe="")


register_url_convertor("segment", Segment())


def undecoded_path(scope) -> str:
    """The request path as the client sent it (ASGI's `path` is already percent-decoded)."""
    raw = scope.get("raw_path")
    if not raw:
        return scope["path"]
    return raw.split(b"?", 1)[0].decode("latin-1")


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
    """The request's JSON body (already read whole by `BufferedBody`); 42201 when it is not JSON
    (Confluent answers unparseable bodies as an invalid schema)."""
    try:
        return json.loads(await request.body() or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RegistryError(422, 42201, f"Invalid JSON body: {str(exc)[:200]}") from None


class BufferedBody:
    """ASGI middleware: every request body is read whole before routing, so a body above MAX_BODY_BYTES
    is refused (413) before anything parses it, and a body no handler reads (a wrong method, a GET with a
    body) is consumed all the same: the connection stays usable for the client's next request. Routing
    sees the undecoded path (see `Segment`)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"")
        chunks, size, more = [], 0, True
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            more = False
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False) and size <= MAX_BODY_BYTES
        if size > MAX_BODY_BYTES or (declared.isdigit() and int(declared) > MAX_BODY_BYTES):
            too_large = RequestTooLarge()
            return await error(too_large.status, too_large.code, too_large.message)(scope, receive, send)
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
        scope = dict(scope, path=undecoded_path(scope))  # routes decode their own segments

        async def replay():  # the whole body once, then the client's own messages (a disconnect)
            return pending.pop() if pending else await receive()
        await self.app(scope, replay, send)


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
