"""Schema ids for broker-side validation on a gateway whose copy of `_schemas` lacks them (no replica
in a cluster, or a lagging one): asked of the registry leader by id (`GET /schemas/ids/{id}` and
`.../versions`, and `GET /subjects/{s}/versions/{v}` for each schema its references reach, so it parses
here), as Confluent Server's broker asks its registry. semantics.schema_validation caches the
answers; this module only fetches them. In a secured cluster the requests carry the inter-broker
credential (gateway.schema_registry.access lets it read every subject)."""
from __future__ import annotations

import logging
from urllib.parse import quote

import httpx

from gateway.schema_registry.access import basic_header
from gateway.schema_registry.forward import FORWARDED, base_url, leader_of, registry_client
from semantics.schema_registry.references import MAX_DEPTH
from semantics.schema_registry.state import Schema

log = logging.getLogger("rocketgate.schema_registry")
TIMEOUT_S = 3.0  # a produce waits on this: well inside a producer's request timeout (30 s by default)
MAX_REFERENCES = 16  # referenced schemas fetched for one id (each a request the produce waits on)


class LeaderLookup:
    """`await lookup(ids)` -> {id: (Schema, frozenset of its live subjects, {reference name: schema
    text} of every schema its references reach) | None (the leader has no such id)}; ids it could not
    ask about are left out (they stay unknown, refused)."""

    def __init__(self, gateway_app) -> None:
        self.gateway = gateway_app
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, ids: list[int]) -> dict[int, tuple | None]:
        forward, leader = leader_of(self.gateway)
        if not forward or leader is None or not leader.schema_registry_port:
            return {}  # this gateway leads (its own state is the answer) or no leader serves now
        if self._client is None:
            self._client = registry_client(self.gateway.config, TIMEOUT_S)
        base, headers = base_url(self.gateway.config, leader), {FORWARDED.decode(): "1"}
        if self.gateway.config.inter_broker is not None:  # a secured cluster: the leader wants credentials
            headers["authorization"] = basic_header(self.gateway.config.inter_broker)
        out: dict[int, tuple | None] = {}
        for schema_id in ids:
            try:
                found = await self._client.get(f"{base}/schemas/ids/{schema_id}", headers=headers)
                if found.status_code == 404:
                    out[schema_id] = None
                    continue
                uses = await self._client.get(f"{base}/schemas/ids/{schema_id}/versions", headers=headers)
                if found.status_code != 200 or uses.status_code != 200:
                    log.warning("schema validation: the registry leader answered %d/%d for id %d",
                                found.status_code, uses.status_code, schema_id)
                    continue
                schema = _schema(schema_id, found.json())
                refs = await self._references(base, headers, schema.references, {}, (), 0)
                out[schema_id] = schema, frozenset(u["subject"] for u in uses.json()), refs
            except httpx.HTTPError as exc:  # the leader is unreachable or slow: ask about no more ids now
                log.warning("schema validation: asking the registry leader about id %d failed: %s", schema_id, exc)
                break
            except (ValueError, TypeError, KeyError) as exc:
                log.warning("schema validation: the registry leader's answer about id %d is unreadable: %s",
                            schema_id, exc)
        return out


    async def _references(self, base: str, headers: dict, refs: tuple, resolved: dict, path: tuple,
                          depth: int) -> dict[str, str]:
        """name -> schema text of every schema `refs` reach, fetched from the leader (deleted versions
        too, as semantics.schema_registry.references resolves them); ValueError when one cannot be had."""
        if depth > MAX_DEPTH:
            raise ValueError(f"references nest deeper than {MAX_DEPTH}")
        for name, subject, version in refs:
            if (subject, version) in path:
                raise ValueError(f"circular reference through {subject} version {version}")
            if len(resolved) >= MAX_REFERENCES:
                raise ValueError(f"more than {MAX_REFERENCES} referenced schemas")
            got = await self._client.get(f"{base}/subjects/{quote(subject, safe='')}/versions/{version}",
                                         params={"deleted": "true"}, headers=headers)
            if got.status_code != 200:
                raise ValueError(f"reference {name!r} ({subject} version {version}): answered {got.status_code}")
            body = got.json()
            await self._references(base, headers, _refs(body), resolved, path + ((subject, version),), depth + 1)
            resolved.setdefault(name, body["schema"])
        return resolved


def _refs(body: dict) -> tuple:
    return tuple((r["name"], r["subject"], r["version"]) for r in body.get("references") or ())


def _schema(schema_id: int, body: dict) -> Schema:
    return Schema(schema_id, body["schema"], body.get("schemaType", "AVRO"), _refs(body))
