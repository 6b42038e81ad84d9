"""The Telemetry stream under `--authorizer acl` (gateway.grpc.auth.CheckedStream): a command that
fails authentication or authorization is answered on the stream with a TelemetryCommand carrying
UNAUTHORIZED and the proxy's message, and the stream goes on with the next command; without the
authorizer the call is passed through untouched."""
from __future__ import annotations

import types

import trio

from gateway.grpc import auth
from gateway.grpc.common import Code, d, s
from security import Security
from security.acl import AclBinding, Operation, PatternType, Permission, ResourceType

DATE = "20261124T001500Z"


class FakeCall:
    def __init__(self, metadata: dict, commands: list) -> None:
        self.metadata = metadata
        self.payloads = [c.SerializeToString() for c in commands]
        self.sent: list = []
        socket = types.SimpleNamespace(getpeername=lambda: ("192.0.2.7", 5))
        self.conn = types.SimpleNamespace(socket=socket)

    async def receive(self):
        return self.payloads.pop(0) if self.payloads else None

    async def send(self, payload: bytes) -> None:
        self.sent.append(s.TelemetryCommand.FromString(payload))


def _publishing(topic: str):
    return s.TelemetryCommand(settings=d.Settings(client_type=d.ClientType.PRODUCER, publishing=d.Publishing(
        topics=[d.Resource(name=topic)])))


def _security(tmp_path) -> Security:
    sec = Security(str(tmp_path), environ={})
    sec.credentials.set_access_key("alice", "SK", user="alice")
    sec.authorizer.create([AclBinding(ResourceType.TOPIC, "mine", PatternType.LITERAL, "User:alice", "*",
                                      Operation.WRITE, Permission.ALLOW)])
    return sec


def _signed(secret: str = "SK") -> dict:
    return {"x-mq-date-time": DATE, "authorization":
            f"MQv2-HMAC-SHA1 Credential=alice, SignedHeaders=x-mq-date-time, Signature={auth.sign(secret, DATE)}"}


def _read_all(app, call) -> list:
    async def main():
        stream = auth.guard_stream(app, call)
        out = []
        while (payload := await stream.receive()) is not None:
            out.append(s.TelemetryCommand.FromString(payload))
        return out
    return trio.run(main)


def test_denied_settings_answered_on_the_stream(tmp_path):
    app = types.SimpleNamespace(security=_security(tmp_path))
    call = FakeCall(_signed(), [_publishing("theirs"), _publishing("mine")])
    passed = _read_all(app, call)
    assert [c.settings.publishing.topics[0].name for c in passed] == ["mine"]
    [refusal] = call.sent
    assert refusal.status.code == Code.UNAUTHORIZED
    assert refusal.status.message == ("User:alice has no permission to access Topic:theirs from 192.0.2.7, "
                                      "no matched policies.")


def test_wrong_signature_refuses_every_command(tmp_path):
    app = types.SimpleNamespace(security=_security(tmp_path))
    call = FakeCall(_signed("not-the-secret"), [_publishing("mine"), s.TelemetryCommand()])
    assert _read_all(app, call) == []
    refused = (Code.UNAUTHORIZED, "check signature failed.")
    assert [(c.status.code, c.status.message) for c in call.sent] == [refused, refused]


def test_without_authorizer_the_call_is_untouched():
    call = FakeCall({}, [_publishing("any")])
    assert auth.guard_stream(types.SimpleNamespace(security=None), call) is call
