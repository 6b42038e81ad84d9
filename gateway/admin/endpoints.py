"""How the admin command reaches a gateway: its HTTP JSON API, its Kafka listener (confluent-kafka's
AdminClient) and its remoting listener (one request at a time over a plain socket)."""
from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from codec.remoting import RemotingCommand, encode
from codec.remoting.command import FrameReader

TIMEOUT_S = 10.0


class AdminError(Exception):
    """One line for the user and the exit code (1 refused / not found, 2 usage, 3 unreachable)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Http:
    def __init__(self, address: str | None) -> None:
        self.address = address

    def get(self, path: str, **params) -> object:
        if not self.address:
            raise AdminError("this command reads the gateway's HTTP API: give --http HOST:PORT "
                             "(the gateway's --http-port)", 2)
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        url = f"http://{self.address}{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as exc:
            try:
                message = json.load(exc).get("error") or exc.reason
            except ValueError:
                message = exc.reason
            raise AdminError(str(message), 1) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AdminError(f"cannot reach the gateway's HTTP API at {self.address}: {reason}", 3) from None


def kafka_admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(TIMEOUT_S * 1000),
                        "socket.connection.setup.timeout.ms": int(TIMEOUT_S * 1000), "log_level": 0})


def wait(future, what: str):
    """The result of a confluent-kafka future; its KafkaException as a one-line AdminError."""
    from confluent_kafka import KafkaException
    try:
        return future.result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        text = err.str() if hasattr(err, "str") else str(err)
        unreachable = hasattr(err, "code") and err.code() in (-195, -185)  # _TRANSPORT, _TIMED_OUT
        raise AdminError(f"{what}: {text}", 3 if unreachable else 1) from None
    except TimeoutError:
        raise AdminError(f"{what}: the Kafka listener did not answer in {TIMEOUT_S:.0f} s", 3) from None


def remoting_call(address: str, code: int, fields: dict) -> RemotingCommand:
    """One remoting request and its response (a plain blocking socket: the admin command is a script)."""
    host, _, port = address.rpartition(":")
    request = RemotingCommand(code=code, ext_fields={k: str(v) for k, v in fields.items() if v is not None},
                              opaque=1)
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
            sock.sendall(encode(request))
            reader = FrameReader()
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    raise AdminError(f"the remoting listener at {address} closed the connection", 3)
                reader.feed(data)
                resp = reader.next_command()
                if resp is not None:
                    return resp
    except (OSError, ValueError) as exc:
        raise AdminError(f"cannot reach the remoting listener at {address}: {exc}", 3) from None
