"""kcat (librdkafka's CLI, Debian package) against a live gateway: metadata (-L), produce with keys and
headers under every codec (-P -z), consume to the end (-C -e)."""
import json

import pytest

from compat.checks import CODECS
from compat.harness import failure_context, module_gateway  # noqa: F401 (fixture gw)
from compat.tools import kcat, kcat_json_lines
from shard_aware import broker_ids

MESSAGES = [f"k{i}:v{i}" for i in range(5)]


def ok(gw, args, input=None):
    r = kcat(["-b", gw.kafka_bootstrap, *args], input=input)
    assert r.returncode == 0, f"kcat {args} -> {r.returncode}\n{r.stderr.decode()[-3000:]}{failure_context(gw)}"
    return r.stdout


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_keys_headers(gw, codec):
    topic = f"kcat-{codec}"
    ok(gw, ["-P", "-t", topic, "-p", "0", "-K:", "-z", codec, "-H", "h1=one", "-H", "h2=", "-H", "h1=again"],
       input=("\n".join(MESSAGES) + "\n").encode())
    got = kcat_json_lines(ok(gw, ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J"]))
    assert [(m["offset"], m["key"], m["payload"]) for m in got] == \
        [(i, f"k{i}", f"v{i}") for i in range(len(MESSAGES))], got
    assert all(m["headers"] == ["h1", "one", "h2", "", "h1", "again"] for m in got), got
    assert all(m["tstype"] == "create" and m["ts"] > 0 for m in got), got


def test_metadata_list(gw):
    ok(gw, ["-P", "-t", "kcat-meta", "-p", "0", "-K:"], input=b"a:b\n")
    md = json.loads(ok(gw, ["-L", "-J"]))
    brokers = sorted(md["brokers"], key=lambda b: b["id"])
    assert [b["id"] for b in brokers] == broker_ids(), brokers  # node 0, or shards 1..N (make test-shards)
    assert brokers[0]["name"] == gw.kafka_bootstrap, brokers  # the bootstrap port is the first broker's
    topics = {t["topic"]: t for t in md["topics"]}
    assert "kcat-meta" in topics, sorted(topics)
    parts = topics["kcat-meta"]["partitions"]
    assert parts and all(p["leader"] in broker_ids() for p in parts), parts


def test_balanced_consumer_group_commits_and_resumes(gw):
    """kcat -G (librdkafka's group consumer): reads everything, commits on exit; the next run of the
    same group gets only what was produced since."""
    def produce(first, last):
        ok(gw, ["-P", "-t", "kcat-group", "-K:"], input="".join(f"k{i}:v{i}\n" for i in range(first, last)).encode())

    def consume():
        out = ok(gw, ["-G", "kcat-grp", "-X", "auto.offset.reset=earliest", "-e", "-J", "kcat-group"])
        return sorted(m["payload"] for m in kcat_json_lines(out))

    produce(0, 20)
    assert consume() == sorted(f"v{i}" for i in range(20))
    produce(20, 25)
    assert consume() == sorted(f"v{i}" for i in range(20, 25))
