"""key_value table topics through real gateways: Kafka and native RocketMQ producers write, pyiceberg's
RestCatalog and DuckDB's iceberg extension read the same rows; configs are validated; transactions."""
from __future__ import annotations

import time
import urllib.request

import pytest
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from client import Admin, Message, Producer, TransactionProducer, TransactionState
from conftest import COMMIT_MS, create_table_topic, duckdb_connection, read_rows, rest_catalog, wait_rows


def _produce_kafka(gw, topic: str, records, compression: str = "none") -> None:
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "compression.type": compression})
    for partition, key, value, headers in records:
        p.produce(topic, key=key, value=value, partition=partition, headers=headers)
    assert p.flush(20) == 0


def test_kafka_and_rocketmq_records_as_rows(table_gateway):
    gw = table_gateway()
    create_table_topic(gw, "orders.eu", partitions=2, iceberg_partition_spec="(hour(timestamp))")
    _produce_kafka(gw, "orders.eu", [
        (0, b"o-1", b"\x00\xffbinary", [("TAGS", b"paid"), ("trace", b"\x01\x02"), ("trace", b"again")]),
        (1, None, b"no key", []),
        (0, b"o-2", None, [("TAGS", b"refund")]),
    ])
    with Producer("tables-pg", gw.namesrv) as prod:
        prod.send(Message("orders.eu", b"native body", tags="paid", keys=["n-1", "n-2"],
                          properties={"region": "eu", "channel": "app"}))
    rows = wait_rows(gw, "orders~2eeu", 4)  # '.' is escaped as ~2e (docs/tables.md)
    assert len(rows) == 4
    kafka = sorted((r for r in rows if r["protocol"] == "kafka"), key=lambda r: (r["partition"], r["offset"]))
    assert [(r["partition"], r["offset"], r["key"], r["value"], r["tags"]) for r in kafka] == [
        (0, 0, b"o-1", b"\x00\xffbinary", "paid"), (0, 1, b"o-2", None, "refund"), (1, 0, None, b"no key", None)]
    assert kafka[0]["headers"] == [("TAGS", b"paid"), ("trace", b"\x01\x02"), ("trace", b"again")]
    assert kafka[0]["keys"] == ["o-1"]
    [native] = [r for r in rows if r["protocol"] == "rocketmq"]
    assert native["value"] == b"native body" and native["tags"] == "paid" and native["keys"] == ["n-1", "n-2"]
    assert dict(native["properties"]) == {"region": "eu", "channel": "app"}
    assert native["msg_id"]
    assert (native["partition"], native["offset"]) in {(0, 2), (1, 1)}

    # the same rows through DuckDB (its iceberg extension loaded from the PyPI package, no network)
    con = duckdb_connection(gw)
    got = con.execute('SELECT "partition", "offset", key, tags, protocol FROM rg.rocketgate."orders~2eeu" '
                      'ORDER BY protocol, "partition", "offset"').fetchall()
    assert [g[4] for g in got] == ["kafka"] * 3 + ["rocketmq"]
    assert got[:3] == [(0, 0, b"o-1", "paid", "kafka"), (0, 1, b"o-2", "refund", "kafka"), (1, 0, None, None, "kafka")]
    # the snapshot records the offsets it covers, per partition
    table = rest_catalog(gw).load_table(("rocketgate", "orders~2eeu"))
    summary = table.current_snapshot().summary.additional_properties
    assert "rocketgate.next-offsets" in summary and "rocketgate.covered-offsets" in summary
    assert [f.name for f in table.spec().fields] == ["timestamp_hour"]


def test_restart_resumes_without_duplicates(table_gateway):
    gw = table_gateway()
    create_table_topic(gw, "events", partitions=1)
    _produce_kafka(gw, "events", [(0, None, b"a%d" % i, []) for i in range(5)])
    wait_rows(gw, "events", 5)
    gw.restart()
    _produce_kafka(gw, "events", [(0, None, b"b%d" % i, []) for i in range(5)], compression="zstd")
    wait_rows(gw, "events", 10)
    time.sleep(int(COMMIT_MS) * 3 / 1000)  # a commit or two more: nothing may be added twice
    rows = read_rows(gw, "events")
    assert sorted(r["offset"] for r in rows) == list(range(10))
    assert sorted(r["value"] for r in rows) == sorted([b"a%d" % i for i in range(5)] + [b"b%d" % i for i in range(5)])
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{gw.http_port}/metrics").read().decode()
    assert 'rocketgate_table_rows_total{topic="events"} 5.0' in metrics  # since this start
    assert 'rocketgate_table_visible_lag_ms{topic="events"}' in metrics


@pytest.mark.parametrize("configs, why", [
    ({"iceberg.mode": "rows"}, "iceberg.mode"),
    ({"iceberg.mode": "key_value", "iceberg.partition.spec": "(hour(created_at))"}, "created_at"),
    ({"iceberg.mode": "key_value", "iceberg.partition.spec": "(day(partition))"}, "timestamp column only"),
    ({"iceberg.invalid.record.action": "retry"}, "iceberg.invalid.record.action"),
    ({"iceberg.commit.interval.ms": "0"}, "at least 1"),
])
def test_bad_table_configs_are_refused(table_gateway, configs, why):
    gw = table_gateway()
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    fut = admin.create_topics([NewTopic("t", 1, 1, config=configs)])["t"]
    with pytest.raises(Exception) as err:
        fut.result(20)
    assert why in str(err.value)
    admin.create_topics([NewTopic("ok", 1, 1)])["ok"].result(20)
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
    change = admin.incremental_alter_configs([ConfigResource("topic", "ok", incremental_configs=entries)])
    with pytest.raises(Exception) as err:
        next(iter(change.values())).result(20)
    assert why in str(err.value)
    with Admin(gw.namesrv) as rocketmq_admin, pytest.raises(Exception) as err:
        rocketmq_admin.create_topic("native", queues=1, attributes=configs)
    assert why in str(err.value)


def test_rocketmq_topic_made_a_table_topic_by_attributes(table_gateway):
    gw = table_gateway()
    with Admin(gw.namesrv) as admin:
        admin.create_topic("native", queues=1, attributes={"iceberg.mode": "key_value",
                                                            "iceberg.commit.interval.ms": COMMIT_MS})
    with Producer("tables-pg", gw.namesrv) as prod:
        for i in range(3):
            prod.send(Message("native", b"m%d" % i, tags="t%d" % i))
    rows = wait_rows(gw, "native", 3)
    assert sorted((r["offset"], r["value"], r["tags"]) for r in rows) == [(i, b"m%d" % i, "t%d" % i) for i in range(3)]


def test_only_committed_transactions_reach_the_table(table_gateway):
    gw = table_gateway()
    create_table_topic(gw, "ledger", partitions=1)
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "transactional.id": "tx-1"})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("ledger", value=b"aborted-1", partition=0)
    p.produce("ledger", value=b"aborted-2", partition=0)
    p.flush(20)
    p.abort_transaction(20)
    p.begin_transaction()
    p.produce("ledger", value=b"committed", partition=0)
    p.commit_transaction(20)
    with TransactionProducer("tables-tx", gw.namesrv, local_transaction=lambda m, a: TransactionState.ROLLBACK,
                             check_listener=lambda m: TransactionState.ROLLBACK) as tp:
        tp.send_in_transaction(Message("ledger", b"half rolled back"))
    with TransactionProducer("tables-tx2", gw.namesrv, local_transaction=lambda m, a: TransactionState.COMMIT,
                             check_listener=lambda m: TransactionState.COMMIT) as tp:
        tp.send_in_transaction(Message("ledger", b"half committed"))
    with Producer("tables-pg", gw.namesrv) as prod:  # a marker after both: once it is in, so is all before
        prod.send(Message("ledger", b"marker"))
    wait_rows(gw, "ledger", 3)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    values = sorted(r["value"] for r in read_rows(gw, "ledger"))
    assert values == [b"committed", b"half committed", b"marker"]


def test_deleting_the_topic_purges_its_table(table_gateway):
    gw = table_gateway()
    create_table_topic(gw, "gone", partitions=1)
    _produce_kafka(gw, "gone", [(0, None, b"old-%d" % i, []) for i in range(3)])
    wait_rows(gw, "gone", 3)
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    admin.delete_topics(["gone"])["gone"].result(20)
    deadline = time.monotonic() + 30
    while ("rocketgate", "gone") in rest_catalog(gw).list_tables("rocketgate") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ("rocketgate", "gone") not in rest_catalog(gw).list_tables("rocketgate")
    create_table_topic(gw, "gone", partitions=1)
    _produce_kafka(gw, "gone", [(0, None, b"new", [])])
    wait_rows(gw, "gone", 1)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    assert [(r["offset"], r["value"]) for r in read_rows(gw, "gone")] == [(0, b"new")]


def test_a_changed_partition_spec_evolves_the_table(table_gateway):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    gw = table_gateway()
    create_table_topic(gw, "evolving", partitions=2)
    _produce_kafka(gw, "evolving", [(p, None, b"before", []) for p in (0, 1)])
    wait_rows(gw, "evolving", 2)
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    entry = ConfigEntry("iceberg.partition.spec", "(partition, day(timestamp))",
                        incremental_operation=AlterConfigOpType.SET)
    next(iter(admin.incremental_alter_configs([ConfigResource("topic", "evolving",
                                                              incremental_configs=[entry])]).values())).result(20)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not rest_catalog(gw).load_table(("rocketgate", "evolving")).spec().fields:
        time.sleep(0.2)
    _produce_kafka(gw, "evolving", [(p, None, b"after", []) for p in (0, 1)])
    rows = wait_rows(gw, "evolving", 4)
    table = rest_catalog(gw).load_table(("rocketgate", "evolving"))
    assert [f.name for f in table.spec().fields] == ["partition", "timestamp_day"]
    assert sorted((r["partition"], r["offset"], r["value"]) for r in rows) == [
        (0, 0, b"before"), (0, 1, b"after"), (1, 0, b"before"), (1, 1, b"after")]
    files = table.inspect.files().to_pylist()
    assert len({f["spec_id"] for f in files}) == 2  # old files keep their spec, new ones have the new one


def test_switching_between_binary_and_struct_modes_is_refused(table_gateway):
    """key_value's value column is binary, the schema modes' a struct: Iceberg cannot evolve one into
    the other, so the switch is refused with INVALID_CONFIG (Kafka) / INVALID_PARAMETER (RocketMQ);
    the two schema modes switch freely, and any mode to and from disabled."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    gw = table_gateway()
    create_table_topic(gw, "switching", partitions=1)
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})

    def set_mode(mode: str):
        entry = ConfigEntry("iceberg.mode", mode, incremental_operation=AlterConfigOpType.SET)
        return next(iter(admin.incremental_alter_configs(
            [ConfigResource("topic", "switching", incremental_configs=[entry])]).values())).result(20)

    with pytest.raises(Exception) as err:
        set_mode("value_schema_latest")
    assert "INVALID_CONFIG" in str(err.value) and "cannot change from key_value to value_schema_latest" in str(err.value)
    with Admin(gw.namesrv) as rocketmq_admin:
        rocketmq_admin.create_topic("native", queues=1, attributes={"iceberg.mode": "value_schema_id_prefix"})
        rocketmq_admin.create_topic("native", queues=1, attributes={"iceberg.mode": "value_schema_latest"})
        with pytest.raises(Exception) as err:
            rocketmq_admin.create_topic("native", queues=1, attributes={"iceberg.mode": "key_value"})
        assert "cannot change from value_schema_latest to key_value" in str(err.value)
    set_mode("disabled")
    described = admin.describe_configs([ConfigResource("topic", "switching")])
    assert next(iter(described.values())).result(20)["iceberg.mode"].value == "disabled"
