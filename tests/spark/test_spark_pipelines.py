"""The three pipelines end to end against a broker; sink output read back with kafka-python.

`archive` resumes as the real command line from a checkpoint written in-process; the others run
in-process on the module's SparkSession, which is the same code path minus one JVM start.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
from spark_helpers import consume_all, create_native_topic, create_topic, produce, wait_until

from spark import source
from spark.pipelines import archive, common, replay, tag_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.timeout(600)


def pipeline(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"spark.pipelines.{name}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def tagged(i: int) -> list:
    tag = ("A", "B", None)[i % 3]
    return [("TAGS", tag.encode())] if tag else []


def test_archive_once_twice_continues_exactly(spark, bootstrap, topic_name, tmp_path, capsys):
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=2)
    out, ckpt = str(tmp_path / "archive"), str(tmp_path / "ckpt")
    args = ["--bootstrap", bootstrap, "--topic", topic, "--output", out, "--checkpoint", ckpt, "--once"]
    first = produce(bootstrap, topic, [{"value": f"a{i}".encode(), "headers": tagged(i), "partition": i % 2}
                                       for i in range(30)])
    archive.run(args)  # first run in-process (saves a JVM start), the second as the real command
    out1 = capsys.readouterr().out
    assert "batch 0: 30 rows" in out1 and "lag 0" in out1
    second = produce(bootstrap, topic, [{"value": f"b{i}".encode(), "headers": tagged(i), "partition": i % 2}
                                        for i in range(20)])
    run2 = pipeline("archive", *args)
    assert run2.returncode == 0, run2.stderr[-3000:]
    assert "batch 1: 20 rows" in run2.stdout

    rows = spark.read.parquet(out).select("partition", "offset", "value", "tag", "date").collect()
    assert len(rows) == 50
    expected = {(r["partition"], r["offset"]): r for r in first + second}
    assert {(r["partition"], r["offset"]) for r in rows} == set(expected)
    for r in rows:
        want = expected[(r["partition"], r["offset"])]
        assert bytes(r["value"]) == want["value"]
        assert r["tag"] == (want["headers"][0][1].decode() if want["headers"] else None)
    dates = {time.strftime("date=%Y-%m-%d", time.gmtime(r["timestamp_ms"] / 1000)) for r in first + second}
    assert {d for d in os.listdir(out) if d.startswith("date=")} == dates
    assert set().union(*(os.listdir(os.path.join(out, d)) for d in dates)) == {
        "tag=A", "tag=B", "tag=__HIVE_DEFAULT_PARTITION__"}


def test_tag_metrics_windows_written_through_kafka_sink(spark, bootstrap, namesrv, topic_name, tmp_path,
                                                       capsys):
    topic, target = topic_name("events"), topic_name("metrics")
    create_topic(bootstrap, topic, partitions=2)
    base = (int(time.time() * 1000) - 30 * 60_000) // 60_000 * 60_000
    events = [("A", "1", 1), ("A", "2", 2), ("A", "3", 3), ("B", "10", 5), ("B", "x", 6), (None, "5", 7),
              ("Z", "0", 10 * 60)]  # Z: ten minutes later, moves the watermark past the first window
    produce(bootstrap, topic, [{"value": v.encode(), "headers": [("TAGS", t.encode())] if t else [],
                                "timestamp_ms": base + s * 1000, "partition": i % 2}
                               for i, (t, v, s) in enumerate(events)])
    tag_metrics.run(["--bootstrap", bootstrap, "--topic", topic, "--target", target,
                     "--checkpoint", str(tmp_path / "ckpt"), "--window", "1 minute",
                     "--watermark", "1 minute", "--once"])
    out = capsys.readouterr().out
    assert "batch 0: 7 rows" in out
    assert f"tag_metrics: wrote 3 window(s) to {target}" in out, out

    records = consume_all(bootstrap, target)
    got = {r.key.decode(): (json.loads(r.value), r.headers) for r in records}
    start = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(base / 1000))
    end = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(base / 1000 + 60))
    assert got == {
        "A": ({"tag": "A", "window_start": start, "window_end": end, "count": 3, "bytes": 3, "sum": 6.0},
              [("TAGS", b"A")]),
        "B": ({"tag": "B", "window_start": start, "window_end": end, "count": 2, "bytes": 3, "sum": 10.0},
              [("TAGS", b"B")]),
        "": ({"tag": "", "window_start": start, "window_end": end, "count": 1, "bytes": 1, "sum": 5.0}, []),
    }
    if namesrv:  # the native RocketMQ client reads the sink's output, filtered by tag on the broker
        from client import ConsumeFrom, LitePullConsumer

        consumer = LitePullConsumer("metrics-reader", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        consumer.subscribe(target, "A")
        consumer.start()
        try:
            native = wait_until(lambda: consumer.poll(1.0), what="metrics for tag A via the native client")
        finally:
            consumer.shutdown()
        assert [(m.tags, json.loads(m.body)) for m in native] == [("A", got["A"][0])]


def test_tag_metrics_once_says_why_it_wrote_nothing(spark, bootstrap, topic_name, tmp_path, capsys):
    """Events all in the newest window: the watermark has not passed its end, nothing is written,
    and the run says so and how to get output; run again with nothing new, it says that."""
    topic, target = topic_name("events"), topic_name("metrics")
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [{"value": b"1", "headers": [("TAGS", b"A")]} for _ in range(3)])
    args = ["--bootstrap", bootstrap, "--topic", topic, "--target", target, "--checkpoint", str(tmp_path / "ckpt"),
            "--window", "1 hour", "--watermark", "1 minute", "--once"]
    tag_metrics.run(args)
    out = capsys.readouterr().out
    assert f"tag_metrics --once wrote nothing to {target} yet: 3 record(s) read, 1 window(s) still open" in out, out
    assert "run again with a smaller --watermark or --window, or run without --once" in out
    assert consume_all(bootstrap, target) == []


def spark_rows(spark, bootstrap: str, topic: str) -> list[tuple]:
    """(key, value, headers, timestamp) of every record, in offset order, as Spark reads them."""
    return [(None if r["key"] is None else bytes(r["key"]), bytes(r["value"]),
             [(h["key"], bytes(h["value"])) for h in r["headers"] or []], r["timestamp"])
            for r in source.read(spark, bootstrap, topic).orderBy("partition", "offset").collect()]


def test_replay_offset_and_time_range_keeps_headers(spark, bootstrap, topic_name, capsys):
    dlq = topic_name("DLQ-group")
    create_topic(bootstrap, dlq, partitions=1)
    base = int(time.time() * 1000) - 60_000
    produce(bootstrap, dlq, [
        {"key": f"k{i}".encode() if i % 2 else None, "value": f"failed-{i}".encode(),
         "headers": [("TAGS", b"T"), ("RETRY", str(i).encode()), ("RETRY", b"\x00\xff")],
         "timestamp_ms": base + i * 10} for i in range(20)])
    rows = spark_rows(spark, bootstrap, dlq)

    by_offset = topic_name("replayed")
    replay.run(["--bootstrap", bootstrap, "--topic", dlq, "--target", by_offset,
                "--from-offset", "5", "--to-offset", "15"])
    assert f"replayed 10 rows, offsets {dlq}/0:5..15" in capsys.readouterr().out
    got = [(r.key, r.value, r.headers) for r in consume_all(bootstrap, by_offset)]
    assert got == [r[:3] for r in rows[5:15]]

    by_time = topic_name("replayed")
    replay.run(["--bootstrap", bootstrap, "--topic", dlq, "--target", by_time,
                "--from-time", rows[12][3].isoformat(), "--to-time", str(base + 16 * 10)])
    got = [(r.key, r.value, r.headers) for r in consume_all(bootstrap, by_time)]
    assert got == [r[:3] for r in rows[12:16]]


def test_replay_from_native_dlq_topic(spark, bootstrap, namesrv, topic_name, capsys):
    if namesrv is None:
        pytest.skip("needs the gateway's RocketMQ side")
    from client import Message, Producer

    dlq = topic_name("%DLQ%group")
    create_native_topic(namesrv, dlq, queues=1)
    with Producer("dlq-writer", namesrv) as p:
        for i in range(10):
            p.send(Message(dlq, f"failed-{i}".encode(), tags="T", keys=[f"k{i}", "order"],
                           properties={"RETRY_TOPIC": "orders", "ORIGIN_OFFSET": str(i)}))
    rows = spark_rows(spark, bootstrap, dlq)
    assert [r[1] for r in rows] == [f"failed-{i}".encode() for i in range(10)]
    assert all({("TAGS", b"T"), ("RETRY_TOPIC", b"orders")} <= set(r[2]) for r in rows)
    target = topic_name("replayed")
    replay.run(["--bootstrap", bootstrap, "--topic", dlq, "--target", target, "--from-offset", "3"])
    assert f"replayed 7 rows, offsets {dlq}/0:3..10" in capsys.readouterr().out
    got = [(r.key, r.value, r.headers) for r in consume_all(bootstrap, target)]
    assert got == [r[:3] for r in rows[3:]]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_gateway_is_one_line_error():
    res = pipeline("replay", "--bootstrap", f"127.0.0.1:{closed_port()}", "--topic", "x", "--target", "y")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [res.stderr.strip()]
    assert res.stderr.startswith("error: gateway unreachable at 127.0.0.1:")


def test_missing_topic_is_one_line_error(spark, bootstrap, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        common.main(archive.run, ["--bootstrap", bootstrap, "--topic", "no-such-topic", "--output",
                                  str(tmp_path / "o"), "--checkpoint", str(tmp_path / "c"), "--once"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"error: topic 'no-such-topic' does not exist on {bootstrap}\n"
