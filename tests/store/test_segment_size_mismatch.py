"""A store keeps the CommitLog file size it was made with (config/store.json; older stores: what
their files show) and a start with another --commitlog-file-size is refused, exit 2 with one line
naming both sizes and the flag. It used to start, serve the store partly and write new records into
a file of the wrong size, which a restart with the right size then lost. Real processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from acked_records import produce_acked, read_topic
from gateway_process import ROOT, GatewayProcess, free_port
from store import segment_size


def start_with(data_dir: str, size: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway", "--data-dir", data_dir, "--host", "127.0.0.1",
                           "--kafka-port", str(free_port()), "--remoting-port", str(free_port()),
                           "--commitlog-file-size", size], cwd=ROOT, capture_output=True, text=True, timeout=60)


def assert_refused(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocketgate: error: "), r.stderr
    assert "1048576 bytes (1m)" in lines[0] and "--commitlog-file-size is 2097152 (2m)" in lines[0], lines[0]


@pytest.mark.parametrize("older_store", [False, True], ids=["recorded", "from-files"])
def test_other_file_size_is_refused_and_every_acknowledged_record_stays(tmp_path, older_store):
    g = GatewayProcess(str(tmp_path / "data"), flush="sync", extra_args=["--commitlog-file-size", "1m"])
    topic = f"seg{uuid.uuid4().hex[:8]}"
    try:
        g.start()
        acked = produce_acked(g.kafka_bootstrap, topic, 250, value_bytes=10_000)  # ~2.5 MB: 3 files
        g.stop()
        files = sorted(os.listdir(os.path.join(g.data_dir, "commitlog")))
        assert len([f for f in files if f.isdigit()]) >= 3, files
        record = os.path.join(g.data_dir, "config", segment_size.FILE)
        assert json.load(open(record)) == {"commitlog_file_size": 1 << 20}
        if older_store:  # made before the record existed: the files say 1m
            os.unlink(record)
        assert_refused(start_with(g.data_dir, "2m"))
        g.start()  # the size it was written with
        assert json.load(open(record)) == {"commitlog_file_size": 1 << 20}
        acked += produce_acked(g.kafka_bootstrap, topic, 20, b"after")
        g.restart()
        assert sorted(read_topic(g.kafka_bootstrap, topic)) == sorted(acked)
    finally:
        g.stop()


def test_files_that_fit_no_size(tmp_path):
    """One file (no second start to read the size from): it fits a size that divides its start and
    holds its length; a longer file does not."""
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / f"{1 << 20:020d}").write_bytes(b"x" * 5000)
    assert segment_size.from_files(str(d)) is None
    assert segment_size.fits(str(d), 1 << 20) and not segment_size.fits(str(d), 4096)
    assert not segment_size.fits(str(d), 3 << 20)  # 1 MiB is not a multiple of 3 MiB
