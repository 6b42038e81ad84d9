"""The supervisor's port picks for the other shards and its etcd (no processes): never one of the
configured ports (shard 0's, not bound yet when it picks, so the OS may offer one) and never one
port twice. Before, `make test-shards` saw shard 1's Kafka port equal to shard 0's remoting port,
and shard 0 crash-looped on "address already in use"."""
from __future__ import annotations

import gateway.shards as shards
from gateway.config import parse_args


def test_the_other_shards_never_get_a_configured_port_or_one_port_twice(monkeypatch):
    config = parse_args(["--kafka-port", "40001", "--remoting-port", "40002", "--http-port", "40003"])
    offered = iter([40002, 40001, 40003, 40010, 40010, 40011, 40012, 40013, 40014])  # what the OS says
    monkeypatch.setattr(shards, "free_port", lambda host="127.0.0.1": next(offered))
    pick = shards.PortPicker(config)
    etcd = [pick("127.0.0.1"), pick("127.0.0.1")]
    ports = [shards.shard_ports(config, index, pick) for index in range(2)]
    assert ports[0] == {"kafka_port": 40001, "remoting_port": 40002, "http_port": 40003}
    assert etcd == [40010, 40011]
    assert ports[1] == {"kafka_port": 40012, "remoting_port": 40013, "http_port": 40014}


def test_acl_shards_get_an_inter_broker_credential_made_for_their_data_dir(tmp_path):
    """`--shards N --authorizer acl` (one gateway to the user, a cluster inside) needs the credential a
    cluster with ACLs signs its forwards with; before, every shard exited 2 ("--authorizer acl in a
    cluster needs --inter-broker-credentials") and the supervisor restarted them forever."""
    from security.inter_broker import load

    data = str(tmp_path)
    config = parse_args(["--data-dir", data, "--authorizer", "acl"])
    flag = shards.private_inter_broker(config)
    assert flag == ["--inter-broker-credentials", str(tmp_path / shards.INTER_BROKER_FILE)]
    assert (tmp_path / shards.INTER_BROKER_FILE).stat().st_mode & 0o777 == 0o600
    first = load(flag[1])
    assert first.secret_key and shards.private_inter_broker(config) == flag and load(flag[1]) == first  # kept
    parse_args(["--data-dir", data, "--authorizer", "acl", "--cluster", "etcd://127.0.0.1:1", *flag])  # accepted
    assert shards.private_inter_broker(parse_args(["--data-dir", data])) == []  # no ACLs: not needed
    assert shards.private_inter_broker(parse_args(["--data-dir", data, "--authorizer", "acl", "--cluster",
                                                   "etcd://127.0.0.1:1", "--node-id", "1", *flag])) == []
