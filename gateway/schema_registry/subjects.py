"""Subjects and schemas: /subjects..., /schemas/...: register, look up, read and delete."""
from __future__ import annotations

from starlette.routing import Route

import semantics.schema_registry.errors as err
from gateway.schema_registry.common import endpoint, flag, json_body, raw, respond
from security.acl import Operation
from semantics.schema_formats import FORMATS, SchemaError, formatted


def version_body(v, text: str | None = None) -> dict:
    out = {"subject": v.subject, "version": v.version, "id": v.id}
    return out | schema_body(v.schema, text)


def schema_body(schema, text: str | None = None) -> dict:
    out = {}
    if schema.schema_type != "AVRO":
        out["schemaType"] = schema.schema_type
    if schema.references:
        out["references"] = [{"name": n, "subject": s, "version": ver} for n, s, ver in schema.references]
    out["schema"] = schema.schema if text is None else text
    return out


def _schema_id(request) -> int:
    text = request.path_params["id"]
    if not text.isdigit() or len(text) > 10:
        raise err.schema_not_found(text)
    return int(text)


def routes(registry, access) -> list[Route]:
    def subject(request, operation: Operation = Operation.READ) -> str:
        name = request.path_params["subject"]
        access.check(request, operation, name)
        return name

    def visible(request, name: str) -> bool:
        return access.allowed(request, Operation.DESCRIBE, name)

    def text_for(request, schema) -> str | None:
        """The schema rendered for `?format=` (PROTOBUF `serialized`: what confluent-kafka's deserializer asks for)."""
        fmt = request.query_params.get("format")
        if not fmt:
            return None
        try:
            return formatted(registry.parsed(schema), fmt)
        except SchemaError:
            return None

    @endpoint
    async def subjects(request):
        state = registry.fresh()  # deletedOnly wins over deleted, as Confluent's
        names = state.deleted_subject_names() if flag(request, "deletedOnly") else state.subject_names(
            flag(request, "deleted"))
        prefix = request.query_params.get("subjectPrefix")
        return respond([n for n in names if (prefix is None or n.startswith(prefix)) and visible(request, n)])

    @endpoint
    async def versions(request):
        subject(request)
        found = registry.subject_versions(request.path_params["subject"], flag(request, "deleted"),
                                          flag(request, "deletedOnly"))
        return respond([v.version for v in found])

    @endpoint
    async def register(request):
        body = await json_body(request)
        v = await registry.register(subject(request, Operation.WRITE), body, flag(request, "normalize"))
        # the schema as the client sent it: confluent-kafka caches this text under the id, and its
        # Protobuf deserializer reads that cache as a base64 descriptor (the form its serializer sent)
        sent = body.get("schema") if isinstance(body, dict) and isinstance(body.get("schema"), str) else None
        return respond({"id": v.id, "version": v.version} | schema_body(v.schema, sent))

    @endpoint
    async def version(request):
        subject(request)
        v = registry.get_version(request.path_params["subject"], request.path_params["version"],
                                 flag(request, "deleted"))
        return respond(version_body(v, text_for(request, v.schema)))

    @endpoint
    async def delete_version(request):
        return respond(await registry.delete_version(subject(request, Operation.DELETE), request.path_params["version"],
                                                     flag(request, "permanent")))

    @endpoint
    async def version_schema(request):
        subject(request)
        v = registry.get_version(request.path_params["subject"], request.path_params["version"],
                                 flag(request, "deleted"))
        text = text_for(request, v.schema)
        return raw(v.schema.schema if text is None else text)

    @endpoint
    async def referenced_by(request):
        v = registry.get_version(subject(request), request.path_params["version"], deleted=True)
        return respond(registry.state.referenced_by(v.subject, v.version))

    @endpoint
    async def lookup(request):
        body = await json_body(request)
        v = registry.lookup(subject(request), body, flag(request, "normalize"), flag(request, "deleted"))
        return respond(version_body(v))

    @endpoint
    async def delete_subject(request):
        return respond(await registry.delete_subject(subject(request, Operation.DELETE), flag(request, "permanent")))

    def _by_id(request):
        schema = registry.schema_by_id(_schema_id(request))
        if schema is None:
            raise err.schema_not_found(request.path_params["id"])
        uses = registry.state.uses_of(schema.id, deleted=True)  # READ on one of its subjects is enough
        if uses and not any(access.allowed(request, Operation.READ, v.subject) for v in uses):
            access.check(request, Operation.READ, uses[0].subject)
        return schema

    @endpoint
    async def schema_by_id(request):
        schema = _by_id(request)
        return respond(schema_body(schema, text_for(request, schema)))

    @endpoint
    async def schema_text_by_id(request):
        schema = _by_id(request)
        text = text_for(request, schema)
        return raw(schema.schema if text is None else text)

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
            if name.startswith(prefix) and visible(request, name):
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
        Route("/subjects/{subject:segment}", lookup, methods=["POST"]),
        Route("/subjects/{subject:segment}", delete_subject, methods=["DELETE"]),
        Route("/subjects/{subject:segment}/versions", versions, methods=["GET"]),
        Route("/subjects/{subject:segment}/versions", register, methods=["POST"]),
        Route("/subjects/{subject:segment}/versions/{version:segment}", version, methods=["GET"]),
        Route("/subjects/{subject:segment}/versions/{version:segment}", delete_version, methods=["DELETE"]),
        Route("/subjects/{subject:segment}/versions/{version:segment}/schema", version_schema, methods=["GET"]),
        Route("/subjects/{subject:segment}/versions/{version:segment}/referencedby", referenced_by, methods=["GET"]),
        Route("/schemas", schemas, methods=["GET"]),
        Route("/schemas/types", types, methods=["GET"]),
        Route("/schemas/ids/{id:segment}", schema_by_id, methods=["GET"]),
        Route("/schemas/ids/{id:segment}/schema", schema_text_by_id, methods=["GET"]),
        Route("/schemas/ids/{id:segment}/versions", id_versions, methods=["GET"]),
        Route("/schemas/ids/{id:segment}/subjects", id_subjects, methods=["GET"]),
    ]
