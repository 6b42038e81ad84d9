"""Listeners and TLS: the --listener syntax, refusals at start (one line, exit 2), certificate reload
without restart, the mTLS principal, the remoting port over TLS only, and Metadata advertising a
listener's own address."""
from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import time

import pytest

from codec.kafka import protocol
from codec.remoting import RemotingCommand, RequestCode, encode
from gateway.config import parse_args
from gateway.listeners import ListenerError, parse_listener
from gateway.tls import TlsFiles, subject_principal
from tests.gateway_process import ROOT, GatewayProcess, free_port
from tests.security.certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def test_listener_syntax():
    lst = parse_listener("EXT=sasl_ssl://0.0.0.0:9094,kafka.example.com:443")
    assert (lst.name, lst.protocol, lst.host, lst.port) == ("EXT", "SASL_SSL", "0.0.0.0", 9094)
    assert (lst.advertised_host, lst.advertised_port, lst.tls, lst.sasl) == ("kafka.example.com", 443, True, True)
    assert parse_listener("LOCAL=PLAINTEXT://:9093").host == "0.0.0.0"
    for bad in ("EXT", "EXT=FOO://h:1", "EXT=SSL://h", "=SSL://h:1", "EXT=SSL://h:99999"):
        with pytest.raises(ListenerError):
            parse_listener(bad)


def run_gateway(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)


@pytest.mark.parametrize("args,needle", [
    (["--host", "0.0.0.0"], "refusing to serve kafka on 0.0.0.0:"),
    (["--listener", "EXT=PLAINTEXT://0.0.0.0:0"], "refusing to serve kafka on 0.0.0.0:0 without authentication"),
    (["--kafka-security-protocol", "SSL"], "needs --tls-cert and --tls-key"),
    # SASL without --authorizer acl authenticates the Kafka port only: the remoting port stays anonymous
    (["--host", "0.0.0.0", "--kafka-security-protocol", "SASL_PLAINTEXT"], "refusing to serve remoting on 0.0.0.0:"),
    (["--listener", "PLAINTEXT=SSL://127.0.0.1:0"], "listener name PLAINTEXT is used twice"),
])
def test_refused_at_start(tmp_path, args, needle):
    r = run_gateway("--data-dir", str(tmp_path), *args)
    assert r.returncode == 2 and r.stderr.startswith("rocketgate: error: ") and len(r.stderr.splitlines()) == 1
    assert needle in r.stderr, r.stderr


def test_allow_anonymous_and_authenticated_listeners_pass_the_check():
    parse_args(["--host", "0.0.0.0", "--allow-anonymous"])
    parse_args(["--host", "0.0.0.0", "--kafka-security-protocol", "SASL_SSL", "--tls-cert", "c", "--tls-key", "k",
                "--authorizer", "acl"])
    # a SASL listener needs no authorizer (authentication only, as Kafka without authorizer.class.name)
    parse_args(["--kafka-security-protocol", "SASL_PLAINTEXT"])
    parse_args(["--listener", "EXT=SASL_SSL://0.0.0.0:9094", "--tls-cert", "c", "--tls-key", "k"])


def test_unreadable_certificate_is_a_startup_error(tmp_path, certs):
    r = run_gateway("--data-dir", str(tmp_path), "--kafka-port", str(free_port()), "--remoting-port", str(free_port()),
                    "--kafka-security-protocol", "SSL", "--tls-cert", certs.server_cert, "--tls-key", certs.ca)
    assert r.returncode == 2 and "cannot load TLS files" in r.stderr, r.stderr


def test_certificate_reloaded_when_the_files_change(tmp_path, certs):
    cert, key = str(tmp_path / "server.pem"), str(tmp_path / "server.key")
    shutil.copy(certs.server_cert, cert)
    shutil.copy(certs.server_key, key)
    now = [0.0]
    files = TlsFiles(cert, key, clock=lambda: now[0])
    first = files.context()
    shutil.copy(certs.client_cert, cert)  # a renewed certificate (here: another one) and its key
    shutil.copy(certs.client_key, key)
    os.utime(cert, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert files.context() is first  # checked at most once a second
    now[0] = 2.0
    assert files.context() is not first
    with open(cert, "w") as f:
        f.write("broken")
    os.utime(cert, ns=(time.time_ns() + 2 * 10**9, time.time_ns() + 2 * 10**9))
    now[0] = 4.0
    second = files.context()
    assert second is not first  # a broken file keeps the last good context


def test_subject_principal_is_kafkas_rfc2253_form():
    cert = {"subject": ((("countryName", "US"),), (("organizationName", "Example, Inc"),), (("commonName", "app"),))}
    assert subject_principal(cert) == "User:CN=app,O=Example\\, Inc,C=US"
    assert subject_principal(None) is None


def client_context(certs, with_cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=certs.ca)
    if with_cert:
        ctx.load_cert_chain(certs.client_cert, certs.client_key)
    return ctx


def test_mtls_principal_and_remoting_tls(tmp_path, certs):
    """SSL with --tls-ca: clients need a certificate; its subject is the principal the ACLs see.
    --remoting-tls: the remoting port speaks TLS only."""
    from confluent_kafka import KafkaError, Producer

    from security.acl import AclBinding, Authorizer, Operation, PatternType, Permission, ResourceType
    data = str(tmp_path / "data")
    Authorizer(os.path.join(data, "config")).create([AclBinding(
        ResourceType.TOPIC, "mtls", PatternType.LITERAL, "User:CN=app,O=Example", "*", Operation.ALL, Permission.ALLOW)])
    Authorizer(os.path.join(data, "config")).create([AclBinding(
        ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:CN=app,O=Example", "*", Operation.CREATE,
        Permission.ALLOW)])
    gw = GatewayProcess(data, extra_args=["--kafka-security-protocol", "SSL", "--tls-cert", certs.server_cert,
                                          "--tls-key", certs.server_key, "--tls-ca", certs.ca, "--remoting-tls",
                                          "--authorizer", "acl"]).start()
    try:
        conf = {"bootstrap.servers": gw.kafka_bootstrap, "security.protocol": "SSL", "ssl.ca.location": certs.ca,
                "ssl.certificate.location": certs.client_cert, "ssl.key.location": certs.client_key}
        reports = []
        p = Producer(conf)
        for topic in ("mtls", "other"):
            p.produce(topic, b"v", callback=lambda err, m: reports.append((m.topic(), err and err.code())))
        p.flush(20)
        assert sorted(reports) == [("mtls", None), ("other", KafkaError.TOPIC_AUTHORIZATION_FAILED)]

        with socket.create_connection(("127.0.0.1", gw.kafka_port), timeout=15) as raw:  # no client certificate
            try:
                with client_context(certs, False).wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(protocol.request_frame(18, 0, 1, {}))  # ApiVersions
                    answer = tls.recv(10)  # TLS 1.3 learns of the refusal on its first read
            except (ssl.SSLError, ConnectionError):
                answer = b""
            assert answer == b""

        request = encode(RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, ext_fields={"topic": "mtls"}))
        with socket.create_connection(("127.0.0.1", gw.remoting_port)) as raw:
            with client_context(certs, True).wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(request)
                assert len(tls.recv(4)) == 4  # an answer over TLS
        with socket.create_connection(("127.0.0.1", gw.remoting_port), timeout=15) as raw:
            raw.sendall(request)  # plaintext on the TLS-only port: closed, never answered
            assert raw.recv(4096)[:1] in (b"", b"\x15")  # EOF, or a TLS alert record
    finally:
        gw.stop()


def test_garbage_on_tls_and_sasl_ports_is_closed_and_the_gateway_keeps_serving(tmp_path, certs):
    """Random bytes, a truncated ClientHello, a plaintext Kafka request on the TLS port, and a Metadata
    request before SASL authentication: each connection is closed; real clients still get through."""
    from confluent_kafka import Producer

    from security.credentials import CredentialStore
    data = str(tmp_path / "data")
    CredentialStore(os.path.join(data, "config")).set_password("u", "pw")
    gw = GatewayProcess(data, extra_args=["--kafka-security-protocol", "SASL_SSL", "--tls-cert", certs.server_cert,
                                          "--tls-key", certs.server_key, "--authorizer", "acl",
                                          "--super-users", "User:u"]).start()
    try:
        hello = bytes.fromhex("160301020001")  # a TLS record header announcing more than is sent
        for junk in (os.urandom(4096), hello + os.urandom(40), protocol.request_frame(3, 1, 1, {"topics": None})):
            with socket.create_connection(("127.0.0.1", gw.kafka_port), timeout=15) as raw:
                raw.sendall(junk)
                raw.shutdown(socket.SHUT_WR)
                assert raw.recv(4096)[:1] in (b"", b"\x15")  # closed, at most a TLS alert
        with socket.create_connection(("127.0.0.1", gw.kafka_port), timeout=15) as raw:
            with client_context(certs, False).wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(protocol.request_frame(3, 1, 1, {"topics": None}))  # Metadata before SASL
                assert tls.recv(4096) == b""
        delivered = []
        p = Producer({"bootstrap.servers": gw.kafka_bootstrap, "security.protocol": "SASL_SSL",
                      "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "pw",
                      "ssl.ca.location": certs.ca})
        p.produce("after-garbage", b"v", callback=lambda err, m: delivered.append(err))
        p.flush(20)
        assert delivered == [None]
        assert "Traceback" not in gw.log()
    finally:
        gw.stop()


def test_mqadmin_with_tls_enable_on_a_remoting_tls_port(tmp_path, certs):
    """The Java remoting client with `-Dtls.enable=true` (RocketMQ's TLS switch; its default test mode
    does not verify the server certificate) works against --remoting-tls; without it, it cannot."""
    from compat.jvm import MQADMIN, java_command
    if not shutil.which("java"):
        pytest.skip("needs java")
    gw = GatewayProcess(str(tmp_path / "data"), extra_args=["--remoting-tls", "--tls-cert", certs.server_cert,
                                                            "--tls-key", certs.server_key]).start()
    try:
        def mqadmin(topic: str, tls: bool) -> subprocess.CompletedProcess:
            cmd = java_command("rocketmqtools", MQADMIN, ["updateTopic", "-n", gw.namesrv, "-c", "DefaultCluster",
                                                          "-t", topic], str(tmp_path))
            if tls:
                cmd.insert(cmd.index("-cp"), "-Dtls.enable=true")
            return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
        ok = mqadmin("tls-topic", True)
        assert f"create topic to {gw.namesrv} success." in ok.stdout, ok.stdout + ok.stderr
        plain = mqadmin("plain-topic", False)
        assert "success" not in plain.stdout and "RemotingSendRequestException" in plain.stdout + plain.stderr
    finally:
        gw.stop()


def test_a_listeners_advertised_address_in_find_coordinator():
    """FindCoordinator answers with the address Metadata advertises (metadata.broker_list)."""
    import types

    import trio

    from codec.kafka import apis
    from gateway.kafka import handlers

    lst = parse_listener("EXT=SASL_SSL://0.0.0.0:9094,kafka.example.com:443")
    from gateway.cluster.ownership import SINGLE_NODE

    topics = types.SimpleNamespace(submission=0)  # what handle() reads of the store: no topic change
    app = types.SimpleNamespace(config=types.SimpleNamespace(advertised="10.1.2.3"), security=None,
                                store=types.SimpleNamespace(topics=topics), ownership=SINGLE_NODE)
    conn = types.SimpleNamespace(app=app, client_id="c", peer_host="127.0.0.1", local_port=9094, listener=lst)

    def call(api, version, body):
        frame = protocol.request_frame(api.key, version, 5, body)[4:]
        out = trio.run(handlers.handle, conn, protocol.parse_header(frame), frame)
        return protocol.decode_response(api.key, version, bytes(out)[4:])[1]

    assert call(apis.FIND_COORDINATOR, 1, {"key": "g", "key_type": 0})["host"] == "kafka.example.com"
    found = call(apis.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]})["coordinators"][0]
    assert (found["host"], found["port"]) == ("kafka.example.com", 443)
    conn.listener = None
    found = call(apis.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]})["coordinators"][0]
    assert (found["host"], found["port"]) == ("10.1.2.3", 9094)
