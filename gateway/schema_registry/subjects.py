"""Subjects and schemas: /subjects..., /schemas/...: register, look up, read and delete."""
from __future__ import annotations

from starlette.routing import Route

import semantics.schema_registry.errors as err
from gateway.schema_registry.common import endpoint, flag, json_body, raw, respond
from semantics.schema_formats import FORMATS


def version_body(v) -> dict:
    out = {"subject": v.subject, "version": v.version, "id": v.id}
    return out | schema_body(v.schema)


def schema_body(schema) -> dict:
    out = {}
    if schema.schema_type != "AVRO":
        out["schemaType"] = schema.schema_type
    if schema.references:
        out["references"] = [{"name": n, "subject": s, "version": ver} for n, s, ver in schema.references]
    out["schema"] = schema.schema
    return out


def _schema_id(request) -> int:
    text = request.path_params["id"]
    if not text.isdigit() or len(text) > 10:
        raise err.schema_not_found(text)
    return int(text)


def routes(registry) -> list[Route]:
    @endpoint
    async def subjects(request):
        names = registry.fresh().subject_names(flag(request, "deleted"))
        prefix = request.query_params.get("subjectPrefix")
        return respond([n for n in names if prefix is None or n.startswith(prefix)])

    @endpoint
    async def versions(request):
        found = registry.subject_versions(request.path_params["subject"], flag(request, "deleted"))
        return respond([v.version for v in found])

    @endpoint
    async def register(request):
        body = await json_body(request)
        v = await registry.register(request.path_params["subject"], body, flag(request, "normalize"))
        return respond({"id": v.id, "version": v.version} | schema_body(v.schema))

    @endpoint
    async def version(request):
        v = registry.get_version(request.path_params["subject"], request.path_params["version"],
                                 flag(request, "deleted"))
        return respond(version_body(v))

    @endpoint
    async def delete_version(request):
        return respond(await registry.delete_version(request.path_params["subject"], request.path_params["version"],
                                                     flag(request, "permanent")))

    @endpoint
    async def version_schema(request):
        v = registry.get_version(request.path_params["subject"], request.path_params["version"],
                                 flag(request, "deleted"))
        return raw(v.schema.schema)

    @endpoint
    async def referenced_by(request):
        v = registry.get_version(request.path_params["subject"], request.path_params["version"], deleted=True)
        return respond(registry.state.referenced_by(v.subject, v.version))

    @endpoint
    async def lookup(request):
        body = await json_body(request)
        v = registry.lookup(request.path_params["subject"], body, flag(request, "normalize"), flag(request, "deleted"))
        return respond(version_body(v))

    @endpoint
    async def delete_subject(request):
        return respond(await registry.delete_subject(request.path_params["subject"], flag(request, "permanent")))

    def _by_id(request):
        schema = registry.schema_by_id(_schema_id(request))
        if schema is None:
            raise err.schema_not_found(request.path_params["id"])
        return schema

    @endpoint
    async def schema_by_id(request):
        return respond(schema_body(_by_id(request)))

    @endpoint
    async def schema_text_by_id(request):
        return raw(_by_id(request).schema)

    @endpoint
    async def id_versions(request):
        schema = _by_id(request)
        uses = registry.state.uses_of(schema.id, flag(request, "deleted"))
        return respond([{"subject": v.subject, "version": v.version} for v in uses])

    @endpoint
    async def id_subjects(request):
        schema = _by_id(request)
        uses = registry.state.uses_of(schema.id, flag(request, "deleted"))
        return respond(sorted({v.subject for v in uses}))

    @endpoint
    async def schemas(request):
        state = registry.fresh()
        prefix = request.query_params.get("subjectPrefix") or ""
        deleted, latest_only = flag(request, "deleted"), flag(request, "latestOnly")
        out = []
        for name in state.subject_names(deleted):
            if name.startswith(prefix):
                found = state.versions(name, deleted)
                out += [version_body(v) for v in (found[-1:] if latest_only else found)]
        return respond(out)

    @endpoint
    async def types(request):
        return respond(sorted(FORMATS, reverse=True))

    @endpoint
    async def root(request):
        return respond({})

    return [
        Route("/", root, methods=["GET"]),
        Route("/subjects", subjects, methods=["GET"]),
        Route("/subjects/{subject}", lookup, methods=["POST"]),
        Route("/subjects/{subject}", delete_subject, methods=["DELETE"]),
        Route("/subjects/{subject}/versions", versions, methods=["GET"]),
        Route("/subjects/{subject}/versions", register, methods=["POST"]),
        Route("/subjects/{subject}/versions/{version}", version, methods=["GET"]),
        Route("/subjects/{subject}/versions/{version}", delete_version, methods=["DELETE"]),
        Route("/subjects/{subject}/versions/{version}/schema", version_schema, methods=["GET"]),
        Route("/subjects/{subject}/versions/{version}/referencedby", referenced_by, methods=["GET"]),
        Route("/schemas", schemas, methods=["GET"]),
        Route("/schemas/types", types, methods=["GET"]),
        Route("/schemas/ids/{id}", schema_by_id, methods=["GET"]),
        Route("/schemas/ids/{id}/schema", schema_text_by_id, methods=["GET"]),
        Route("/schemas/ids/{id}/versions", id_versions, methods=["GET"]),
        Route("/schemas/ids/{id}/subjects", id_subjects, methods=["GET"]),
    ]
