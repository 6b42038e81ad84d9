"""The ports the gateway listens on and how each one is secured (docs/config.md, docs/security.md).

The Kafka port (`--kafka-port`, `--kafka-security-protocol`) is the first Kafka listener;
`--listener NAME=PROTOCOL://HOST:PORT[,ADVERTISED_HOST[:PORT]]` adds more (e.g. a loopback PLAINTEXT
listener for local tools next to a SASL_SSL one for the network). The remoting port is one more
endpoint, TLS-only with `--remoting-tls`. PROTOCOL is Kafka's name: PLAINTEXT, SSL, SASL_PLAINTEXT
or SASL_SSL.
"""
from __future__ import annotations

import dataclasses
import errno
import ipaddress

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class ListenerError(ValueError):
    """A --listener value or a combination of flags that cannot work; the message says why."""


@dataclasses.dataclass(frozen=True)
class Listener:
    """One port: `kind` "kafka" or "remoting"; `protocol` one of PROTOCOLS (remoting: PLAINTEXT or SSL);
    `advertised_host`/`advertised_port` what Kafka Metadata tells clients (None: --advertised-host and
    the port the client reached)."""
    name: str
    protocol: str
    host: str
    port: int
    kind: str = "kafka"
    advertised_host: str | None = None
    advertised_port: int | None = None
    flag: str = ""  # the command-line flag that asked for this port, for error messages

    @property
    def origin(self) -> str:
        return self.flag or f"--listener {self.name}"

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def __str__(self) -> str:
        return f"{self.name}={self.protocol}://{self.host}:{self.port}"


def _host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ListenerError(f"{what} {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def parse_listener(text: str) -> Listener:
    """`NAME=PROTOCOL://HOST:PORT[,ADVERTISED_HOST[:PORT]]` (HOST empty: every address, as Kafka)."""
    name, sep, rest = text.partition("=")
    protocol, sep2, address = rest.partition("://")
    if not sep or not sep2 or not name:
        raise ListenerError(f"listener {text!r}: expected NAME=PROTOCOL://HOST:PORT")
    protocol = protocol.upper()
    if protocol not in PROTOCOLS:
        raise ListenerError(f"listener {text!r}: protocol must be one of {', '.join(PROTOCOLS)}")
    address, _, advertised = address.partition(",")
    host, port = _host_port(address, f"listener {text!r}:")
    adv_host, adv_port = None, None
    if advertised:
        if ":" in advertised:
            adv_host, adv_port = _host_port(advertised, f"listener {text!r} advertised address")
        else:
            adv_host = advertised
    return Listener(name, protocol, host or "0.0.0.0", port, "kafka", adv_host, adv_port)


def endpoints(config) -> list[Listener]:
    """Every port to bind: the Kafka port, the extra Kafka listeners, the remoting port, the gRPC port."""
    main = Listener(config.kafka_security_protocol, config.kafka_security_protocol, config.host, config.kafka_port,
                    flag="--kafka-port")
    remoting = Listener("REMOTING", "SSL" if config.remoting_tls else "PLAINTEXT", config.host,
                        config.remoting_port, "remoting", flag="--remoting-port")
    grpc = [] if config.grpc_port is None else [
        Listener("GRPC", "PLAINTEXT", config.host, config.grpc_port, "grpc", flag="--grpc-port")]
    return [main, *config.listeners, remoting, *grpc]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def authenticates(listener: Listener, config) -> bool:
    """Does this port know who its clients are? SASL, TLS with client certificates, or the remoting
    and gRPC ports with `--authorizer acl` (signed requests)."""
    if listener.kind == "remoting":
        return config.authorizer == "acl"
    if listener.kind == "grpc":
        return config.authorizer == "acl"  # signed calls (gateway.grpc.auth)
    return listener.sasl or (listener.protocol == "SSL" and bool(config.tls_ca))


_WILDCARDS = ("", "0.0.0.0", "::")


def _same_port(a: Listener, b: Listener) -> bool:
    """Would binding both fail? The same port on the same host, or on every address and one of them."""
    return a.port == b.port != 0 and (a.host == b.host or a.host in _WILDCARDS or b.host in _WILDCARDS)


def _check_ports(config) -> None:
    """Two of our own listeners on one port: name both flags (the bind would say only 'in use')."""
    ports = endpoints(config)
    if config.http_port is not None:
        ports.append(Listener("HTTP", "PLAINTEXT", config.host, config.http_port, "http", flag="--http-port"))
    if config.schema_registry_port is not None:
        ports.append(Listener("SCHEMA_REGISTRY", "PLAINTEXT", config.host, config.schema_registry_port, "http",
                              flag="--schema-registry-port"))
    for i, a in enumerate(ports):
        for b in ports[i + 1:]:
            if _same_port(a, b):
                raise ListenerError(f"{a.origin} and {b.origin} both ask for port {a.port}: "
                                    f"give each listener a port of its own")


def check(config) -> None:
    """Refuse flag combinations that cannot work or that would open the store to a network."""
    _check_ports(config)
    seen = set()
    for lst in endpoints(config):
        if lst.name in seen:
            raise ListenerError(f"listener name {lst.name} is used twice")
        seen.add(lst.name)
        if lst.tls and not (config.tls_cert and config.tls_key):
            raise ListenerError(f"listener {lst} needs --tls-cert and --tls-key")
        if not is_loopback(lst.host) and not authenticates(lst, config) and not config.allow_anonymous:
            raise ListenerError(f"refusing to serve {lst.kind} on {lst.host}:{lst.port} without authentication "
                                f"(use SASL, --tls-ca, --authorizer acl, or --allow-anonymous)")


def bind_failure(exc: OSError) -> str:
    """Why a port could not be bound, in words: EADDRINUSE says another process has it."""
    if exc.errno == errno.EADDRINUSE:
        return "address already in use (another process listens on that port)"
    return exc.strerror or str(exc)
