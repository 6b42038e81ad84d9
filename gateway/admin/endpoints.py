"""How the admin command reaches a gateway: its HTTP JSON API, its Kafka listener (confluent-kafka's
AdminClient, with the listener's security settings) and its remoting listener (one request at a time
over a socket, signed with a RocketMQ access key and wrapped in TLS when asked)."""
from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request

from codec.kafka import apis, protocol as kafka_protocol
from codec.remoting import RemotingCommand, encode
from codec.remoting.acl import sign
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


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def security_protocol(args) -> str:
    """--security-protocol, else what the other options imply: SASL with a user, TLS with a CA."""
    if args.security_protocol:
        return args.security_protocol
    tls = bool(args.tls_ca or args.tls_cert)
    if args.sasl_username:
        return "SASL_SSL" if tls else "SASL_PLAINTEXT"
    return "SSL" if tls else "PLAINTEXT"


def kafka_config(args) -> dict:
    """librdkafka settings for the Kafka listener, its security included."""
    conf = {"bootstrap.servers": args.bootstrap, "socket.timeout.ms": int(TIMEOUT_S * 1000),
            "socket.connection.setup.timeout.ms": int(TIMEOUT_S * 1000), "log_level": 0}
    protocol = security_protocol(args)
    conf["security.protocol"] = protocol
    if protocol.startswith("SASL"):
        if not (args.sasl_username and args.sasl_password):
            raise AdminError(f"{protocol} needs --sasl-username and --sasl-password "
                             "(or ROCKETGATE_SASL_USERNAME / ROCKETGATE_SASL_PASSWORD)", 2)
        conf.update({"sasl.mechanism": args.sasl_mechanism, "sasl.username": args.sasl_username,
                     "sasl.password": args.sasl_password})
    if protocol.endswith("SSL"):
        for key, value in (("ssl.ca.location", args.tls_ca), ("ssl.certificate.location", args.tls_cert),
                           ("ssl.key.location", args.tls_key)):
            if value:
                conf[key] = value
    return conf


def kafka_admin(args):
    from confluent_kafka.admin import AdminClient
    errors: list = []  # the client's own errors (authentication failures arrive only here)
    admin = AdminClient({**kafka_config(args), "error_cb": errors.append})
    admin.bootstrap, admin.client_errors, admin.args = args.bootstrap, errors, args
    return admin


SASL_HINT = "pass --sasl-username and --sasl-password (or ROCKETGATE_SASL_USERNAME and ROCKETGATE_SASL_PASSWORD)"


def sasl_required(args) -> list[str] | None:
    """The mechanisms of the Kafka listener when it is a SASL listener, else None. Asked when a client
    without credentials lost its connection ("Broker transport failure"): a SaslHandshake is answered
    with its mechanisms by a SASL listener and with ILLEGAL_SASL_STATE by any other (as Kafka does)."""
    host, _, port = args.bootstrap.split(",")[0].rpartition(":")
    request = kafka_protocol.request_frame(apis.SASL_HANDSHAKE.key, 1, 1, {"mechanism": args.sasl_mechanism})
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as raw:
            sock = _tls(args).wrap_socket(raw, server_hostname=host) if security_protocol(args) == "SSL" else raw
            sock.sendall(request)
            payload = _read_frame(sock)
    except (OSError, ValueError):
        return None
    if payload is None:
        return None
    try:
        _, body = kafka_protocol.decode_response(apis.SASL_HANDSHAKE.key, 1, payload)
    except Exception:  # noqa: BLE001 - not a Kafka answer: no verdict
        return None
    return list(body["mechanisms"]) if body["mechanisms"] or body["error_code"] == 0 else None


def _read_frame(sock) -> bytes | None:
    """One size-prefixed Kafka response, or None when the connection closed first."""
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        data += chunk
    return data[4:4 + int.from_bytes(data[:4], "big")]


def _check_sasl_needed(admin) -> None:
    """A lost connection (transport failure, no answer) without credentials against a SASL listener:
    AdminError saying what to pass; else return and let the caller report the failure."""
    args = getattr(admin, "args", None)
    if args is None or security_protocol(args).startswith("SASL"):
        return
    mechanisms = sasl_required(args)
    if mechanisms is not None:
        raise AdminError(f"the Kafka listener at {args.bootstrap} requires SASL authentication "
                         f"({', '.join(mechanisms)}): {SASL_HINT}", 2)


def _transport_failure(err) -> bool:
    return hasattr(err, "code") and err.code() in (-195, -185)  # _TRANSPORT, _TIMED_OUT


def metadata(admin):
    """All topics' metadata (asking for one by name would auto-create it); a client error as AdminError."""
    from confluent_kafka import KafkaException
    try:
        return admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        admin.poll(0.1)  # serves error_cb
        refusals = [e for e in getattr(admin, "client_errors", ()) if e.code() == -169]  # _AUTHENTICATION
        if refusals:
            err = refusals[0]
        if _transport_failure(err):
            _check_sasl_needed(admin)
        text = err.str() if hasattr(err, "str") else str(err)
        where = getattr(admin, "bootstrap", "the Kafka listener")
        raise AdminError(f"cannot read the topics at {where}: {text}", 1 if refusals else 3) from None


def wait(future, what: str, admin=None):
    """The result of a confluent-kafka future (of `admin`'s); its KafkaException as a one-line AdminError."""
    from confluent_kafka import KafkaException
    try:
        return future.result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else exc
        if _transport_failure(err):
            _check_sasl_needed(admin)
        text = err.str() if hasattr(err, "str") else str(err)
        unreachable = _transport_failure(err)
        raise AdminError(f"{what}: {text}", 3 if unreachable else 1) from None
    except TimeoutError:
        _check_sasl_needed(admin)
        raise AdminError(f"{what}: the Kafka listener did not answer in {TIMEOUT_S:.0f} s", 3) from None


def remoting_call(args, code: int, fields: dict) -> RemotingCommand:
    """One remoting request to `args.remoting` and its response (a blocking socket: the admin command
    is a script), signed with --access-key/--secret-key if given, over TLS with --remoting-tls."""
    address = args.remoting
    host, _, port = address.rpartition(":")
    request = RemotingCommand(code=code, ext_fields={k: str(v) for k, v in fields.items() if v is not None},
                              opaque=1)
    if bool(args.access_key) != bool(args.secret_key):
        raise AdminError("--access-key and --secret-key go together", 2)
    if args.access_key:
        sign(request, args.access_key, args.secret_key)
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as raw:
            sock = _tls(args).wrap_socket(raw, server_hostname=host) if args.remoting_tls else raw
            sock.sendall(encode(request))
            reader = FrameReader()
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    hint = "" if args.remoting_tls else " (a TLS-only listener needs --remoting-tls)"
                    raise AdminError(f"the remoting listener at {address} closed the connection{hint}", 3)
                reader.feed(data)
                resp = reader.next_command()
                if resp is not None:
                    return resp
    except (OSError, ValueError) as exc:
        raise AdminError(f"cannot reach the remoting listener at {address}: {exc}", 3) from None


def _tls(args) -> ssl.SSLContext:
    """The client side of --remoting-tls: the gateway's certificate checked against --tls-ca (else the
    system's CAs), --tls-cert/--tls-key presented when the gateway asks for one (mTLS)."""
    context = ssl.create_default_context(cafile=args.tls_ca)
    if args.tls_cert:
        context.load_cert_chain(args.tls_cert, args.tls_key)
    return context
