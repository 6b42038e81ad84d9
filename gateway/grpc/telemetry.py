"""Telemetry (bidirectional): the client sends its Settings first and the gateway answers with the
settings it applies (retry policy, batch size, long-polling timeout, body size limit); then the
stream carries server commands, e.g. RecoverOrphanedTransactionCommand for the transaction
check-back (`check_transaction`, registered with semantics.transactions), and the client's
results. A stream that sends no Settings within SETTINGS_WAIT ends with INVALID_ARGUMENT."""
from __future__ import annotations

import logging
import random

import trio
from google.protobuf.message import DecodeError

from codec.grpc import StatusCode
from gateway.grpc.common import TELEMETRY_QUEUE, d, ok, rpc, s
from gateway.grpc.messages import to_pb
from gateway.grpc.route import endpoints as endpoints_of
from gateway.grpc.transport import CallEnded
from semantics import lite, routing

log = logging.getLogger("rocketgate.grpc")

SETTINGS_WAIT = 30.0
RECEIVE_BATCH = 32
CONSUMER_MAX_ATTEMPTS = 17  # first delivery + 16 retries, then the DLQ (RocketMQ's default)


def _decode(payload: bytes):
    command = s.TelemetryCommand()
    try:
        command.ParseFromString(payload)
    except DecodeError as exc:
        raise CallEnded(StatusCode.INTERNAL, f"cannot decode TelemetryCommand: {exc}") from None
    return command


def applied_settings(app, client, endpoints):
    """The client's Settings completed with what the gateway applies. Push consumers get metrics
    on, exported to the gateway itself (which drops them, gateway.grpc.service): the Python SDK's
    push consumer fails without a metrics provider."""
    out = d.Settings()
    out.CopyFrom(client)
    if client.client_type in (d.ClientType.PUSH_CONSUMER, d.ClientType.LITE_PUSH_CONSUMER):
        out.metric.on = True
        out.metric.endpoints.CopyFrom(endpoints)
    producer = client.client_type == d.ClientType.PRODUCER
    if not out.HasField("backoff_policy") or not out.backoff_policy.WhichOneof("strategy"):
        policy = out.backoff_policy
        policy.max_attempts = policy.max_attempts or (3 if producer else CONSUMER_MAX_ATTEMPTS)
        policy.exponential_backoff.initial.FromSeconds(1)
        policy.exponential_backoff.max.FromSeconds(60)
        policy.exponential_backoff.multiplier = 2.0
    if producer:
        out.publishing.max_body_size = app.config.max_message_bytes
        out.publishing.validate_message_type = True  # as the 5.5 proxy: the SDK checks the route's types
    elif out.HasField("subscription"):
        sub = out.subscription
        sub.receive_batch_size = sub.receive_batch_size or RECEIVE_BATCH
        if not sub.HasField("long_polling_timeout"):
            sub.long_polling_timeout.FromMilliseconds(app.config.grpc_long_polling_ms)
        if client.client_type == d.ClientType.LITE_PUSH_CONSUMER:  # as the 5.5 proxy: the group's quota
            sub.lite_subscription_quota = app.subscription_groups.quota(sub.group.name)
            sub.max_lite_topic_size = lite.MAX_LITE_TOPIC_SIZE
    return out


@rpc("Telemetry", "bidi")
async def telemetry(ctx, call):
    app = ctx.app
    session = app.grpc.session(ctx.client_id)
    commands, outbound = trio.open_memory_channel(TELEMETRY_QUEUE)
    first = None
    with trio.move_on_after(SETTINGS_WAIT):
        payload = await call.receive()
        if payload is None:
            return
        first = _decode(payload)
    if first is None or first.WhichOneof("command") != "settings":
        raise CallEnded(StatusCode.INVALID_ARGUMENT, "the Telemetry stream must begin with the client's Settings")
    await _on_command(ctx, session, call, first)
    session.commands = commands
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write_commands, call, outbound)
            while (payload := await call.receive()) is not None:
                await _on_command(ctx, session, call, _decode(payload))
            nursery.cancel_scope.cancel()
    finally:
        if session.commands is commands:  # the client's last stream: forget it
            session.commands = None
            app.grpc.clients.pop(session.client_id, None)


async def _write_commands(call, outbound) -> None:
    async for command in outbound:
        await call.send(command.SerializeToString())


async def _on_command(ctx, session, call, command) -> None:
    app = ctx.app
    kind = command.WhichOneof("command")
    if kind == "settings":
        endpoints = endpoints_of(ctx, command.settings.access_point if command.settings.HasField("access_point") else None)
        if command.settings.client_type == d.ClientType.LITE_SIMPLE_CONSUMER:
            # as the 5.5.0 proxy, which serves lite topics to push consumers only (docs/mapping.md)
            raise CallEnded(StatusCode.INTERNAL, "process client telemetryCommand failed. "
                            "Client type is not consumer, type: LITE_SIMPLE_CONSUMER")
        refused = _unbound_lite_group(app, command.settings)
        if refused:  # as the 5.5 proxy: the stream ends, the SDK's start fails
            raise CallEnded(StatusCode.INVALID_ARGUMENT, refused)
        session.settings = command.settings
        if command.settings.HasField("subscription"):
            session.group = command.settings.subscription.group.name
        reply = s.TelemetryCommand(status=ok(), settings=applied_settings(app, command.settings, endpoints))
        await call.send(reply.SerializeToString())
    elif kind is not None:
        log.debug("telemetry %s from client %s", kind, session.client_id)


def _unbound_lite_group(app, settings) -> str | None:
    """Why a lite push consumer's group may not consume its topic (the group's lite.bind.topic is not
    that topic, or not set: RocketMQ 5.5 serves a lite group only its bound parent topic), or None."""
    if settings.client_type != d.ClientType.LITE_PUSH_CONSUMER or not settings.HasField("subscription"):
        return None
    group = settings.subscription.group.name
    bound = app.subscription_groups.get(group, "lite.bind.topic")
    topics = {entry.topic.name for entry in settings.subscription.subscriptions}
    if not bound or (topics and topics != {bound}):
        return f"lite group {group} is bound to topic [{bound}], not {sorted(topics)}"
    return None


async def check_transaction(app, producer_group: str, half, body: bytes) -> bool:
    """Transaction checker: a RecoverOrphanedTransactionCommand to one live gRPC producer that
    publishes the half's topic; False when there is none (another checker may know the group)."""
    topic = half.properties.get(routing.PROPERTY_REAL_TOPIC) or half.topic
    sessions = [c for c in app.grpc.clients.values()
                if c.commands is not None and c.is_producer and topic in c.publishing_topics]
    if not sessions:
        return False
    try:
        qid = int(half.properties.get(routing.PROPERTY_REAL_QID, "0"))
    except ValueError:
        qid = 0
    message = to_pb(half, topic=topic, queue_id=qid)
    command = s.TelemetryCommand(recover_orphaned_transaction_command=s.RecoverOrphanedTransactionCommand(
        message=message, transaction_id=f"{half.queue_offset}:{half.physical_offset}"))
    try:
        random.choice(sessions).commands.send_nowait(command)
    except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
        return False
    return True
