"""The MessagingService method table: each RPC module registers its handlers with `@rpc`; this
wraps them for the transport (decode the request, encode the responses, turn RpcError into the
response's Status) and answers UNIMPLEMENTED for the rest.

Handler shapes: unary `async fn(ctx, request) -> response`; server streaming `async fn(ctx,
request, send)` (send(response) per message); bidi `async fn(ctx, call)` (reads call.receive()).
"""
from __future__ import annotations

import dataclasses
import time

from google.protobuf.message import DecodeError

import gateway.grpc.lite  # noqa: F401  (SyncLiteSubscription)
import gateway.grpc.offsets  # noqa: F401  (registers PullMessage, UpdateOffset, GetOffset, QueryOffset)
import gateway.grpc.recall  # noqa: F401  (RecallMessage)
import gateway.grpc.receive  # noqa: F401  (ReceiveMessage, AckMessage, ChangeInvisibleDuration, ...)
import gateway.grpc.route  # noqa: F401  (QueryRoute, Heartbeat, QueryAssignment, NotifyClientTermination)
import gateway.grpc.send  # noqa: F401  (SendMessage, EndTransaction)
import gateway.grpc.telemetry  # noqa: F401  (Telemetry)
from codec.grpc import StatusCode
from gateway.grpc import auth
from gateway.grpc.common import OK_CODE, RPCS, SERVICE, RpcError, s, status
from gateway.grpc.transport import CallEnded


@dataclasses.dataclass
class Context:
    """What a handler gets besides its request: the App and the call (metadata, client id)."""
    app: object
    call: object

    @property
    def client_id(self) -> str:
        return self.call.client_id


def _decode(cls, payload: bytes):
    msg = cls()
    try:
        msg.ParseFromString(payload)
    except DecodeError as exc:
        raise CallEnded(StatusCode.INTERNAL, f"cannot decode {cls.__name__}: {exc}") from None
    return msg


def _wrap(app, kind: str, fn, method):
    req_cls = getattr(s, method.input_type.name)
    resp_cls = getattr(s, method.output_type.name)

    if kind == "bidi":
        async def bidi(call):
            checked = auth.guard_stream(app, call)  # --authorizer acl: each command is checked
            await fn(Context(app, checked), checked)
        return bidi

    async def serve(call) -> bool:
        """True when the answer's Status is not OK (the call counts as an error in /metrics)."""
        call.defer_flush = True
        request = _decode(req_cls, await call.receive_one())
        ctx = Context(app, call)
        try:
            auth.check(app, call, request)  # --authorizer acl: signature and ACLs, as the proxy checks
            if kind == "unary":
                response = await fn(ctx, request)
                await call.send(response.SerializeToString())
                return response.status.code != OK_CODE
            else:  # the responses go out together when the method is done: fewer, fuller DATA frames
                responses = []

                async def send(response):
                    responses.append(response.SerializeToString())
                try:
                    await fn(ctx, request, send)
                finally:
                    await call.send_many(responses)
                return False
        except RpcError as exc:
            await call.send(resp_cls(status=status(exc.code, exc.message)).SerializeToString())
            return True
    return serve


def _observed(app, name: str, handler):
    """Counts each call in /metrics as protocol "grpc", request <method name>: its time from the
    request's headers to its answer (a Telemetry stream: its whole life) and whether it failed (a
    Status other than OK, a gRPC error status, a bug)."""
    requests = app.stats.requests

    async def observed(call):
        began, failed = time.perf_counter(), True
        try:
            failed = bool(await handler(call))
        finally:
            requests.observe("grpc", name, time.perf_counter() - began, failed)
    return observed


# The SDKs export their client metrics (OpenTelemetry OTLP) to the endpoints the Settings name.
OTLP_METRICS_EXPORT = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"


async def drop_metrics(call) -> None:
    """Accept an OTLP metrics export and drop it (an empty ExportMetricsServiceResponse)."""
    await call.receive_one()
    await call.send(b"")


def methods(app) -> dict:
    """"/apache.rocketmq.v2.MessagingService/<Name>" -> transport handler."""
    service = s.DESCRIPTOR.services_by_name["MessagingService"]
    table = {OTLP_METRICS_EXPORT: drop_metrics}
    for method in service.methods:
        entry = RPCS.get(method.name)
        if entry is not None:
            table[f"/{SERVICE}/{method.name}"] = _observed(app, method.name, _wrap(app, entry[0], entry[1], method))
    return table
