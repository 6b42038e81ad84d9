"""--grpc-port: off when absent; a gRPC listener on --host when given; refused on a non-loopback
address unless calls are authenticated (--authorizer acl: signed calls, gateway.grpc.auth) or
--allow-anonymous says so."""
import pytest

from gateway.config import parse_args
from gateway.listeners import authenticates, endpoints


def test_off_by_default():
    cfg = parse_args([])
    assert cfg.grpc_port is None
    assert [lst.kind for lst in endpoints(cfg)] == ["kafka", "remoting"]


def test_grpc_listener():
    cfg = parse_args(["--grpc-port", "18081"])
    grpc = [lst for lst in endpoints(cfg) if lst.kind == "grpc"]
    assert len(grpc) == 1 and grpc[0].port == 18081 and grpc[0].host == "127.0.0.1"


def test_non_loopback_needs_authentication_or_allow_anonymous(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--host", "0.0.0.0", "--grpc-port", "18081"])
    assert "without authentication" in capsys.readouterr().err
    assert parse_args(["--host", "0.0.0.0", "--grpc-port", "1", "--allow-anonymous"]).grpc_port == 1
    secured = parse_args(["--host", "0.0.0.0", "--grpc-port", "18081", "--authorizer", "acl",
                          "--kafka-security-protocol", "SASL_PLAINTEXT"])
    [grpc] = [lst for lst in endpoints(secured) if lst.kind == "grpc"]
    assert authenticates(grpc, secured) and grpc.host == "0.0.0.0"
    [grpc] = [lst for lst in endpoints(parse_args(["--grpc-port", "18081"])) if lst.kind == "grpc"]
    assert not authenticates(grpc, parse_args(["--grpc-port", "18081"]))


def test_push_consumers_are_told_the_long_polling_flag():
    """--grpc-long-polling-ms is the long poll a push consumer's Settings are answered with (the
    SDKs' close() waits for the receive in flight, so tests set it short); simple consumers keep theirs."""
    from types import SimpleNamespace

    from gateway.grpc.common import d
    from gateway.grpc.telemetry import applied_settings
    app = SimpleNamespace(config=parse_args(["--grpc-long-polling-ms", "2500"]))
    push = d.Settings(client_type=d.ClientType.PUSH_CONSUMER, subscription=d.Subscription())
    assert applied_settings(app, push, d.Endpoints()).subscription.long_polling_timeout.ToMilliseconds() == 2500
    simple = d.Settings(client_type=d.ClientType.SIMPLE_CONSUMER, subscription=d.Subscription())
    simple.subscription.long_polling_timeout.FromSeconds(7)
    assert applied_settings(app, simple, d.Endpoints()).subscription.long_polling_timeout.ToMilliseconds() == 7000
    assert parse_args([]).grpc_long_polling_ms == 30_000
    with pytest.raises(SystemExit):
        parse_args(["--grpc-long-polling-ms", "999"])
