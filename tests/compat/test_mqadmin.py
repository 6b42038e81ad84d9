"""RocketMQ's `mqadmin` (rocketmq-tools 5.x) against a live gateway: topicList, updateTopic,
queryMsgByKey, queryMsgById, consumerProgress. Messages and a consumer group's offsets come from one run
of the Java client scenarios (rocketmq-client 5.x)."""
import pytest

from compat import checks
from compat.harness import failure_context, run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.tools import mqadmin

# The module's JVM run (its fixture) bounds each scenario's waits; it counts against the first test.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with run_on_gateway(tmp_path_factory.mktemp("mqadmin"), ROCKETMQ_CLIENTS["5"], "compat.RocketCompat",
                        lambda gw: [gw.namesrv, "ma", "push_tags", "cross_produce:adm-msgs"]) as results:
        yield results


def admin(env, *args):
    r = mqadmin([args[0], "-n", env.gw.namesrv, *args[1:]], env.log_dir)
    assert r.returncode == 0 and "Exception" not in r.stdout + r.stderr, \
        f"mqadmin {args} -> {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}{failure_context(env.gw)}"
    return r.stdout


def test_update_topic_then_topic_list(env):
    out = admin(env, "updateTopic", "-c", "DefaultCluster", "-t", "adm-created", "-r", "4", "-w", "4")
    assert "create topic to" in out and "success" in out, out
    names = admin(env, "topicList").split()
    assert "adm-created" in names and "adm-msgs" in names and "ma-tags" in names, names


def test_query_msg_by_key(env):
    sent = env["cross_produce"]["sent"]
    out = admin(env, "queryMsgByKey", "-t", "adm-msgs", "-k", "ck-1")
    assert sent[1]["msg_id"] in out, out
    assert sent[0]["msg_id"] not in out and sent[2]["msg_id"] not in out, out


def test_query_msg_by_id(env):
    sent = env["cross_produce"]["sent"][2]
    out = admin(env, "queryMsgById", "-t", "adm-msgs", "-i", sent["offset_msg_id"])
    assert "adm-msgs" in out and "TagX" in out and "ck-2" in out, out


def test_consumer_progress(env):
    received = env["push_tags"]["received"]
    checks.rocketmq_push_tags(env["push_tags"])
    out = admin(env, "consumerProgress", "-g", "ma-tags-cg")
    # columns: #Topic #Broker Name #QID #Broker Offset #Consumer Offset #Diff ...
    # one row per (broker, queue): one broker, or each shard's own queues under make test-shards
    rows = {(r[1], int(r[2])): (int(r[3]), int(r[4])) for r in (line.split() for line in out.splitlines())
            if r and r[0] == "ma-tags"}
    assert rows, out
    assert sum(broker for broker, _ in rows.values()) == 30, out
    for m in received:  # the group's committed offset is past everything it consumed (its broker's row)
        candidates = [offsets for (_broker, qid), offsets in rows.items() if qid == m["queue"]]
        assert any(m["offset"] < consumer <= broker for broker, consumer in candidates), (m, out)
