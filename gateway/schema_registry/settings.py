"""Compatibility levels, modes and compatibility checks: /config, /mode, /compatibility."""
from __future__ import annotations

from starlette.routing import Route

import semantics.schema_registry.errors as err
from gateway.schema_registry.common import endpoint, flag, json_body, respond
from security.acl import Operation

ALTER = Operation.ALTER_CONFIGS


def _field(body, name: str, refuse):
    if not isinstance(body, dict) or name not in body:
        raise refuse(None if not isinstance(body, dict) else body.get(name))
    return body[name]


def routes(registry, access) -> list[Route]:
    def subject_of(request, operation: Operation = Operation.DESCRIBE_CONFIGS):
        """The subject of a /config or /mode path (None: the global setting), checked for `operation`."""
        subject = request.path_params.get("subject")
        access.check(request, operation, subject)
        return subject

    @endpoint
    async def get_config(request):
        subject = subject_of(request)
        state = registry.fresh()
        if subject is not None and subject not in state.configs and not flag(request, "defaultToGlobal"):
            raise err.compatibility_not_configured(subject)
        return respond({"compatibilityLevel": state.compatibility(subject)})

    @endpoint
    async def put_config(request):
        subject = subject_of(request, ALTER)
        body = await json_body(request)
        # Confluent's clients send "compatibility" (confluent-kafka's ServerConfig may send "compatibilityLevel")
        name = "compatibilityLevel" if isinstance(body, dict) and "compatibility" not in body else "compatibility"
        level = _field(body, name, err.invalid_compatibility)
        return respond({"compatibility": await registry.set_config(subject, level)})

    @endpoint
    async def delete_config(request):
        return respond({"compatibilityLevel": await registry.delete_config(subject_of(request, ALTER))})

    @endpoint
    async def get_mode(request):
        subject = subject_of(request)
        state = registry.fresh()
        if subject is not None and subject not in state.modes and not flag(request, "defaultToGlobal"):
            raise err.mode_not_configured(subject)
        return respond({"mode": state.mode(subject)})

    @endpoint
    async def put_mode(request):
        subject = subject_of(request, ALTER)
        mode = _field(await json_body(request), "mode", err.invalid_mode)
        return respond({"mode": await registry.set_mode(subject, mode, flag(request, "force"))})

    @endpoint
    async def delete_mode(request):
        return respond({"mode": await registry.delete_mode(subject_of(request, ALTER))})

    @endpoint
    async def compatibility(request):
        access.check(request, Operation.READ, request.path_params["subject"])
        body = await json_body(request)
        problems = registry.check_compatibility(request.path_params["subject"], request.path_params.get("version"),
                                                body, flag(request, "normalize"))
        answer = {"is_compatible": not problems}
        if flag(request, "verbose"):
            answer["messages"] = problems
        return respond(answer)

    return [
        Route("/config", get_config, methods=["GET"]),
        Route("/config", put_config, methods=["PUT"]),
        Route("/config", delete_config, methods=["DELETE"]),
        Route("/config/{subject}", get_config, methods=["GET"]),
        Route("/config/{subject}", put_config, methods=["PUT"]),
        Route("/config/{subject}", delete_config, methods=["DELETE"]),
        Route("/mode", get_mode, methods=["GET"]),
        Route("/mode", put_mode, methods=["PUT"]),
        Route("/mode", delete_mode, methods=["DELETE"]),
        Route("/mode/{subject}", get_mode, methods=["GET"]),
        Route("/mode/{subject}", put_mode, methods=["PUT"]),
        Route("/mode/{subject}", delete_mode, methods=["DELETE"]),
        Route("/compatibility/subjects/{subject}/versions", compatibility, methods=["POST"]),
        Route("/compatibility/subjects/{subject}/versions/{version}", compatibility, methods=["POST"]),
    ]
