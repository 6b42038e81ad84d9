"""The gateway's --tier-* flags (gateway/config.py): they build the App's object store and nothing else
yet; bad combinations and missing credentials are one-line usage errors, as every flag's are."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gateway.app import open_object_store
from gateway.config import parse_args
from gateway_process import ROOT, GatewayProcess, free_port


def test_without_the_flags_there_is_no_object_store():
    assert open_object_store(parse_args([])) is None


@pytest.mark.parametrize("argv, needle", [
    (["--tier-endpoint", "http://127.0.0.1:1"], "--tier-endpoint: needs --tier-url"),
    (["--tier-ca-file", "/x.pem"], "--tier-ca-file: needs --tier-url"),
    (["--tier-url", "http://bucket/p"], "expected s3://BUCKET/PREFIX"),
    (["--tier-url", "s3://b", "--tier-addressing", "dns"], "invalid choice"),
])
def test_bad_flags_are_usage_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert needle in capsys.readouterr().err


def test_the_flags_build_a_working_store(seaweed_s3, s3_bucket, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    config = parse_args(seaweed_s3.tier_args(s3_bucket, prefix="cluster-a"))
    store = open_object_store(config)
    store.put("00000000000000000000.log", b"sealed")
    assert store.get("00000000000000000000.log") == b"sealed"
    raw = seaweed_s3.client().get_object(Bucket=s3_bucket, Key="cluster-a/00000000000000000000.log")
    assert raw["Body"].read() == b"sealed"


def test_credentials_from_the_environment(seaweed_s3, s3_bucket, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", seaweed_s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", seaweed_s3.secret_key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    store = open_object_store(parse_args(["--tier-url", f"s3://{s3_bucket}/p", "--tier-endpoint",
                                          seaweed_s3.endpoint]))
    store.put("k", b"env")
    assert store.get("k") == b"env"


def _clean_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(tmp_path)  # no ~/.aws/credentials either
    return env


def test_gateway_without_credentials_refuses_to_start(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gateway", "--data-dir", str(tmp_path / "data"),
                        "--kafka-port", str(free_port()), "--remoting-port", str(free_port()),
                        "--tier-url", "s3://b/p", "--tier-endpoint", "http://127.0.0.1:1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60, env=_clean_env(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "no S3 credentials" in r.stderr and "AWS_ACCESS_KEY_ID" in r.stderr


def test_gateway_starts_with_a_tier(seaweed_s3, s3_bucket, tmp_path):
    g = GatewayProcess(str(tmp_path / "data"), extra_args=seaweed_s3.tier_args(s3_bucket))
    try:
        g.start()
    finally:
        g.stop()
