"""kill -9 in the middle of a table commit (the fault seam ROCKETGATE_TABLES_FAULTS, tables/faults.py):
after a restart the table holds every record of the log exactly once."""
from __future__ import annotations

import glob
import os
import time

import pytest
from confluent_kafka import Producer as KafkaProducer

from conftest import COMMIT_MS, create_table_topic, read_rows, wait_rows


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
    rows = wait_rows(gw, "clicks", 10)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    assert sorted(r["offset"] for r in read_rows(gw, "clicks")) == list(range(10))


def _metrics(gw) -> str:
    import urllib.request
    return urllib.request.urlopen(f"http://127.0.0.1:{gw.http_port}/metrics").read().decode()
