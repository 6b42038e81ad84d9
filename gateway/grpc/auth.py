"""Authentication and authorization of gRPC calls with `--authorizer acl`, as Apache RocketMQ 5's
proxy does them (ACL 2.0: AuthenticationPipeline, then AuthorizationPipeline, on every request
message, Telemetry commands included).

The SDKs sign each call with two metadata headers:
  x-mq-date-time: 20261123T231500Z
  authorization: MQv2-HMAC-SHA1 Credential=<AccessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>
where Signature is HMAC-SHA1 of the date-time text keyed with the access key's secret (the same
AccessKey/SecretKey table as the remoting ACL, `security.credentials`). The time itself is not
checked (the proxy does not either). A call without `authorization` has no user.

A refusal is the RPC's own response with Status code UNAUTHORIZED (40100) and the proxy's message
(gRPC status OK), e.g. "username cannot be null.", "User:<key> is not found.", "check signature
failed.", "<principal> has no permission to access Topic:<t> from <ip>, no matched policies.".
What each request needs (RocketMQ's DefaultAuthorizationContextBuilder; PUB = WRITE, SUB = READ):
SendMessage, RecallMessage, EndTransaction: WRITE on the topic; QueryRoute: DESCRIBE on the topic
(PUB or SUB); consumer Heartbeat, ChangeInvisibleDuration, NotifyClientTermination: READ on the
group; ReceiveMessage, AckMessage, ForwardMessageToDeadLetterQueue, QueryAssignment: READ on the
group and the topic; Telemetry Settings: WRITE on the published topics, READ on the subscription's
group and topics. The proxy does not check the PullConsumer RPCs; the gateway checks them as the
remoting port does its pulls: PullMessage, UpdateOffset READ, GetOffset DESCRIBE on the group and
topic; QueryOffset DESCRIBE on the topic. An address on the global IP whitelist is not checked (as on
the remoting port).
"""
from __future__ import annotations

import binascii
import hashlib
import hmac

from gateway.grpc.common import Code, RpcError, d, s, status
from security.acl import Operation as Op, ResourceType as Res
from security.rocketmq_perms import whitelisted

AUTHORIZATION, DATE_TIME = "authorization", "x-mq-date-time"
RETRY_PREFIX = "%RETRY%"
_TYPE_NAMES = {Res.TOPIC: "Topic", Res.GROUP: "Group"}
_CONSUMERS = frozenset((d.ClientType.PUSH_CONSUMER, d.ClientType.SIMPLE_CONSUMER, d.ClientType.PULL_CONSUMER))


class Refused(Exception):
    """The request is not authenticated or not authorized; the message is the proxy's."""


def _java_split(text: str, sep: str) -> list[str]:
    """Java's String.split(sep): trailing empty parts dropped (all of them for a text of separators)."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and ord(text[start]) <= 32:
        start += 1
    while end > start and ord(text[end - 1]) <= 32:
        end -= 1
    return text[start:end]


def parse_authorization(header: str | None, date_time: str | None) -> tuple[str | None, bytes | None]:
    """(access key, signature bytes) of an `authorization` header; (None, None) without one.
    Raises Refused with the proxy's message for a header it cannot read."""
    if not header:
        return None, None
    if not date_time:
        raise Refused("datetime is null.")
    parts = header.split(" ", 1)
    if len(parts) != 2:
        raise Refused("authentication header is incorrect.")
    user, signature = None, None
    for item in _java_split(parts[1], ","):
        kv = _java_trim(item).split("=", 1)
        if len(kv) != 2:
            raise Refused(f"authentication keyValues length is incorrect, actual length={len(kv)}.")
        if kv[0] == "Credential":
            credential = _java_split(kv[1], "/")
            if not credential:
                raise Refused("authentication credential length is incorrect, actual length=0.")
            user = credential[0]
        elif kv[0] == "Signature":
            try:
                signature = binascii.unhexlify(kv[1])
            except (binascii.Error, ValueError):
                raise Refused("create authentication context error.") from None
    return user, signature


def _mac(secret: str, date_time: str) -> bytes:
    """HMAC-SHA1 of the date-time keyed with the secret (texts as Java's getBytes(UTF_8) encodes them)."""
    return hmac.new(secret.encode("utf-8", "replace"), date_time.encode("utf-8", "replace"), hashlib.sha1).digest()


def sign(secret: str, date_time: str) -> str:
    """The SDKs' Signature value: the hex HMAC."""
    return _mac(secret, date_time).hex()


def authenticate(security, metadata: dict, address: str) -> str:
    """The principal ("User:<name>") of a call's metadata, or Refused."""
    if security.limiter.blocked(address):
        raise Refused("too many authentication failures, try again later.")
    principal = "-"
    try:
        access_key, signature = parse_authorization(metadata.get(AUTHORIZATION), metadata.get(DATE_TIME))
        if not access_key:
            raise Refused("username cannot be null.")
        principal = f"User:{access_key}"
        key = security.credentials.access_key(access_key)
        if key is None:
            raise Refused(f"User:{access_key} is not found.")
        principal = f"User:{key.user}"
        if signature is None or not hmac.compare_digest(_mac(key.secret, metadata[DATE_TIME]), signature):
            raise Refused("check signature failed.")
        return principal
    except Refused as exc:
        security.limiter.failed(address)
        security.denials.denied(principal, "authenticate", "grpc", address, str(exc))
        raise


# ------------------------------------------------------------ what a request needs
def _named(resource, what: str) -> str:
    if not resource.name.strip():
        raise Refused(f"{what} is null.")
    return resource.name


def _group(resource, op: Op = Op.READ) -> list:
    name = _named(resource, "group")
    return [(op, Res.GROUP, name[len(RETRY_PREFIX):] if name.startswith(RETRY_PREFIX) else name)]


def _topic(resource, op: Op) -> list:
    name = _named(resource, "topic")
    if name.startswith(RETRY_PREFIX):  # a group's retry topic is the group's (as on the remoting port)
        return [(Op.READ if op != Op.DESCRIBE else op, Res.GROUP, name[len(RETRY_PREFIX):])]
    return [(op, Res.TOPIC, name)]


def _settings(settings) -> list:
    out = []
    if not settings.HasField("publishing") and not settings.HasField("subscription"):
        raise Refused("settings command doesn't have publishing or subscription.")
    for topic in settings.publishing.topics:
        out += _topic(topic, Op.WRITE)
    if settings.HasField("subscription"):
        out += _group(settings.subscription.group)
        for entry in settings.subscription.subscriptions:
            out += _topic(entry.topic, Op.READ)
    return out


def needs(request) -> list:
    """(operation, resource type, name) triples the request needs; Refused when it names none."""
    kind = type(request).__name__
    if kind == "SendMessageRequest":
        if not request.messages:
            raise Refused("message is null.")
        return _topic(request.messages[0].topic, Op.WRITE)
    if kind in ("RecallMessageRequest", "EndTransactionRequest"):
        return _topic(request.topic, Op.WRITE)
    if kind == "QueryRouteRequest":
        return _topic(request.topic, Op.DESCRIBE)
    if kind == "HeartbeatRequest":
        return _group(request.group) if request.client_type in _CONSUMERS else []
    if kind == "ReceiveMessageRequest":
        if not request.HasField("message_queue"):
            raise Refused("messageQueue is null.")
        return _group(request.group) + _topic(request.message_queue.topic, Op.READ)
    if kind in ("AckMessageRequest", "ForwardMessageToDeadLetterQueueRequest", "QueryAssignmentRequest"):
        return _group(request.group) + _topic(request.topic, Op.READ)
    if kind == "NotifyClientTerminationRequest":
        return _group(request.group) if request.group.name.strip() else []
    if kind == "ChangeInvisibleDurationRequest":
        return _group(request.group)
    if kind in ("PullMessageRequest", "UpdateOffsetRequest"):
        return _group(request.group) + _topic(request.message_queue.topic, Op.READ)
    if kind == "GetOffsetRequest":
        return _group(request.group, Op.DESCRIBE) + _topic(request.message_queue.topic, Op.DESCRIBE)
    if kind == "QueryOffsetRequest":  # a queue's offset by policy or time: no group
        return _topic(request.message_queue.topic, Op.DESCRIBE)
    if kind == "TelemetryCommand":
        return _settings(request.settings) if request.WhichOneof("command") == "settings" else []
    return []


def _authorize(security, principal: str, address: str, request) -> None:
    for op, rtype, name in needs(request):
        decision = security.authorizer.decide(principal, address, op, rtype, name)
        if not decision.allowed:
            resource = f"{_TYPE_NAMES[rtype]}:{name}"
            detail = "the decision is deny." if decision.reason == "denied by ACL" else "no matched policies."
            message = f"{principal} has no permission to access {resource} from {address}, {detail}"
            security.denials.denied(principal, op.name, resource, address, message)
            raise Refused(message)


def peer_address(call) -> str:
    try:
        return call.conn.socket.getpeername()[0]
    except (AttributeError, OSError, IndexError, TypeError):
        return ""


def check(app, call, request) -> None:
    """Raises RpcError(UNAUTHORIZED) unless the call's credentials may make this request (nothing
    is checked without --authorizer acl)."""
    security = getattr(app, "security", None)
    if security is None:
        return
    security.refresh()
    address = peer_address(call)
    if whitelisted(security.authorizer, address):
        return
    try:
        principal = authenticate(security, call.metadata, address)
        _authorize(security, principal, address, request)
    except Refused as exc:
        raise RpcError(Code.UNAUTHORIZED, str(exc)) from None


class CheckedStream:
    """A Telemetry call whose `receive()` passes on the commands `check` lets through and answers
    the others with a TelemetryCommand carrying the UNAUTHORIZED status (the stream goes on)."""

    def __init__(self, app, call) -> None:
        self._app, self._call = app, call

    def __getattr__(self, name):
        return getattr(self._call, name)

    async def receive(self) -> bytes | None:
        while True:
            payload = await self._call.receive()
            if payload is None:
                return None
            command = s.TelemetryCommand()
            try:
                command.ParseFromString(payload)
            except Exception:  # noqa: BLE001 - the Telemetry handler reports undecodable commands
                return payload
            try:
                check(self._app, self._call, command)
                return payload
            except RpcError as exc:
                await self._call.send(s.TelemetryCommand(status=status(exc.code, exc.message)).SerializeToString())


def guard_stream(app, call):
    """The call a bidi method should read: checked with --authorizer acl, as it is otherwise."""
    return call if getattr(app, "security", None) is None else CheckedStream(app, call)
