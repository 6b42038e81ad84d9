"""Forwarding due messages in a secured cluster (issue 13; docs/security.md "Between gateways",
docs/cluster.md "Delivery into a queue that moved"): with `--authorizer acl` every gateway signs
CLUSTER_DELIVER with the cluster's inter-broker credential (`--inter-broker-credentials`), and a
leader takes it from that credential only: unsigned, forged, changed, or signed by any user (even
a super user of clients) it is refused with NO_PERMISSION and appends nothing. With
`--remoting-tls` the forward connects over TLS.

Two real gateways on a real etcd; the queue has two replicas (the follower's fetches are signed
with the same credential) and changes leader with `rocketgate cluster reassign` between the send
and the due time, as in test_cluster_delay_failover."""
from __future__ import annotations

import json
import os
import ssl
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import test_cluster_delay_failover as delay_failover
from client import Message, Producer, TransactionProducer, TransactionState
from clusters import require_etcd, start_cluster, wait_for
from raw_kafka import send_command as call
from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting import acl as sig
from codec.remoting import message as M
from gateway.config import parse_args
from security import Security
from security.inter_broker import InterBrokerCredential
from tests.security.certs import make_certs

NODES = (1, 2)
LEVELS = "1s 5s 10s 20s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DELAY_LEVEL, DELAY_SECONDS = 3, 10
ADMIN, ADMIN_SECRET = "admin", "admin-secret"  # the bootstrap super user (--super-users User:admin)
BROKER = InterBrokerCredential("rg-inter-broker", "inter-broker-secret")


def _write_credential(base, credential: InterBrokerCredential) -> str:
    path = os.path.join(str(base), "inter-broker.json")
    with open(path, "w") as f:
        json.dump({"accessKey": credential.access_key, "secretKey": credential.secret_key}, f)
    os.chmod(path, 0o600)
    return path


def _secured_cluster(base, extra=()):
    os.makedirs(str(base), exist_ok=True)
    args = ["--authorizer", "acl", "--super-users", f"User:{ADMIN}", "--message-delay-level", LEVELS,
            "--default-replication-factor", "2", "--transaction-timeout-ms", "300",
            "--transaction-check-interval-ms", "500", "--transaction-check-max", "1000",
            "--inter-broker-credentials", _write_credential(base, BROKER), *extra]
    os.environ["ROCKETGATE_ADMIN_PASSWORD"] = ADMIN_SECRET  # each gateway bootstraps user admin
    try:
        return start_cluster(base, NODES, extra_args=args)
    finally:
        del os.environ["ROCKETGATE_ADMIN_PASSWORD"]


# ------------------------------------------------------------ remoting over TCP or TLS

def admin_call(port: int, code: int, fields: dict, tls=None) -> RemotingCommand:
    cmd = RemotingCommand(code=code, ext_fields={k: str(v) for k, v in fields.items()})
    sig.sign(cmd, ADMIN, ADMIN_SECRET)
    return call(port, cmd, tls)


def route_brokers(g, topic: str, tls=None) -> list[str]:
    resp = call(g.remoting_port, RemotingCommand(code=RC.GET_ROUTEINFO_BY_TOPIC, ext_fields={"topic": topic}), tls)
    if resp.code != ResponseCode.SUCCESS:
        return []
    return sorted(q["brokerName"] for q in json.loads(resp.body)["queueDatas"] if q["writeQueueNums"])


def state(g, topic: str, tls=None) -> dict:
    """Queue 0's role, epoch, ISR and log end at this gateway (REPLICA_STATE: cluster ids)."""
    resp = admin_call(g.remoting_port, RC.REPLICA_STATE, {"topic": topic, "queueId": 0}, tls)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return json.loads(resp.body)


def lead(cluster, topic: str, leader: int, tls=None) -> None:
    """Make `leader` lead queue 0 (the other gateway its follower), and wait until both act on it
    and route to it."""
    from gateway.admin.cli import main
    gws, other = cluster.gateways, next(n for n in NODES if n != leader)
    assert main(["cluster", "reassign", "--etcd", cluster.etcd.url, topic, "0", "--replicas", f"{leader},{other}"]) == 0
    wait_for(lambda: state(gws[leader], topic, tls).get("role") == "leader"
             and state(gws[other], topic, tls).get("role") == "follower"
             and state(gws[other], topic, tls).get("epoch") == state(gws[leader], topic, tls).get("epoch")
             and all(route_brokers(g, topic, tls) == [f"broker-{leader}"] for g in gws.values()),
             what=f"node {leader} to lead {topic}")


def same_log(gws, topic: str, end: int, tls=None) -> bool:
    """Both copies of queue 0 end at `end`: the follower holds what the leader holds (replicated
    under ACLs, signed with the inter-broker credential)."""
    return state(gws[1], topic, tls)["logEnd"] == state(gws[2], topic, tls)["logEnd"] == end


def make_topic(cluster, topic: str, tls=None) -> None:
    resp = admin_call(cluster.gateways[1].remoting_port, RC.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}, tls)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    lead(cluster, topic, 1, tls)


def log_end(g, topic: str, tls=None) -> int:
    return state(g, topic, tls)["logEnd"]


def deliver_command(topic: str, body: bytes) -> RemotingCommand:
    """A CLUSTER_DELIVER of one message into queue 0 of `topic`, as a gateway would send it."""
    msg = M.Message(topic=topic, body=body, queue_id=0, properties={"UNIQ_KEY": body.hex()})
    return RemotingCommand(code=RC.CLUSTER_DELIVER, ext_fields={"count": "1"}, body=M.encode(msg))


# ------------------------------------------------------------ plain remoting port

@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    require_etcd()
    cluster = _secured_cluster(tmp_path_factory.mktemp("cluster-delay-acl"))
    try:
        yield cluster
    finally:
        cluster.stop()


def read_at_leader(g, topic: str, want: bytes, settle: float = 3.0) -> list[bytes]:
    return delay_failover.read_at_leader(g, topic, want, settle, access_key=ADMIN, secret_key=ADMIN_SECRET)


def test_a_delayed_message_reaches_the_new_leader_once_under_acl(secured):
    gws = secured.gateways
    make_topic(secured, "acl-delayed-moving")
    p = Producer("acl-delay-pg", gws[1].namesrv, access_key=ADMIN, secret_key=ADMIN_SECRET).start()
    try:
        sent_at = time.monotonic()
        r = p.send(Message("acl-delayed-moving", b"due-after-the-move", delay_level=DELAY_LEVEL))
    finally:
        p.shutdown()
    assert r.queue.broker_name == "broker-1"  # stored in gateway 1's schedule topic
    lead(secured, "acl-delayed-moving", 2)
    assert time.monotonic() - sent_at < DELAY_SECONDS - 1, "the move took longer than the delay: nothing tested"
    assert read_at_leader(gws[2], "acl-delayed-moving", b"due-after-the-move") == [b"due-after-the-move"]
    wait_for(lambda: same_log(gws, "acl-delayed-moving", 1), what="the follower to hold the leader's log")


def test_a_transaction_committed_after_the_move_reaches_the_new_leader_once_under_acl(secured):
    """The commit is decided on gateway 1 (its half topic) after the queue moved: it goes through
    the same signed CLUSTER_DELIVER."""
    gws = secured.gateways
    make_topic(secured, "acl-tx-moving")
    moved = threading.Event()
    p = TransactionProducer("acl-tx-pg", gws[1].namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                            check_listener=lambda m: TransactionState.COMMIT if moved.is_set()
                            else TransactionState.UNKNOWN, access_key=ADMIN, secret_key=ADMIN_SECRET).start()
    try:
        r, _ = p.send_in_transaction(Message("acl-tx-moving", b"committed-after-the-move"))
        assert r.queue.broker_name == "broker-1"  # the half waits in gateway 1's half topic
        lead(secured, "acl-tx-moving", 2)
        moved.set()  # the next check-back commits it at gateway 1
        got = read_at_leader(gws[2], "acl-tx-moving", b"committed-after-the-move")
    finally:
        p.shutdown()
    assert got == [b"committed-after-the-move"]
    wait_for(lambda: same_log(gws, "acl-tx-moving", 1), what="the follower to hold the leader's log")


def _forged(topic: str) -> dict[str, RemotingCommand]:
    cmds = {name: deliver_command(topic, name.encode()) for name in (
        "unsigned", "super-user", "wrong-secret", "changed-body", "changed-field", "other-key-signature")}
    sig.sign(cmds["super-user"], ADMIN, ADMIN_SECRET)  # a super user of clients is no gateway
    sig.sign(cmds["wrong-secret"], BROKER.access_key, "guessed")
    BROKER.sign(cmds["changed-body"])
    cmds["changed-body"].body = deliver_command(topic, b"swapped").body
    BROKER.sign(cmds["changed-field"])
    cmds["changed-field"].ext_fields["count"] = "2"
    sig.sign(cmds["other-key-signature"], ADMIN, ADMIN_SECRET)
    cmds["other-key-signature"].ext_fields[sig.ACCESS_KEY] = BROKER.access_key  # admin's signature, broker's key
    return cmds


def test_unsigned_forged_or_user_signed_deliveries_are_refused(secured):
    gws = secured.gateways
    make_topic(secured, "acl-forged")
    lead(secured, "acl-forged", 2)
    before = log_end(gws[2], "acl-forged")
    for name, cmd in _forged("acl-forged").items():
        resp = call(gws[2].remoting_port, cmd)
        assert resp.code == ResponseCode.NO_PERMISSION, (name, resp.code, resp.remark)
    assert "only the inter-broker principal" in call(gws[2].remoting_port, _forged("acl-forged")["super-user"]).remark
    time.sleep(0.5)
    assert log_end(gws[2], "acl-forged") == before  # nothing appended
    genuine = deliver_command("acl-forged", b"genuine")  # the control: the same request, properly signed
    BROKER.sign(genuine)
    resp = call(gws[2].remoting_port, genuine)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert log_end(gws[2], "acl-forged") == before + 1
    wait_for(lambda: same_log(gws, "acl-forged", before + 1), what="the follower to copy the genuine delivery")


def test_acl_in_a_cluster_needs_the_inter_broker_credential(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--cluster", "etcd://127.0.0.1:2379", "--node-id", "1", "--authorizer", "acl"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--inter-broker-credentials" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"accessKey": "only-a-key"}')
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--cluster", "etcd://127.0.0.1:2379", "--authorizer", "acl", "--inter-broker-credentials", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "secretKey" in err
    good = _write_credential(tmp_path, BROKER)
    config = parse_args(["--cluster", "etcd://127.0.0.1:2379", "--authorizer", "acl",
                         "--inter-broker-credentials", good])
    assert config.inter_broker == BROKER and BROKER.secret_key not in repr(config)


# ------------------------------------------------------------ TLS-only remoting ports

@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    require_etcd()
    base = tmp_path_factory.mktemp("cluster-delay-acl-tls")
    certs = make_certs(str(base / "certs"))
    cluster = _secured_cluster(base, ["--remoting-tls", "--tls-cert", certs.server_cert, "--tls-key", certs.server_key,
                                      "--tls-ca", certs.ca])
    ctx = ssl.create_default_context(cafile=certs.ca)
    ctx.load_cert_chain(certs.client_cert, certs.client_key)  # --tls-ca: the port wants a client certificate
    try:
        yield cluster, ctx
    finally:
        cluster.stop()


def pull_bodies(g, topic: str, tls) -> list[bytes]:
    resp = admin_call(g.remoting_port, RC.PULL_MESSAGE, {
        "consumerGroup": "acl-tls-readers", "topic": topic, "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
        "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0}, tls)
    body, pos, out = resp.body or b"", 0, []
    while pos < len(body):
        m = M.decode(body, pos)
        pos += m.size
        out.append(bytes(m.body))
    return out


def test_forwarding_connects_with_tls_when_the_remoting_port_wants_it(tls_cluster):
    cluster, tls = tls_cluster
    gws = cluster.gateways
    make_topic(cluster, "acl-tls-moving", tls)
    props = M.properties_to_string({"DELAY": str(DELAY_LEVEL), "UNIQ_KEY": "acl-tls-moving-1"})
    send = RemotingCommand(code=RC.SEND_MESSAGE, body=b"due-over-tls", ext_fields={
        "producerGroup": "acl-tls-pg", "topic": "acl-tls-moving", "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0", "bornTimestamp": str(int(time.time() * 1000)),
        "flag": "0", "properties": props, "reconsumeTimes": "0", "unitMode": "false"})
    sig.sign(send, ADMIN, ADMIN_SECRET)
    sent_at = time.monotonic()
    resp = call(gws[1].remoting_port, send, tls)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    lead(cluster, "acl-tls-moving", 2, tls)
    assert time.monotonic() - sent_at < DELAY_SECONDS - 1, "the move took longer than the delay: nothing tested"
    wait_for(lambda: pull_bodies(gws[2], "acl-tls-moving", tls), 40, "the delayed message at the new leader")
    time.sleep(2)
    assert pull_bodies(gws[2], "acl-tls-moving", tls) == [b"due-over-tls"]
    wait_for(lambda: same_log(gws, "acl-tls-moving", 1, tls), what="the follower to hold the leader's log")


# ------------------------------------------------------------ fuzz: the guard alone

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
text = st.text(st.characters(codec=None, blacklist_categories=()), max_size=30)
_n = iter(range(1, 1 << 24))


def _address() -> str:
    i = next(_n)  # each request from its own address: the failure limiter never decides
    return f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"


@pytest.fixture(scope="module")
def guard(tmp_path_factory):
    from security import rocketmq_perms
    s = Security(str(tmp_path_factory.mktemp("acl13-fuzz")), super_users=["User:root"], environ={},
                 inter_broker=BROKER)
    s.credentials.set_access_key("ROOT", "RS", user="root")
    s.credentials.set_access_key("AK", "SK", user="alice")
    s.credentials.set_access_key(BROKER.access_key, "store-secret", user="impostor")  # same key, other secret
    rocketmq_perms.set_whitelist(s.authorizer, ["10.0.0.0/8"])  # every fuzz address is whitelisted
    return s


def test_the_inter_broker_signature_passes_and_nothing_else(guard):
    cmd = deliver_command("t", b"x")
    BROKER.sign(cmd)
    assert guard.check_remoting(cmd, _address()) is None
    send = RemotingCommand(code=RC.SEND_MESSAGE, ext_fields={"topic": "t"})
    BROKER.sign(send)  # the inter-broker credential is no client login (the store has another secret)
    assert guard.check_remoting(send, "192.0.2.1").code == ResponseCode.NO_PERMISSION
    for signer, passes in ((BROKER.sign, True), (lambda c: sig.sign(c, "ROOT", "RS"), True),
                           (lambda c: sig.sign(c, "AK", "SK"), False), (lambda c: None, False)):
        fetch = RemotingCommand(code=RC.REPLICA_FETCH, ext_fields={"topic": "t", "queueId": "0"})
        signer(fetch)  # a follower gateway, a cluster admin (as before), a user, nobody
        assert (guard.check_remoting(fetch, "192.0.2.2") is None) == passes


@SETTINGS
@given(fields=st.dictionaries(text, text, max_size=5), body=st.binary(max_size=120),
       change=st.sampled_from(["field", "new field", "body", "signature", "access key", "drop", "token",
                               "root", "store secret"]), value=text, byte=st.integers(0, 255))
def test_changed_inter_broker_requests_never_pass(guard, fields, body, change, value, byte):
    cmd = RemotingCommand(code=RC.CLUSTER_DELIVER, ext_fields=dict(fields), body=body)
    BROKER.sign(cmd)
    before = (dict(cmd.ext_fields), bytes(cmd.body))
    f = cmd.ext_fields
    if change == "field":
        f[sorted(f)[byte % len(f)]] = value
    elif change == "new field":
        f[value or "x"] = f.get(value or "x", "") + "!"
    elif change == "body":
        cmd.body = bytes(cmd.body) + bytes([byte])
    elif change == "signature":
        f[sig.SIGNATURE] = value
    elif change == "access key":
        f[sig.ACCESS_KEY] = value
    elif change == "drop":
        del f[sig.SIGNATURE if byte % 2 else sig.ACCESS_KEY]
    elif change == "token":
        f[sig.SECURITY_TOKEN] = value + "t"
    elif change == "root":  # re-signed by the super user of clients
        sig.sign(cmd, "ROOT", "RS")
    else:  # signed with the user store's secret of the same access key
        sig.sign(cmd, BROKER.access_key, "store-secret")
    answer = guard.check_remoting(cmd, _address())
    if (dict(cmd.ext_fields), bytes(cmd.body)) == before:
        assert answer is None  # unchanged: the genuine forward passes
        return
    assert answer is not None and answer.code == ResponseCode.NO_PERMISSION and answer.remark, (change, answer)


def test_transaction_markers_pass_only_with_the_inter_broker_signature(guard):
    """CLUSTER_TXN_MARKERS (a Kafka transaction's end for a leader's partitions) is checked as
    CLUSTER_DELIVER: the inter-broker signature passes; a super user's, a user's or none is refused,
    whitelisted address or not (before: a whitelisted address passed unsigned)."""
    body = b'{"txn": "t", "pid": 1000, "epoch": 0, "commit": true, "partitions": [["t", 0]]}'
    for signer, passes in ((BROKER.sign, True), (lambda c: sig.sign(c, "ROOT", "RS"), False),
                           (lambda c: sig.sign(c, "AK", "SK"), False), (lambda c: None, False)):
        cmd = RemotingCommand(code=RC.CLUSTER_TXN_MARKERS, body=body)
        signer(cmd)
        assert (guard.check_remoting(cmd, _address()) is None) == passes
