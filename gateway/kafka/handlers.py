"""Kafka request dispatch: `handle(conn, header, payload)` answers one request with a frame.

ApiVersions is answered here (it has its own version fallback); every other API by its handler
in `HANDLERS`, filled by the per-family modules imported below.
"""
from __future__ import annotations

import gateway.kafka.access as access
import gateway.kafka.errors as errors
import gateway.kafka.features as features  # also UpdateFeatures
import gateway.kafka.topics as topic_names
from codec.kafka import apis, protocol
import gateway.kafka.admin  # noqa: F401  (each family module fills HANDLERS)
import gateway.kafka.configs  # noqa: F401
import gateway.kafka.consumer_groups  # noqa: F401
import gateway.kafka.delegation_tokens  # noqa: F401
import gateway.kafka.describe_producers  # noqa: F401
import gateway.kafka.fetch  # noqa: F401
import gateway.kafka.groups  # noqa: F401
import gateway.kafka.leader_epochs  # noqa: F401
import gateway.kafka.list_offsets  # noqa: F401
import gateway.kafka.log_dirs  # noqa: F401
import gateway.kafka.metadata  # noqa: F401
import gateway.kafka.partitions  # noqa: F401
import gateway.kafka.produce  # noqa: F401
import gateway.kafka.quorum  # noqa: F401
import gateway.kafka.quotas  # noqa: F401
import gateway.kafka.sasl  # noqa: F401
import gateway.kafka.security_admin  # noqa: F401
import gateway.kafka.share_fetch  # noqa: F401
import gateway.kafka.share_groups  # noqa: F401
import gateway.kafka.streams_groups  # noqa: F401
import gateway.kafka.telemetry  # noqa: F401
import gateway.kafka.transactions_admin  # noqa: F401
import gateway.kafka.txn  # noqa: F401
from gateway.kafka.registry import HANDLERS, RequestContext

__all__ = ["HANDLERS", "handle"]


async def handle(conn, header, payload) -> bytes | None:
    """The response frame for one request, or None when nothing is sent back."""
    key, version = header.api_key, header.api_version
    if key == apis.API_VERSIONS.key:
        return api_versions_frame(header)
    fn = HANDLERS.get(key)
    if fn is None:
        return None
    api = apis.BY_KEY[key]
    if not api.min_version <= version <= api.max_version:
        clamped = min(max(version, api.min_version), api.max_version)
        return protocol.response_frame(key, clamped, header.correlation_id,
                                       {"error_code": errors.UNSUPPORTED_VERSION})
    ctx = RequestContext(conn.app, version, protocol.decode_request(header, payload), conn.client_id,
                         conn.peer_host, conn.local_port, getattr(conn, "principal", "User:ANONYMOUS"), conn)
    topic_names.name_topics_by_id(conn.app, key, version, ctx.request)
    topics = conn.app.store.topics
    changed_before = topics.submission
    body = await access.guarded(key, fn, ctx)
    if topics.submission != changed_before:  # a topic was created, changed or deleted: durable first
        await conn.app.topics_written()
    if body is None:
        return None
    return protocol.response_frame(key, version, header.correlation_id, body)


def api_versions_frame(header) -> bytes:
    """Our version table; an unknown ApiVersions version gets the v0 answer with error 35 (KIP-511)."""
    table = [{"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version} for a in apis.ALL]
    table.sort(key=lambda e: e["api_key"])
    version = header.api_version
    if not protocol.supported(apis.API_VERSIONS.key, version):
        return protocol.response_frame(apis.API_VERSIONS.key, 0, header.correlation_id,
                                       {"error_code": errors.UNSUPPORTED_VERSION, "api_keys": table})
    body = {"error_code": errors.NONE, "api_keys": table}
    if version >= 3:
        body.update(features.api_versions_features(version))
    return protocol.response_frame(apis.API_VERSIONS.key, version, header.correlation_id, body)
