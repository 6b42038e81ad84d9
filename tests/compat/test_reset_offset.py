"""Backtracking by time (回溯消费) with RocketMQ's own tools: `mqadmin resetOffsetByTime` against a
running Java push consumer (rocketmq-client 4.9 and 5.x) and a running `client/` PushConsumer, which both
consume again from the reset point; `getConsumerStatus` (the broker asks the live clients);
`resetOffsetByTimeOld` / the CONSUMER_NOT_ONLINE fallback for an offline group; refusals."""
import socket
import threading
import time

import pytest

from codec.remoting import FrameReader, RemotingCommand, RequestCode, encode
from codec.remoting.bodies import loads
from client import Admin, ConsumeFrom, ConsumeStatus, Message, Producer, PushConsumer
from compat.harness import failure_context, run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.tools import mqadmin
from shard_aware import broker_names
import waiting

pytestmark = pytest.mark.timeout(900)
TOPIC = "rs-topic"
JAVA_GROUP = "rs-rs-cg"  # RocketCompat's reset_hold: PREFIX-rs-cg
PY_GROUP = "rs-py-cg"
N_OLD, N_NEW = 6, 5


class Collector:
    def __init__(self):
        self.bodies, self.lock = [], threading.Lock()

    def __call__(self, msgs):
        with self.lock:
            self.bodies.extend(m.body.decode() for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    def snapshot(self):
        with self.lock:
            return list(self.bodies)


def remoting_call(addr, code, fields):
    """One request over a raw connection (mqadmin 5.x does not register getConsumerStatus)."""
    host, _, port = addr.rpartition(":")
    reader = FrameReader()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(encode(RemotingCommand(code=code, ext_fields=fields, opaque=7)))
        while (resp := reader.next_command()) is None:
            reader.feed(sock.recv(65536))
    return resp


def wait_for(pred, timeout=60.0):
    return waiting.until(pred, timeout, interval=0.1)


def consumer_status(namesrv: str, timeout: float = 40.0):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS once the live Java client answers it: each broker of the
    route (each shard) pushed it a reset, and the client applies one at a time, each in a
    synchronized MQClientInstance.resetOffset that sleeps 10 s, on its callback threads (as many as
    cores: two here), so with two brokers the broker's question can wait past its 5 s."""
    deadline = time.monotonic() + timeout
    while True:
        resp = remoting_call(namesrv, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                             {"topic": TOPIC, "group": JAVA_GROUP})
        if resp.code != 0 or loads(resp.body)["consumerTable"] or time.monotonic() > deadline:
            return resp
        time.sleep(1)


@pytest.fixture(scope="module", params=["4.9", "5"])
def env(request, tmp_path_factory):
    state = {"py": Collector()}

    def before(gw):
        # Two generations of messages with a gap: the reset point is a millisecond inside the gap.
        with Producer("rs-pg", gw.namesrv) as p:
            for i in range(N_OLD):
                p.send(Message(TOPIC, f"old-{i}".encode()))
            time.sleep(0.3)
            state["reset_ms"] = int(time.time() * 1000)
            time.sleep(0.3)
            for i in range(N_NEW):
                p.send(Message(TOPIC, f"new-{i}".encode()))
        c = PushConsumer(PY_GROUP, gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=1.0)
        c.subscribe(TOPIC, "*")
        c.register_listener(state["py"])
        state["py_consumer"] = c.start()

    def on_pause(gw, log_dir):
        """The Java consumer has consumed everything and holds: reset both groups with mqadmin."""
        wait_for(lambda: len(state["py"].snapshot()) >= N_OLD + N_NEW)
        state["py_before"] = state["py"].snapshot()
        for name, group in (("java", JAVA_GROUP), ("py", PY_GROUP)):
            state[f"reset_{name}"] = mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", group, "-t", TOPIC,
                                              "-s", str(state["reset_ms"])], log_dir)
        state["status"] = consumer_status(gw.namesrv)
        wait_for(lambda: len(state["py"].snapshot()) >= N_OLD + 2 * N_NEW)
        state["py_consumer"].shutdown()

    with run_on_gateway(tmp_path_factory.mktemp("reset"), ROCKETMQ_CLIENTS[request.param], "compat.RocketCompat",
                        lambda gw: [gw.namesrv, "rs", f"reset_hold:{TOPIC}:{N_OLD + N_NEW}:{N_OLD + 2 * N_NEW}"],
                        before=before, on_pause=on_pause) as results:
        results.state = state
        yield results


def ok(env, r):
    assert r.returncode == 0 and "Exception" not in r.stdout + r.stderr and "not exist" not in r.stdout, \
        f"{r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}{failure_context(env.gw)}"
    return r.stdout


def offsets_table(out):
    """The '#brokerName #queueId #offset' rows printed by resetOffsetByTime: {(broker, queue): offset}
    (every broker of the route answers for its own queues: one, or each shard)."""
    rows = [line.split() for line in out.splitlines()]
    return {(r[0], int(r[1])): int(r[2]) for r in rows if len(r) == 3 and r[0] in broker_names()}


def consumer_offsets(gw, group):
    with Admin(gw.namesrv) as a:
        return {(mq.broker_name, mq.queue_id): row["consumerOffset"]
                for mq, row in a.consumer_progress(group, TOPIC).items()}


def new_bodies():
    return [f"new-{i}" for i in range(N_NEW)]


def test_java_consumer_reconsumes_from_the_reset_time(env):
    r = env["reset_hold"]
    out = ok(env, env.state["reset_java"])
    table = offsets_table(out)
    assert table and sum(table.values()) == N_OLD, out  # every queue at its first "new-" message
    assert r["before_reset"] == N_OLD + N_NEW, r
    again = r["received"][N_OLD + N_NEW:]
    assert sorted(again) == new_bodies(), r["received"]


def test_native_consumer_applies_the_reset(env):
    ok(env, env.state["reset_py"])
    assert sorted(env.state["py_before"]) == sorted([f"old-{i}" for i in range(N_OLD)] + new_bodies())
    got = env.state["py"].snapshot()
    assert sorted(got[N_OLD + N_NEW:]) == new_bodies(), got


def test_get_consumer_status_asks_the_live_java_client(env):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS: the broker asks the live Java client
    (GET_CONSUMER_STATUS_FROM_CLIENT) for its offsets, which are the reset ones."""
    resp = env.state["status"]
    assert resp.code == 0, (resp.code, resp.remark)
    table = loads(resp.body)["consumerTable"]
    assert list(table) == [env["reset_hold"]["client_id"]], table
    offsets = table[env["reset_hold"]["client_id"]]
    assert {t for (t, _b, _q) in offsets} == {TOPIC}, offsets


def test_offline_group_falls_back_to_the_old_reset(env, tmp_path):
    """With no live member the broker answers CONSUMER_NOT_ONLINE and mqadmin resets through
    GET_CONSUME_STATS, SEARCH_OFFSET_BY_TIMESTAMP and UPDATE_CONSUMER_OFFSET itself (the
    resetOffsetByTimeOld code): the offsets land in the one table."""
    gw = env.gw
    out = ok(env, mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", JAVA_GROUP, "-t", TOPIC, "-s", "0"],
                          str(tmp_path)))
    assert "#resetOffset" in out, out  # the old command's table: the fallback ran
    assert sum(consumer_offsets(gw, JAVA_GROUP).values()) == 0
    # mqadmin 5.x does not register resetOffsetByTimeOld itself; its code is this fallback.
    out = ok(env, mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", JAVA_GROUP, "-t", TOPIC,
                           "-s", str(env.state["reset_ms"])], str(tmp_path)))
    assert sum(consumer_offsets(gw, JAVA_GROUP).values()) == N_OLD, out


def test_unknown_group_or_topic_is_refused_and_changes_nothing(env, tmp_path):
    gw = env.gw
    before = consumer_offsets(gw, PY_GROUP)
    r = mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", "rs-nobody", "-t", TOPIC, "-s", "0"], str(tmp_path))
    assert "THe consumer group <rs-nobody> not exist" in r.stdout + r.stderr, r.stdout + r.stderr
    r = mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", PY_GROUP, "-t", "rs-missing", "-s", "0"], str(tmp_path))
    assert r.returncode != 0 or "Exception" in r.stdout + r.stderr, r.stdout
    assert consumer_offsets(gw, PY_GROUP) == before
