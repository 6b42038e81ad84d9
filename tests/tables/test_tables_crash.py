"""kill -9 in the middle of a table commit (the fault seam ROCKETGATE_TABLES_FAULTS, tables/faults.py):
after a restart the table holds every record of the log exactly once."""
from __future__ import annotations

import glob
import os
import time

import pytest
from confluent_kafka import Producer as KafkaProducer

from conftest import COMMIT_MS, create_table_topic, read_rows, rest_catalog, wait_rows


def _produce(gw, values) -> None:
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 0})
    for v in values:
        p.produce("clicks", value=v, partition=0)
    assert p.flush(20) == 0


def _wait_death(gw, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gw.proc.poll() is not None:
            rc = gw.proc.returncode
            gw.proc = None
            return rc
        time.sleep(0.1)
    raise AssertionError("the fault seam did not kill the gateway:\n" + gw.log())


# data-file=2: the second data file (the second commit) is cut while written; metadata=3: the third
# metadata file (table creation writes the first, commit 1 the second) is written, the catalog never
# points at it.
@pytest.mark.parametrize("fault", ["data-file=2", "metadata=3"])
def test_kill9_mid_commit_loses_and_repeats_nothing(table_gateway, monkeypatch, fault):
    monkeypatch.setenv("ROCKETGATE_TABLES_FAULTS", fault)
    gw = table_gateway()
    create_table_topic(gw, "clicks", partitions=1)
    _produce(gw, [b"first-%d" % i for i in range(5)])
    wait_rows(gw, "clicks", 5)
    _produce(gw, [b"second-%d" % i for i in range(5)])  # its commit dies
    assert _wait_death(gw) == -9
    warehouse = os.path.join(gw.data_dir, "tables", "warehouse", "rocketgate", "clicks")
    if fault.startswith("data-file"):
        assert len(glob.glob(os.path.join(warehouse, "data", "*.parquet"))) == 2  # the torn one is left
    else:
        assert len(glob.glob(os.path.join(warehouse, "metadata", "*.metadata.json"))) == 3

    monkeypatch.delenv("ROCKETGATE_TABLES_FAULTS")
    gw.start()
    _produce(gw, [b"third-%d" % i for i in range(5)])
    wait_rows(gw, "clicks", 15)
    time.sleep(int(COMMIT_MS) * 3 / 1000)  # later commits add nothing twice
    rows = read_rows(gw, "clicks")
    assert sorted(r["offset"] for r in rows) == list(range(15))
    assert sorted(r["value"] for r in rows) == sorted([b"%s-%d" % (w, i) for w in (b"first", b"second", b"third")
                                                       for i in range(5)])


def test_failing_commits_never_stop_the_log_and_the_table_catches_up(table_gateway, monkeypatch, tmp_path):
    blocker = tmp_path / "catalog-down"
    blocker.write_text("")
    monkeypatch.setenv("ROCKETGATE_TABLES_FAULTS", f"fail={blocker}")
    gw = table_gateway()
    create_table_topic(gw, "clicks", partitions=1)
    _produce(gw, [b"while-down-%d" % i for i in range(5)])  # produce is acknowledged meanwhile
    deadline = time.monotonic() + 30
    while 'rocketgate_table_commit_errors_total{topic="clicks"} 0.0' in _metrics(gw) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 'rocketgate_table_commit_errors_total{topic="clicks"} 0.0' not in _metrics(gw)
    assert read_rows(gw, "clicks") == []
    _produce(gw, [b"still-down-%d" % i for i in range(5)])
    blocker.unlink()
    wait_rows(gw, "clicks", 10)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    assert sorted(r["offset"] for r in read_rows(gw, "clicks")) == list(range(10))


def _metrics(gw) -> str:
    import urllib.request
    return urllib.request.urlopen(f"http://127.0.0.1:{gw.http_port}/metrics").read().decode()


def _two_commits(gw) -> None:
    """Table topic `clicks` (1 partition) whose table holds 10 rows, from two commits."""
    create_table_topic(gw, "clicks", partitions=1)
    _produce(gw, [b"first-%d" % i for i in range(5)])
    wait_rows(gw, "clicks", 5)
    _produce(gw, [b"second-%d" % i for i in range(5)])
    wait_rows(gw, "clicks", 10)


def _restart_and_check_third_commit(gw) -> None:
    """Start `gw` again, produce 5 more: the table then holds offsets 0..14, each once."""
    gw.start()
    _produce(gw, [b"third-%d" % i for i in range(5)])
    wait_rows(gw, "clicks", 15)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    rows = read_rows(gw, "clicks")
    assert sorted(r["offset"] for r in rows) == list(range(15))


@pytest.mark.parametrize("damage, which", [("truncate", -1), ("overwrite-footer", 0)])
def test_a_damaged_data_file_is_replaced_from_the_log(table_gateway, damage, which):
    gw = table_gateway()
    _two_commits(gw)
    gw.stop()
    files = sorted(glob.glob(os.path.join(gw.data_dir, "tables", "warehouse", "rocketgate", "clicks", "data",
                                          "*.parquet")), key=os.path.getmtime)
    victim = files[which]  # the first commit's or the second's
    size = os.path.getsize(victim)
    with open(victim, "r+b") as f:
        if damage == "truncate":
            f.truncate(size // 2)
        else:
            f.seek(size - 8)
            f.write(b"\x00" * 8)
    _restart_and_check_third_commit(gw)
    assert "is damaged" in gw.log()
    assert 'rocketgate_table_repaired_files_total{topic="clicks"} 1.0' in _metrics(gw)


def test_delete_records_keeps_table_rows_and_counts_what_left_unconverted(table_gateway, monkeypatch, tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    blocker = tmp_path / "catalog-down"
    monkeypatch.setenv("ROCKETGATE_TABLES_FAULTS", f"fail={blocker}")
    gw = table_gateway()
    create_table_topic(gw, "clicks", partitions=1)
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    _produce(gw, [b"kept-%d" % i for i in range(5)])
    wait_rows(gw, "clicks", 5)
    list(admin.delete_records([TopicPartition("clicks", 0, 5)]).values())[0].result(20)  # the log forgets them
    blocker.write_text("")
    _produce(gw, [b"late-%d" % i for i in range(5)])  # offsets 5..9, not converted while commits fail
    list(admin.delete_records([TopicPartition("clicks", 0, 8)]).values())[0].result(20)  # 5..7 leave unconverted
    blocker.unlink()
    wait_rows(gw, "clicks", 7)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    assert sorted(r["offset"] for r in read_rows(gw, "clicks")) == [0, 1, 2, 3, 4, 8, 9]
    assert 'rocketgate_table_lost_offsets_total{topic="clicks"} 3.0' in _metrics(gw)


def test_a_catalog_that_cannot_be_opened_never_stops_the_gateway(table_gateway, tmp_path):
    os.makedirs(tmp_path / "data" / "tables")
    (tmp_path / "data" / "tables" / "catalog.db").write_bytes(b"not a database" * 100)
    gw = table_gateway()
    create_table_topic(gw, "clicks", partitions=1)
    _produce(gw, [b"x"])  # acknowledged: the log works without tables
    deadline = time.monotonic() + 20
    while "cannot be opened" not in gw.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "cannot be opened" in gw.log()
    assert gw.proc.poll() is None


@pytest.mark.parametrize("damage", ["torn", "missing"])
def test_a_torn_or_missing_metadata_file_is_repaired_at_start(table_gateway, damage):
    """As a power loss can leave it (pyiceberg does not fsync; the gateway now does): the catalog
    points at a metadata file that is cut short or gone. At the next start the table goes back to
    the newest older metadata file and converts the rest again from the log."""
    gw = table_gateway()
    _two_commits(gw)
    current = rest_catalog(gw).load_table(("rocketgate", "clicks")).metadata_location.removeprefix("file://")
    gw.stop()
    if damage == "torn":
        with open(current, "r+b") as f:
            f.truncate(os.path.getsize(current) // 2)
    else:
        os.remove(current)
    _restart_and_check_third_commit(gw)
    assert "is torn or missing" in gw.log()
