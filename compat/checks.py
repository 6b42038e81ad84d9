"""What the Java scenario programs must observe, as assertions over their JSON results.

Shared by tests/compat (against the gateway) and `python -m compat.validate` (against real Apache
Kafka/RocketMQ brokers), so the expectations are checked to hold for the real systems too.
"""
from __future__ import annotations

from collections import defaultdict

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _dense(offsets: list[int]) -> bool:
    return sorted(offsets) == list(range(len(offsets)))


# ---- Kafka (compat.KafkaCompat) ----

def kafka_codec(r: dict, codec: str) -> None:
    """Every record comes back exactly: key, null key, null value, binary/repeated/empty headers, CreateTime."""
    sent, got = r[codec]["sent"], r[codec]["received"]
    assert [s["offset"] for s in sent] == list(range(12)), sent
    assert got == sent


def kafka_idempotent(r: dict) -> None:
    assert r["configs"] == ["default", "explicit"]
    sent, got = r["sent"], r["received"]
    assert sum(len(v) for v in sent.values()) == 600
    assert got == sent, "records lost, duplicated or reordered"
    for part in sent.values():
        assert _dense([int(x.split(":")[0]) for x in part])


def kafka_group(r: dict) -> None:
    for step in ("a_alone", "a_got_first", "split", "both_got_second", "a_took_all_back"):
        assert r[step] is True, (step, r)
    assert r["a"]["error"] is None and r["b"]["error"] is None, r
    assert sorted(r["a_split"] + r["b_split"]) == [0, 1, 2, 3], r
    assert r["received_distinct"] == 40, r
    d = r["described"]
    assert d["members"] == ["member-a", "member-b"] and d["state"].upper() == "STABLE", d
    assert r["a"]["history"][0] == [0, 1, 2, 3] and r["a"]["history"][-1] == [0, 1, 2, 3], r["a"]


def kafka_commit(first: dict, second: dict) -> None:
    """Explicit commits with metadata survive a restart; consumption resumes at the committed offsets."""
    expect = {"0": {"offset": 6, "metadata": "meta-0"}, "1": {"offset": 7, "metadata": "meta-1"}}
    assert first["consumed"] == 20, first
    assert first["committed"] == expect, first
    assert second["committed_before"] == expect, ("commits lost across the restart", second)
    assert second["offsets"] == {"0": list(range(6, 14)), "1": list(range(7, 14))}, second
    assert {k: v["offset"] for k, v in second["committed_after"].items()} == {"0": 14, "1": 14}, second
    assert sorted(second["listed"].values()) == [14, 14], second


def kafka_retry(start: dict, finish: dict) -> None:
    """An idempotent producer sending through a broker restart: its retries store nothing twice,
    every acknowledged record is where its ack said, per-key order holds, and no send failed."""
    assert start["acked_before_restart"] is True, start
    assert finish["failed_count"] == 0, finish["failed"]
    assert finish["resumed"] is True, "the producer made no progress after the restart"
    values = [x.split(":")[2] for x in finish["stored"]]
    doubled = sorted({v for v in values if values.count(v) > 1}, key=lambda v: int(v[3:]))
    assert not doubled, f"{len(doubled)} records stored twice, e.g. {doubled[:10]}"
    assert len(values) == finish["sent"], (len(values), finish["sent"])
    missing = set(finish["acked"]) - set(finish["stored"])
    assert not missing, f"acknowledged but not stored at the acknowledged offset: {sorted(missing)[:10]}"
    by_key = defaultdict(list)
    for v in values:  # stored in partition/offset order
        by_key[int(v[3:]) % 4].append(int(v[3:]))
    assert all(seq == sorted(seq) for seq in by_key.values()), "per-key order broken"


def kafka_seek(r: dict) -> None:
    assert r["after_seek_20"] == [20, 21, 22, 23, 24], r
    assert (r["begin"], r["end"]) == (0, 50), r
    assert r["after_seek_45"] == [45, 46, 47, 48, 49], r
    assert (r["beginning_offsets"], r["end_offsets"]) == (0, 50), r


def kafka_times(r: dict) -> None:
    assert r["at_middle"]["offset"] == 5 and r["at_middle"]["timestamp"] >= r["middle"], r
    assert r["at_zero"]["offset"] == 0, r
    assert r["in_future"] is None, r


def kafka_admin(r: dict, brokers: int = 1) -> None:
    """`brokers`: how many the cluster has (a Kafka broker, or a gateway's shards: each is one)."""
    nodes = r["cluster"]["nodes"]
    assert len(nodes) == brokers and r["cluster"]["controller"] in nodes, r["cluster"]
    assert r["listed_after_create"] is True
    parts = r["described"]["partitions"]
    assert [p["partition"] for p in parts] == [0, 1, 2] and all(p["leader"] in nodes for p in parts), parts
    assert r["configs"].get("retention.ms") == "3600000", r["configs"]
    assert r["configs"].get("cleanup.policy") == "delete", r["configs"]
    assert "max.message.bytes" in r["configs"], r["configs"]
    assert r["create_again"] == "TopicExistsException", r
    assert [p["partition"] for p in r["described_after_grow"]["partitions"]] == [0, 1, 2, 3, 4], r
    assert r["produce_to_new_partition"] == 0, r
    assert r["gone_after_delete"] is True, r


def kafka_too_large(r: dict) -> None:
    assert r["error"] == "RecordTooLargeException", r
    assert r["small_offset"] == 0 and r["stored_keys"] == ["small"], r


# ---- RocketMQ (compat.RocketCompat) ----

GLOBAL_BROKER = "__syslo__global__"


def _position(m: dict, cluster_ids: bool = False) -> tuple:
    """A message's queue: (broker, queue id), as each broker (a RocketMQ broker, a gateway's shard)
    numbers its queues from 0; with `cluster_ids` the id alone (below)."""
    return (None if cluster_ids else m.get("broker")), m["queue"]


def _cluster_ids(received: list[dict]) -> bool:
    """Whether the client read the route's static-topic mapping (a RocketMQ 5 client of shards or a
    gateway cluster, RIP-21): its queue ids are the topic's own, a received message names the mock
    broker `__syslo__global__` (PullAPIWrapper.processPullResult sets the pulled queue's broker name)
    and a send result the real one, so only the id names the queue."""
    return any(m.get("broker") == GLOBAL_BROKER for m in received)


def _per_queue_dense(received: list[dict]) -> None:
    by_queue = defaultdict(list)
    for m in received:
        by_queue[_position(m)].append(m["offset"])
    for q, offsets in by_queue.items():
        assert _dense(offsets), (q, sorted(offsets))


def rocketmq_send(r: dict) -> None:
    assert [s["status"] for s in r["sync"]] == ["SEND_OK"] * 10, r["sync"]
    assert r["async_done"] is True and [a.get("status") for a in r["async"]] == ["SEND_OK"] * 10, r["async"]
    assert r["batch"]["status"] == "SEND_OK", r["batch"]
    got = r["received"]
    expected = ({f"sync-{i}" for i in range(10)} | {f"async-{i}" for i in range(10)}
                | {f"oneway-{i}" for i in range(5)} | {f"batch-{i}" for i in range(10)})
    bodies = [m["body"] for m in got]
    assert sorted(bodies) == sorted(expected), bodies
    tag_of = {"sync": "TagA", "async": "TagB", "oneway": "TagC", "batch": "TagD"}
    for m in got:
        kind = m["body"].split("-")[0]
        assert m["tags"] == tag_of[kind] and m["keys"] == m["body"], m
        if kind == "sync":
            assert m["props"] == {"color": "c" + m["body"].split("-")[1]}, m
    _per_queue_dense(got)
    by_id, cluster_ids = {m["msg_id"]: m for m in got}, _cluster_ids(got)
    for s in r["sync"]:
        m = by_id.get(s["msg_id"])
        assert m is not None, ("sync msgId not received", s)
        assert (_position(m, cluster_ids), m["offset"]) == (_position(s, cluster_ids), s["offset"]), (s, m)


def rocketmq_ordered(r: dict) -> None:
    sent, got = r["sent"], r["received"]
    assert all(s["status"] == "SEND_OK" for s in sent), sent
    queue_of = defaultdict(set)
    for s in sent:
        queue_of[s["body"].split("-")[1]].add(s["queue"])
    assert all(len(q) == 1 for q in queue_of.values()), queue_of
    assert len(got) == 40 and len({m["body"] for m in got}) == 40, got
    steps = defaultdict(list)
    for m in got:
        _, order, step = m["body"].split("-")
        steps[order].append(int(step))
    assert all(v == list(range(10)) for v in steps.values()), steps


def rocketmq_push_tags(r: dict) -> None:
    got = r["received"]
    expected = {f"tag-{i}-Tag{'ABC'[i % 3]}" for i in range(30) if i % 3 != 1}
    assert sorted(m["body"] for m in got) == sorted(expected), [m["body"] for m in got]
    for m in got:
        i = int(m["body"].split("-")[1])
        assert m["tags"] == "Tag" + "ABC"[i % 3] and m["keys"] == f"tag-{i}" and m["props"] == {"seq": str(i)}, m


def rocketmq_lite(r: dict) -> None:
    assert r["first"] == sorted(f"lite-{i}" for i in range(20)), r
    assert r["second"] == sorted(f"lite-{i}" for i in range(20, 25)), r


def rocketmq_transaction(r: dict) -> None:
    assert [(s["status"], s["local"]) for s in r["sent"]] == \
        [("SEND_OK", "COMMIT_MESSAGE" if i % 2 == 0 else "ROLLBACK_MESSAGE") for i in range(10)], r["sent"]
    assert r["received"] == sorted(f"commit-{i}" for i in range(0, 10, 2)), r["received"]


def rocketmq_reconsume(r: dict) -> None:
    """Each message comes first with reconsumeTimes 0, then once more with 1, topic/tag/keys/properties intact."""
    deliveries = defaultdict(list)
    for m in r["received"]:
        deliveries[m["body"]].append(m)
    assert sorted(deliveries) == ["rc-0", "rc-1", "rc-2"], r["received"]
    for body, ms in deliveries.items():
        assert [m["reconsume"] for m in ms][:2] == [0, 1], ms
        again = ms[1]
        assert (again["topic"], again["tags"], again["keys"], again["props"]) == \
            (ms[0]["topic"], "TagR", body, {"n": body[3:]}), ms


def rocketmq_sql_filter(r: dict) -> None:
    """`a BETWEEN 3 AND 6` over a = 0..9 delivers exactly 3..6 (property intact); `a > AND` fails start()
    with the broker's SUBSCRIPTION_PARSE_FAILED (23) answer to CHECK_CLIENT_CONFIG."""
    assert sorted(int(m["props"]["a"]) for m in r["received"]) == [3, 4, 5, 6], r["received"]
    assert all(m["body"] == f"sql-{m['props']['a']}" for m in r["received"]), r["received"]
    assert not r["bad_started"], r
    assert "CODE: 23" in "\n".join(r["bad_error"]), r["bad_error"]


def rocketmq_delay_level(r: dict, topic: str, level_seconds: float) -> None:
    """The undelayed message arrives; the delayed one arrives once, not before (about) its level's delay,
    stored on its real topic."""
    by_body = defaultdict(list)
    for m in r["received"]:
        by_body[m["body"]].append(m)
    assert sorted(by_body) == ["delayed", "now"] and len(by_body["delayed"]) == 1, r["received"]
    delayed = by_body["delayed"][0]
    assert delayed["topic"] == topic and delayed["msg_id"] == r["delayed_sent"]["msg_id"], (delayed, r["delayed_sent"])
    # loose: half the level's delay, so clock granularity and scheduling never matter
    assert delayed["at"] - r["sent_at"] >= level_seconds * 1000 / 2, (r["sent_at"], delayed)
    assert delayed["store"] - r["sent_at"] >= level_seconds * 1000 / 2, (r["sent_at"], delayed)


def rocketmq_tx_check(r: dict, check_max: int) -> None:
    """UNKNOW then a COMMIT check-back → visible (and no further checks need to succeed); always UNKNOW →
    checked `check_max` times, never visible."""
    assert [s["local"] for s in r["sent"]] == ["UNKNOW", "UNKNOW"], r["sent"]
    stored = {(_position(m), m["offset"]): m["body"] for m in r["received"]}  # two readers, each from the start
    assert sorted(stored.values()) == ["commit-late"], r["received"]
    assert r["checks"].get("commit-late", 0) >= 1, r["checks"]
    assert r["checks"].get("unknown") == check_max, r["checks"]


def rocketmq_dlq(r: dict, topic: str, max_reconsume: int) -> None:
    """Deliveries with reconsumeTimes 0..max, then the message sits in %DLQ%<group> with reconsumeTimes
    max + 1, its original msgId, body, keys and properties, and RETRY_TOPIC naming the original topic."""
    assert [m["reconsume"] for m in r["deliveries"]] == list(range(max_reconsume + 1)), r["deliveries"]
    assert all(m["body"] == "dlq-0" and m["msg_id"] == r["sent"]["msg_id"] for m in r["deliveries"]), r["deliveries"]
    assert len(r["dlq"]) == 1, r["dlq"]
    dead = r["dlq"][0]
    assert (dead["body"], dead["tags"], dead["keys"], dead["props"]) == ("dlq-0", "TagQ", "dlq-0", {"n": "0"}), dead
    assert dead["topic"].startswith("%DLQ%"), dead
    assert dead["reconsume"] == max_reconsume + 1, dead
    assert dead["msg_id"] == r["sent"]["msg_id"], (dead, r["sent"])
    assert dead["retry_topic"] == topic, dead
