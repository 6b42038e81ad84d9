"""KIP-714's GetTelemetrySubscriptions and PushTelemetry (semantics.client_telemetry keeps the metrics).

Kafka serves both only with a metrics reporter that accepts client telemetry; the gateway always
does, with the subscription of --kafka-telemetry-metrics and --kafka-telemetry-interval-ms."""
from __future__ import annotations

from codec.kafka import apis
from gateway.kafka.registry import handler
from semantics.client_telemetry import PushError


@handler(apis.GET_TELEMETRY_SUBSCRIPTIONS)
async def get_telemetry_subscriptions(ctx):
    body = ctx.app.kafka.telemetry.subscription(ctx.request["client_instance_id"], ctx.client_id)
    return {"throttle_time_ms": 0, **body}


@handler(apis.PUSH_TELEMETRY)
async def push_telemetry(ctx):
    r = ctx.request
    try:
        ctx.app.kafka.telemetry.push(r["client_instance_id"], r["subscription_id"], r["terminating"],
                                     r["compression_type"], r["metrics"] or b"")
    except PushError as exc:
        return {"throttle_time_ms": 0, "error_code": exc.code}
    return {"throttle_time_ms": 0, "error_code": 0}
