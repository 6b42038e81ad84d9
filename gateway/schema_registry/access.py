"""Who may use the registry. With a user store in use (`--authorizer acl`, or SASL listeners), every
request carries HTTP Basic credentials of a user of that store (401, error_code 40101, otherwise). With
`--authorizer acl`, subjects are authorized as TOPIC resources named `subject:<subject>` (LITERAL or
PREFIXED ACLs, e.g. PREFIXED `subject:orders-`): READ to read and look up, WRITE to register, DELETE to
delete, DESCRIBE_CONFIGS / ALTER_CONFIGS for the subject's compatibility and mode; the global
compatibility and mode are the cluster's DESCRIBE_CONFIGS / ALTER_CONFIGS (403, error_code 40301).

A secured cluster's inter-broker credential (`--inter-broker-credentials`), sent as HTTP Basic
`accessKey:secretKey`, is what gateways ask the registry leader for schema ids with
(gateway.schema_registry.lookup): it may READ every subject and nothing else."""
from __future__ import annotations

import base64
import hashlib
import hmac
import time

from starlette.requests import Request

from gateway.ops.actions import basic_user
from security.acl import Operation, ResourceType
from semantics.schema_registry import RegistryError

SUBJECT_PREFIX = "subject:"
CLUSTER = "kafka-cluster"
VERIFIED_S = 60.0  # a checked password is trusted this long (a SCRAM check costs a PBKDF2 run)


class Access:
    def __init__(self, app) -> None:
        self.authentication = app.authentication  # None: no user store in use, requests are anonymous
        self.security = app.security  # None: no authorizer
        self._verified: dict[bytes, tuple[float, str]] = {}  # sha256 of the Authorization header
        credential = app.config.inter_broker
        self._inter_broker = (basic_header(credential), PeerGateway(credential.principal)) if credential else None

    def principal(self, request) -> str | None:
        """`User:<name>` of the request (None when anonymous is the rule); 40101 when it must log in."""
        if self.authentication is None:
            return None
        self.authentication.refresh()
        header = request.headers.get("authorization", "")
        if self._inter_broker is not None and hmac.compare_digest(header.encode(), self._inter_broker[0].encode()):
            return self._inter_broker[1]
        digest = hashlib.sha256(header.encode()).digest()
        now = time.monotonic()
        cached = self._verified.get(digest)
        if cached is not None and now - cached[0] < VERIFIED_S:
            user = cached[1]
        else:
            user = basic_user(self.authentication, request)
            if user is not None:
                if len(self._verified) > 1000:
                    self._verified.clear()
                self._verified[digest] = (now, user)
        if user is None:
            raise RegistryError(401, 40101, "Unauthorized: HTTP Basic credentials of a gateway user are required")
        return f"User:{user}"

    def allowed(self, request, operation: Operation, subject: str | None) -> bool:
        """May the request's principal do `operation` on `subject` (None: the global settings)?"""
        principal = request.state.principal
        if isinstance(principal, PeerGateway):
            return operation == Operation.READ and subject is not None  # a peer gateway's id lookups
        if self.security is None or principal is None:
            return True
        host = request.client.host if request.client else ""
        if subject is None:
            return self.security.authorizer.authorize(principal, host, operation, ResourceType.CLUSTER, CLUSTER)
        return self.security.authorizer.authorize(principal, host, operation, ResourceType.TOPIC,
                                                  SUBJECT_PREFIX + subject)

    def check(self, request, operation: Operation, subject: str | None) -> None:
        if not self.allowed(request, operation, subject):
            what = f"subject {subject}" if subject is not None else "the global settings"
            raise RegistryError(403, 40301, f"User is denied operation {operation.name} on {what}")


class PeerGateway(str):
    """The principal of a request signed with the inter-broker credential (a user of the store with
    the same name is a plain str, and gets no more than its ACLs)."""


def basic_header(credential) -> str:
    """The HTTP Basic Authorization value of an inter-broker credential."""
    pair = f"{credential.access_key}:{credential.secret_key}".encode()
    return "Basic " + base64.b64encode(pair).decode()


class Authenticate:
    """ASGI middleware: the request's principal into `request.state.principal`, or the 401 answer."""

    def __init__(self, app, access: Access, refuse) -> None:
        self.app, self.access, self.refuse = app, access, refuse

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            try:
                scope.setdefault("state", {})["principal"] = self.access.principal(Request(scope))
            except RegistryError as exc:
                answer = self.refuse(exc.status, exc.code, exc.message)
                answer.headers["WWW-Authenticate"] = 'Basic realm="schema-registry"'
                return await answer(scope, receive, send)
        await self.app(scope, receive, send)
