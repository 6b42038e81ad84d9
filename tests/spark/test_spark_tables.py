"""Spark over table topics (docs/tables.md): the Iceberg runtime reads the table the gateway writes,
each pipeline's table variant gives what its Kafka-connector variant gives, and tag_increments'
incremental reads equal the same aggregation over the Kafka connector, row by row.

One gateway (with its REST catalog) and one key_value table topic per module (every test only reads
it; tag_increments has its own topic). Against Apache Kafka the table is a Spark-written mirror
(table_helpers), which checks the tests themselves.
"""
from __future__ import annotations

import time

import pytest
from spark_helpers import consume_all, create_topic, produce
from table_helpers import GatewayTable, MirroredTable, kafka_end_offsets, next_offsets

from spark import source
from spark.pipelines import archive, common, replay, tag_increments, tag_metrics

pytestmark = pytest.mark.timeout(600)
TAGS = ("A", "B", None, "C")


def records(n: int, first: int = 0, repeats: bool = False) -> list[dict]:
    """Tagged (TAGS header) and untagged records over 2 partitions, numeric and text values, KEYS on
    some, rising timestamps two minutes apart per ten records (several tag_metrics windows);
    `repeats`: a header name twice on some (the gateway's map column keeps both, a Spark-written
    mirror cannot)."""
    base = (int(time.time() * 1000) - 60 * 60_000) // 60_000 * 60_000
    out = []
    for i in range(first, first + n):
        tag = TAGS[i % len(TAGS)]
        headers = ([("TAGS", tag.encode())] if tag else []) + ([("KEYS", f"k{i} o{i}".encode())] if i % 5 else [])
        headers.append(("bin", bytes([0, 255, i % 256])))
        if repeats and i % 3 == 0:
            headers.append(("bin", b"again"))
        out.append({"key": f"key-{i}".encode() if i % 2 else None,
                    "value": str(i).encode() if i % 7 else f"text-{i}".encode(),
                    "headers": headers, "partition": i % 2, "timestamp_ms": base + i * 12_000})
    return out


@pytest.fixture(scope="module")
def broker(tmp_path_factory, kafka_broker):
    """(bootstrap, catalog URI, RocketMQ address) of one broker for the module: a gateway with its
    HTTP port (the REST catalog), or Apache Kafka (no catalog: the tables are mirrors; no RocketMQ)."""
    if kafka_broker is not None:
        yield kafka_broker.bootstrap, None, None
        return
    from gateway_process import GatewayProcess, free_port, wait_port

    http = free_port()
    g = GatewayProcess(str(tmp_path_factory.mktemp("gw") / "data"), extra_args=["--http-port", str(http)])
    try:
        g.start()
        wait_port(http, proc=g.proc)
        yield g.kafka_bootstrap, f"http://127.0.0.1:{http}/iceberg", g.namesrv
    finally:
        g.stop()


def table_topic(spark, broker, tmp_path_factory, name: str, n: int):
    """A key_value table topic holding records(n), its table caught up with the log."""
    bootstrap, catalog, _ = broker
    if catalog is None:
        create_topic(bootstrap, name, partitions=2)
        table = MirroredTable(spark, bootstrap, name, str(tmp_path_factory.mktemp("warehouse")))
    else:
        create_topic(bootstrap, name, partitions=2,
                     configs={"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "300"})
        table = GatewayTable(spark, bootstrap, name, catalog)
    produce(bootstrap, name, records(n, repeats=catalog is not None))
    table.sync()
    return table


@pytest.fixture(scope="module")
def table(spark, broker, tmp_path_factory):
    return table_topic(spark, broker, tmp_path_factory, f"tt-{int(time.time())}", 120)


def rows_of(df, *order) -> list[tuple]:
    """Every row as plain Python values (bytes for binary), in a stable order."""
    def plain(v):
        if isinstance(v, (bytearray, memoryview)):
            return bytes(v)
        if isinstance(v, list):
            return [plain(x) for x in v]
        if hasattr(v, "asDict"):
            return {k: plain(x) for k, x in v.asDict().items()}
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    return [tuple(plain(v) for v in r) for r in df.orderBy(*order).collect()]


def test_table_reads_as_the_kafka_connector(spark, table):
    by_kafka = source.read(spark, table.bootstrap, table.topic)
    by_table = table.read()
    assert by_table.columns == by_kafka.columns
    want = rows_of(by_kafka, "partition", "offset")
    assert len(want) == 120
    assert rows_of(by_table, "partition", "offset") == want


def test_archive_table_variant(spark, table, tmp_path):
    outputs = {}
    for variant, extra in (("kafka", []), ("table", ["--catalog", table.catalog])):
        out = str(tmp_path / variant)
        archive.run(["--bootstrap", table.bootstrap, "--topic", table.topic, "--output", out,
                     "--checkpoint", str(tmp_path / f"ckpt-{variant}"), "--once", *extra])
        outputs[variant] = rows_of(spark.read.parquet(out), "partition", "offset")
    assert len(outputs["kafka"]) == 120
    assert outputs["table"] == outputs["kafka"]


def test_tag_metrics_table_variant(spark, table, tmp_path):
    got = {}
    for variant, extra in (("kafka", []), ("table", ["--catalog", table.catalog])):
        target = f"{table.topic}-metrics-{variant}"
        tag_metrics.run(["--bootstrap", table.bootstrap, "--topic", table.topic, "--target", target,
                         "--checkpoint", str(tmp_path / variant), "--window", "1 minute",
                         "--watermark", "1 minute", "--once", *extra])
        got[variant] = sorted((r.key, r.value, r.headers) for r in consume_all(table.bootstrap, target))
    assert len(got["kafka"]) > 10  # every closed (tag, minute) window
    assert got["table"] == got["kafka"]


def test_replay_table_variant(spark, table):
    times = [r["timestamp"] for r in source.read(spark, table.bootstrap, table.topic)
             .where("partition = 0").orderBy("offset").collect()]
    ranges = (["--from-offset", "7", "--to-offset", "40"],
              ["--from-time", times[10].isoformat(), "--to-time", str(int(times[30].timestamp() * 1000))])
    for i, rng in enumerate(ranges):
        got = {}
        for variant, extra in (("kafka", []), ("table", ["--catalog", table.catalog])):
            target = f"{table.topic}-replay{i}-{variant}"
            replay.run(["--bootstrap", table.bootstrap, "--topic", table.topic, "--target", target,
                        "--keep-partition", *rng, *extra])
            got[variant] = [(r.partition, r.key, r.value, r.headers) for r in consume_all(table.bootstrap, target)]
        assert len(got["kafka"]) == (66 if i == 0 else 40)
        assert got["table"] == got["kafka"]


def kafka_increment(spark, bootstrap: str, topic: str, start: dict[int, int], end: dict[int, int]) -> list:
    """tag_increments' aggregation over the Kafka connector for the offsets [start, end)."""
    df = source.read(spark, bootstrap, topic, starting={p: start.get(p, 0) for p in end}, ending=end)
    return rows_of(tag_increments.aggregate(df), "tag")


def native_messages(namesrv: str | None, topic: str) -> int:
    """Messages from the RocketMQ native client (tags A and N, keys, properties) on the gateway."""
    if namesrv is None:
        return 0
    from client import Message, Producer

    with Producer("tables-spark", namesrv) as p:
        for i in range(12):
            p.send(Message(topic, str(100 + i).encode(), tags="AN"[i % 2], keys=[f"n{i}"],
                           properties={"region": "eu"}))
    return 12


def test_tag_increments_equal_kafka_aggregation(spark, broker, tmp_path_factory, tmp_path, capsys):
    table = table_topic(spark, broker, tmp_path_factory, f"ti-{int(time.time())}", 50)
    out = str(tmp_path / "increments")
    args = ["--bootstrap", table.bootstrap, "--topic", table.topic, "--catalog", table.catalog, "--output", out]
    columns = ["tag", "count", "bytes", "sum", "first_offset", "last_offset", "first_timestamp", "last_timestamp"]

    tag_increments.run(args)  # the first run: the whole table as of its current snapshot
    first = table.snapshots()[-1]
    assert f"..{first['snapshot_id']}: 50 rows, 4 tags" in capsys.readouterr().out
    produce(table.bootstrap, table.topic, records(70, first=50))
    added = 70 + native_messages(broker[2], table.topic)
    table.sync()
    tag_increments.run(args)  # the second: only what the next snapshot(s) appended
    second = table.snapshots()[-1]
    assert f"snapshots {first['snapshot_id']}..{second['snapshot_id']}: {added} rows" in capsys.readouterr().out
    tag_increments.run(args)
    assert capsys.readouterr().out == f"no new snapshot after {second['snapshot_id']}\n"

    ends = kafka_end_offsets(spark, table.bootstrap, table.topic)
    assert next_offsets(second) == ends and sum(ends.values()) == 50 + added
    output = spark.read.parquet(out)
    for start, end in ((None, first), (first, second)):
        got = output.where(f"to_snapshot = {end['snapshot_id']}").select(*columns)
        want = kafka_increment(spark, table.bootstrap, table.topic, next_offsets(start) if start else {},
                               next_offsets(end))
        assert len(want) == (5 if end is second and broker[2] else 4)
        assert rows_of(got, "tag") == want


def test_table_names_escape_as_the_gateway():
    from tables.catalog import table_name

    from spark import tables
    for topic in ("orders.eu", "%RETRY%g", "a|b", "plain-_Z9", "café", "%DLQ%g.x"):
        assert tables.iceberg_name(topic) == table_name(topic)
    assert tables.table_name("orders.eu", "rg") == "`rg`.`rocketgate`.`orders~2eeu`"


def test_topic_without_table_is_one_line_error(spark, broker, capsys):
    bootstrap, catalog, _ = broker
    if catalog is None:
        pytest.skip("needs the gateway's catalog")
    plain = f"plain-{int(time.time())}"
    create_topic(bootstrap, plain, partitions=1)
    with pytest.raises(SystemExit) as exit_:
        common.main(replay.run, ["--bootstrap", bootstrap, "--topic", plain, "--target", "x", "--catalog", catalog])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (f"error: topic {plain!r} has no Iceberg table in {catalog} "
                                       "(is iceberg.mode set?)\n")
