"""A gateway with a SASL_SSL Kafka listener (plus a loopback PLAINTEXT one), ACLs on, users admin
(super user) and alice; and client settings for it. Shared by the tests of tests/security/."""
from __future__ import annotations

import os

from security.credentials import CredentialStore
from tests.gateway_process import GatewayProcess, free_port
from tests.security.certs import make_certs

ADMIN, ADMIN_PW = "admin", "admin-secret"
ALICE, ALICE_PW = "alice", "alice-secret"


def start(base: str, more_args: list[str] = ()) -> GatewayProcess:
    certs = make_certs(os.path.join(base, "certs"))
    data = os.path.join(base, "data")
    store = CredentialStore(os.path.join(data, "config"))
    store.set_password(ADMIN, ADMIN_PW)
    store.set_password(ALICE, ALICE_PW)
    plain_port = free_port()
    gw = GatewayProcess(data, extra_args=[
        "--kafka-security-protocol", "SASL_SSL", "--tls-cert", certs.server_cert, "--tls-key", certs.server_key,
        "--listener", f"LOCAL=PLAINTEXT://127.0.0.1:{plain_port}", "--authorizer", "acl",
        "--super-users", f"User:{ADMIN}", *more_args])
    gw.certs, gw.plain_port = certs, plain_port
    return gw.start()


def librdkafka(gw, user: str | None, password: str | None, mechanism: str = "SCRAM-SHA-256", **more) -> dict:
    conf = {"bootstrap.servers": gw.kafka_bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
            "ssl.ca.location": gw.certs.ca, **more}
    if user is not None:
        conf.update({"sasl.username": user, "sasl.password": password})
    return conf


def kafka_python(gw, user: str, password: str, mechanism: str = "SCRAM-SHA-256", **more) -> dict:
    return dict(bootstrap_servers=gw.kafka_bootstrap, security_protocol="SASL_SSL", sasl_mechanism=mechanism,
                sasl_plain_username=user, sasl_plain_password=password, ssl_cafile=gw.certs.ca, **more)


def java_properties(gw, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> str:
    module = "scram.ScramLoginModule" if mechanism.startswith("SCRAM") else "plain.PlainLoginModule"
    return (f"security.protocol=SASL_SSL\nsasl.mechanism={mechanism}\n"
            f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
            f'username="{user}" password="{password}";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={gw.certs.ca}\n")
